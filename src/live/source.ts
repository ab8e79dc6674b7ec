/**
 * What the head follower needs from a chain's node: the head's header, the
 * headers of given heights (to find a fork point), and verified rows of new
 * blocks, one block at a time. The EVM implementation reuses the ingester's
 * extract → verify → transform over the JSON-RPC client with retries.
 */
import { DEX_DATASETS, dexPositions } from '../datasets/dex.ts'
import { EVM_DATASETS } from '../datasets/evm.ts'
import { decodeUnit, rpcPoolResolver, scanStep } from '../ingest/dex.ts'
import { lakePositions, PositionTracker, withRecentRows, type PositionLoader } from '../ingest/positions.ts'
import type { RpcBlock } from '../ingest/evm-json.ts'
import { evmExtractor } from '../ingest/extract.ts'
import { createRpcClient, type RpcClient, type RpcOptions } from '../ingest/rpc.ts'
import { transformBlocks } from '../ingest/transform.ts'
import { verifyBlock } from '../ingest/verify.ts'
import type { DatasetDecl, Family } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import type { FollowedChain } from './config.ts'
import { blockRows, type BlockHeader, type UnfinalizedWindow } from './window.ts'
import type { ColumnBatch } from '../columns/batch.ts'

/** A new block as fetched: header and verified rows per storage name. */
export interface FetchedBlock {
  header: BlockHeader
  batches: Record<string, ColumnBatch>
}

export interface LiveSource {
  readonly datasets: readonly DatasetDecl[]
  /**
   * Blocks are final once the node serves them (BFT chains: Move-VM): a node that
   * goes back below a delivered block or names another hash for it is in error,
   * and the follower throws instead of looking for a fork.
   */
  readonly final?: boolean
  /** The node's head. */
  latest(): Promise<BlockHeader>
  /** Headers at the given heights, null where the node has none. */
  headers(numbers: readonly number[]): Promise<(BlockHeader | null)[]>
  /**
   * Blocks `from`..`to` with their rows, in order; throws when the node lacks one. `window`
   * holds the canonical blocks below `from` (the follower asks after any rollback): rows that
   * depend on earlier blocks (DEX position state) read them.
   */
  blocks(from: number, to: number, window?: UnfinalizedWindow): Promise<FetchedBlock[]>
}

const hex = (n: number) => '0x' + n.toString(16)

type RpcHeader = Pick<RpcBlock, 'number' | 'hash' | 'parentHash'>

const headerOf = (b: RpcHeader): BlockHeader => ({
  number: Number(BigInt(b.number)),
  hash: b.hash.toLowerCase(),
  parentHash: b.parentHash.toLowerCase(),
})

/**
 * A LiveSource over an EVM JSON-RPC node. With `dex` (the chain, and the store caching pool
 * answers), each block's DEX rows too. Position state is not kept between calls (a reorg would
 * have to unwind it): each call rebuilds what its blocks touch from `dex.positions` (the
 * lake's published rows, src/ingest/positions.ts) below the window, then the window's own
 * dex/positions rows below `from`, then carries it from block to block of the call. So live
 * rows (and what compaction writes) get owner and fees as ingest would give them, as long as
 * the lake reaches the window; where it does not (the window anchored above the stored end),
 * they are null, as for a position first seen there.
 */
export function evmLiveSource(
  rpc: RpcClient,
  dex?: { chain: { family: 'evm'; id: number }; store: ObjectStore | null; positions?: PositionLoader },
): LiveSource {
  const extractor = evmExtractor(rpc)
  const resolver = dex && rpcPoolResolver(rpc, dex.store, dex.chain)
  return {
    datasets: dex ? [...EVM_DATASETS, ...DEX_DATASETS] : EVM_DATASETS,
    async latest() {
      const b = await rpc.request<RpcHeader | null>('eth_getBlockByNumber', ['latest', false])
      if (!b) throw new Error('the node has no latest block')
      return headerOf(b)
    },
    async headers(numbers) {
      if (numbers.length === 0) return []
      const got = await rpc.batch<RpcHeader | null>(numbers.map(n => ({ method: 'eth_getBlockByNumber', params: [hex(n), false] })))
      return got.map(b => (b ? headerOf(b) : null))
    },
    async blocks(from, to, window) {
      // The window's blocks below `from`, taken now: compaction may move them to the lake meanwhile.
      const low = window?.low ?? from
      const held = window?.range(low, from - 1) ?? []
      const recent = () => Promise.all(held.map(async b => (await blockRows(b, [dexPositions]))[dexPositions.storage]))
      const positions = new PositionTracker(withRecentRows(dex?.positions ?? null, low, recent))
      const raws = await extractor.extract(from, to)
      const out: FetchedBlock[] = []
      for (const raw of raws) {
        verifyBlock(raw)
        const t = transformBlocks([raw])
        const n = Number(BigInt(raw.block.number))
        const decoded =
          dex && resolver
            ? (await positions.unit([n, n], stateOf => decodeUnit(scanStep(dex.chain.id, [raw]), resolver, stateOf))).batches
            : {}
        out.push({ header: headerOf(raw.block), batches: { blocks: t.blocks, transactions: t.transactions, logs: t.logs, ...decoded } })
      }
      return out
    },
  }
}

/** How a node is reached: retries and timeouts of its client. */
export interface SourceClientOptions {
  retries: number
  timeoutMs: number
  rpc?: RpcOptions
}

/** Makes the source of a LIVE_CHAINS entry of one family. */
export type SourceFactory = (
  f: Pick<FollowedChain, 'chain' | 'rpc' | 'rest'>,
  store: ObjectStore,
  client: SourceClientOptions,
) => LiveSource

/**
 * A source whose code is loaded at its first use (`load` is a dynamic import): a bundle
 * evaluates it only in an isolate that follows such a chain. A failed load is retried at the
 * next call.
 */
export function lazySource(datasets: readonly DatasetDecl[], final: boolean, load: () => Promise<LiveSource>): LiveSource {
  let loading: Promise<LiveSource> | undefined
  const source = () =>
    (loading ??= load().catch(err => {
      loading = undefined
      throw err
    }))
  return {
    datasets,
    final,
    latest: async () => (await source()).latest(),
    headers: async numbers => (await source()).headers(numbers),
    blocks: async (from, to, window) => (await source()).blocks(from, to, window),
  }
}

/** EVM chains are followed through JSON-RPC. */
export const evmFollowed: SourceFactory = (f, store, client) => {
  if (!f.rpc) throw new Error(`chain ${f.chain.code}: an EVM chain is followed through a JSON-RPC URL`)
  return evmLiveSource(createRpcClient(f.rpc, { retries: client.retries, timeoutMs: client.timeoutMs, ...client.rpc }), {
    chain: { family: 'evm', id: f.chain.id },
    store,
    positions: lakePositions(store, f.chain),
  })
}

/**
 * The source of a LIVE_CHAINS entry, by family. Each runtime passes the families it can
 * follow (both follow EVM and Move-VM chains today).
 */
export function followedSource(
  f: Pick<FollowedChain, 'chain' | 'rpc' | 'rest'>,
  store: ObjectStore,
  client: SourceClientOptions,
  factories: Partial<Record<Family, SourceFactory>>,
): LiveSource {
  const make = factories[f.chain.family]
  if (!make)
    throw new Error(
      `chain ${f.chain.code}: ${f.chain.family} chains are not followed live here (the Node server, npm run serve, follows them)`,
    )
  return make(f, store, client)
}

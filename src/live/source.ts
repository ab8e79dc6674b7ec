/**
 * What the head follower needs from a chain's node: the head's header, the
 * headers of given heights (to find a fork point), and verified rows of new
 * blocks, one block at a time. The EVM implementation reuses the ingester's
 * extract → verify → transform over the JSON-RPC client with retries.
 */
import { EVM_DATASETS } from '../datasets/evm.ts'
import type { RpcBlock } from '../ingest/evm-json.ts'
import { evmExtractor } from '../ingest/extract.ts'
import { createRpcClient, type RpcClient, type RpcOptions } from '../ingest/rpc.ts'
import { transformBlocks } from '../ingest/transform.ts'
import { verifyBlock } from '../ingest/verify.ts'
import type { ColumnBatch } from '../lake/write.ts'
import { fullnodeClient } from '../move/rest.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import type { FollowedChain } from './config.ts'
import { moveLiveSource } from './move-source.ts'
import type { BlockHeader } from './window.ts'

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
  /** Blocks `from`..`to` with their rows, in order; throws when the node lacks one. */
  blocks(from: number, to: number): Promise<FetchedBlock[]>
}

const hex = (n: number) => '0x' + n.toString(16)

type RpcHeader = Pick<RpcBlock, 'number' | 'hash' | 'parentHash'>

const headerOf = (b: RpcHeader): BlockHeader => ({ number: Number(BigInt(b.number)), hash: b.hash.toLowerCase(), parentHash: b.parentHash.toLowerCase() })

/** A LiveSource over an EVM JSON-RPC node. */
export function evmLiveSource(rpc: RpcClient): LiveSource {
  const extractor = evmExtractor(rpc)
  return {
    datasets: EVM_DATASETS,
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
    async blocks(from, to) {
      const raws = await extractor.extract(from, to)
      return raws.map(raw => {
        verifyBlock(raw)
        const t = transformBlocks([raw])
        return { header: headerOf(raw.block), batches: { blocks: t.blocks, transactions: t.transactions, logs: t.logs } }
      })
    },
  }
}

/**
 * The source of a LIVE_CHAINS entry, by family: JSON-RPC for EVM chains, the
 * fullnode REST API for Move-VM chains (its ABI cache lives in `store`).
 */
export function followedSource(f: Pick<FollowedChain, 'chain' | 'rpc' | 'rest'>, store: ObjectStore, client: { retries: number; timeoutMs: number; rpc?: RpcOptions }): LiveSource {
  if (f.chain.family === 'move') {
    if (!f.rest) throw new Error(`chain ${f.chain.code}: a Move-VM chain is followed through a fullnode REST URL`)
    return moveLiveSource(fullnodeClient({ url: f.rest, retries: client.retries, timeoutMs: client.timeoutMs }), { chain: f.chain, store })
  }
  if (!f.rpc) throw new Error(`chain ${f.chain.code}: an EVM chain is followed through a JSON-RPC URL`)
  return evmLiveSource(createRpcClient(f.rpc, { retries: client.retries, timeoutMs: client.timeoutMs, ...client.rpc }))
}

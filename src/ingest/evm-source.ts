/**
 * The EVM chain source: extract → verify → transform over a JSON-RPC node, in steps of a
 * few blocks; the DEX datasets are decoded from the same verified blocks (dex.ts).
 */
import { DEX_DATASETS, dexTokens } from '../datasets/dex.ts'
import { blocks, EVM_DATASETS, logs, transactions } from '../datasets/evm.ts'
import type { ObjectStore } from '../store/types.ts'
import { decodeUnit, mergeScans, rpcPoolResolver, rpcTokenResolver, scanStep } from './dex.ts'
import { PositionTracker, type UnitPositions } from './positions.ts'
import type { BlockRange } from '../manifest/types.ts'
import { evmExtractor } from './extract.ts'
import { semaphore, type RpcClient } from './rpc.ts'
import type { ChainSource } from './source.ts'
import { transformBlocks } from './transform.ts'
import { verifyBlock } from './verify.ts'
import type { Keccak256 } from './keccak.ts'
import { joinBatches, packBatch, type ColumnBatch, type PackedBatch } from '../columns/batch.ts'
import { storedFields } from '../parquet/write.ts'
import type { DatasetDecl } from '../schema/dataset.ts'

export interface EvmSourceOptions {
  /** Blocks extracted, verified and transformed together (default 25): bounds the JSON held in memory. */
  stepBlocks?: number
  /** Steps in flight at once (default 4); the RPC client bounds HTTP requests on its own. */
  concurrency?: number
  /** The hash verification uses (default: JavaScript keccak; the Node ingester passes the WebAssembly one). */
  keccak?: Keccak256
  /** The chain (its id selects the DEX registry's factories; default: the node's eth_chainId). */
  chain?: { family: 'evm'; id: number }
  /** Where resolved pools and tokens are cached (default: in memory only). */
  store?: ObjectStore
  /**
   * The DEX position state across units (positions.ts): a tracker over the published
   * dex/positions rows, or a worker thread's link to its pool's tracker. Default: carried from
   * unit to unit of this source only, so positions it sees first have unknown owner and fees.
   */
  positions?: UnitPositions
  /** Decode the DEX datasets (default true); false leaves them out of `datasets` and skips their work. */
  dex?: boolean
}

/** A ChainSource reading blocks, transactions and logs from one JSON-RPC node. */
export function evmSource(rpc: RpcClient, options: EvmSourceOptions = {}): ChainSource {
  const step = Math.max(1, options.stepBlocks ?? 25)
  const withDex = options.dex ?? true
  const limit = semaphore(Math.max(1, options.concurrency ?? 4))
  const extractor = evmExtractor(rpc)
  let chain: Promise<{ family: 'evm'; id: number }> | undefined
  const chainOf = () =>
    (chain ??= options.chain
      ? Promise.resolve(options.chain)
      : rpc.request<string>('eth_chainId').then(id => ({ family: 'evm' as const, id: Number(BigInt(id)) })))
  let resolver: ReturnType<typeof rpcPoolResolver> | undefined
  let tokens: ReturnType<typeof rpcTokenResolver> | undefined
  const positions = options.positions ?? new PositionTracker(null)

  async function fetchStep(from: number, to: number) {
    const { id } = await chainOf()
    const raws = await extractor.extract(from, to)
    for (const raw of raws) verifyBlock(raw, options.keccak)
    const rows = transformBlocks(raws)
    // packed now, while the step's values are young: a unit holds its rows to its end
    return {
      blocks: packed(blocks, rows.blocks),
      transactions: packed(transactions, rows.transactions),
      logs: packed(logs, rows.logs),
      dex: withDex ? scanStep(id, raws) : undefined,
    }
  }

  return {
    datasets: withDex ? [...EVM_DATASETS, ...DEX_DATASETS, dexTokens] : [...EVM_DATASETS],
    async head() {
      return Number(BigInt(await rpc.request<string>('eth_blockNumber')))
    },
    async fetch([from, to]: BlockRange): Promise<Record<string, PackedBatch>> {
      const steps: BlockRange[] = []
      for (let a = from; a <= to; a += step) steps.push([a, Math.min(to, a + step - 1)])
      const fetchSteps = () => Promise.all(steps.map(([a, b]) => limit(() => fetchStep(a, b))))
      if (!withDex) return evmBatches(await fetchSteps())
      const { batches } = await positions.unit([from, to], async stateOf => {
        const parts = await fetchSteps()
        const c = await chainOf()
        resolver ??= rpcPoolResolver(rpc, options.store ?? null, c)
        tokens ??= rpcTokenResolver(rpc, options.store ?? null, c)
        const scan = mergeScans(
          c.id,
          parts.map(p => p.dex!),
        )
        const dex = await decodeUnit(scan, resolver, stateOf, tokens)
        const dexBatches = Object.entries(dex.batches).map(([storage, b]) => [storage, packed(datasetOf(storage), b)])
        return { positionChanges: dex.positionChanges, batches: { ...evmBatches(parts), ...Object.fromEntries(dexBatches) } }
      })
      return batches
    },
  }
}

/** The EVM datasets of a unit's steps, in block order. */
function evmBatches(parts: { blocks: PackedBatch; transactions: PackedBatch; logs: PackedBatch }[]): Record<string, PackedBatch> {
  return {
    blocks: joinBatches(parts.map(p => p.blocks)),
    transactions: joinBatches(parts.map(p => p.transactions)),
    logs: joinBatches(parts.map(p => p.logs)),
  }
}

const packed = (dataset: DatasetDecl, batch: ColumnBatch): PackedBatch => packBatch(storedFields(dataset), batch)

function datasetOf(storage: string): DatasetDecl {
  const d = [...DEX_DATASETS, dexTokens].find(d => d.storage === storage)
  if (!d) throw new Error(`the DEX decoder gave rows of ${storage}, which no DEX dataset stores`)
  return d
}

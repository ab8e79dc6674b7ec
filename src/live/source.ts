/**
 * What the head follower needs from a chain's node: the head's header, the
 * headers of given heights (to find a fork point), and verified rows of new
 * blocks, one block at a time. The EVM implementation reuses the ingester's
 * extract → verify → transform over the JSON-RPC client with retries.
 */
import { EVM_DATASETS } from '../datasets/evm.ts'
import type { RpcBlock } from '../ingest/evm-json.ts'
import { evmExtractor } from '../ingest/extract.ts'
import type { RpcClient } from '../ingest/rpc.ts'
import { transformBlocks } from '../ingest/transform.ts'
import { verifyBlock } from '../ingest/verify.ts'
import type { ColumnBatch } from '../lake/write.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { BlockHeader } from './window.ts'

/** A new block as fetched: header and verified rows per storage name. */
export interface FetchedBlock {
  header: BlockHeader
  batches: Record<string, ColumnBatch>
}

export interface LiveSource {
  readonly datasets: readonly DatasetDecl[]
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

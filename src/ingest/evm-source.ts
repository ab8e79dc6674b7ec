/** The EVM chain source: extract → verify → transform over a JSON-RPC node, in steps of a few blocks. */
import { EVM_DATASETS } from '../datasets/evm.ts'
import type { BlockRange } from '../manifest/types.ts'
import { concatBatches } from './batch.ts'
import { evmExtractor } from './extract.ts'
import { semaphore, type RpcClient } from './rpc.ts'
import type { ChainSource } from './source.ts'
import { transformBlocks, type EvmBatches } from './transform.ts'
import { verifyBlock } from './verify.ts'
import type { Keccak256 } from './keccak.ts'
import type { ColumnBatch } from '../columns/batch.ts'

export interface EvmSourceOptions {
  /** Blocks extracted, verified and transformed together (default 25): bounds the JSON held in memory. */
  stepBlocks?: number
  /** Steps in flight at once (default 4); the RPC client bounds HTTP requests on its own. */
  concurrency?: number
  /** The hash verification uses (default: JavaScript keccak; the Node ingester passes the WebAssembly one). */
  keccak?: Keccak256
}

/** A ChainSource reading blocks, transactions and logs from one JSON-RPC node. */
export function evmSource(rpc: RpcClient, options: EvmSourceOptions = {}): ChainSource {
  const step = Math.max(1, options.stepBlocks ?? 25)
  const limit = semaphore(Math.max(1, options.concurrency ?? 4))
  const extractor = evmExtractor(rpc)

  async function fetchStep(from: number, to: number): Promise<EvmBatches> {
    const raws = await extractor.extract(from, to)
    for (const raw of raws) verifyBlock(raw, options.keccak)
    return transformBlocks(raws)
  }

  return {
    datasets: EVM_DATASETS,
    async head() {
      return Number(BigInt(await rpc.request<string>('eth_blockNumber')))
    },
    async fetch([from, to]: BlockRange): Promise<Record<string, ColumnBatch>> {
      const steps: BlockRange[] = []
      for (let a = from; a <= to; a += step) steps.push([a, Math.min(to, a + step - 1)])
      const parts = await Promise.all(steps.map(([a, b]) => limit(() => fetchStep(a, b))))
      return {
        blocks: concatBatches(parts.map(p => p.blocks)),
        transactions: concatBatches(parts.map(p => p.transactions)),
        logs: concatBatches(parts.map(p => p.logs)),
      }
    },
  }
}

/**
 * Extract: the JSON-RPC calls for a block range, nothing more. Full blocks through
 * eth_getBlockByNumber(n, true) and receipts through eth_getBlockReceipts(n), asked in the
 * same batches (one round trip for both), or one eth_getTransactionReceipt per transaction
 * once the blocks are in, on nodes without it. Logs come from the receipts. Checking and
 * column filling happen in verify.ts and transform.ts.
 */
import type { RawBlock, RpcBlock, RpcReceipt } from './evm-json.ts'
import type { RpcClient, Settled } from './rpc.ts'

/** The node has no block (or no receipts) for a block inside the requested range. */
export class MissingBlockError extends Error {
  readonly block: number
  constructor(block: number, detail: string) {
    super(`block ${block}: ${detail}`)
    this.name = 'MissingBlockError'
    this.block = block
  }
}

export type ReceiptsMethod = 'eth_getBlockReceipts' | 'eth_getTransactionReceipt'

export interface EvmExtractor {
  /** Blocks `from`..`to` (inclusive) with their receipts, in block order. */
  extract(from: number, to: number): Promise<RawBlock[]>
  /** How receipts are fetched now; switches to per transaction when the node lacks eth_getBlockReceipts. */
  readonly receiptsMethod: ReceiptsMethod
}

const hex = (n: number) => '0x' + n.toString(16)

/** An extractor bound to one node. */
export function evmExtractor(rpc: RpcClient, receiptsMethod: ReceiptsMethod = 'eth_getBlockReceipts'): EvmExtractor {
  let method = receiptsMethod

  async function receiptsPerTransaction(block: RpcBlock, n: number): Promise<RpcReceipt[]> {
    const receipts = await rpc.batch<RpcReceipt | null>(
      block.transactions.map(tx => ({ method: 'eth_getTransactionReceipt', params: [tx.hash] })),
    )
    return receipts.map((r, i) => {
      if (!r) throw new MissingBlockError(n, `the node has no receipt for transaction ${block.transactions[i].hash}`)
      return r
    })
  }

  async function extract(from: number, to: number): Promise<RawBlock[]> {
    const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
    // Each block's receipts ride in the same batch as the block: one round trip, not two.
    const withReceipts = method === 'eth_getBlockReceipts'
    const settled = await rpc.batchSettled<unknown>([
      ...numbers.map(n => ({ method: 'eth_getBlockByNumber', params: [hex(n), true] })),
      ...(withReceipts ? numbers.map(n => ({ method: 'eth_getBlockReceipts', params: [hex(n)] })) : []),
    ])
    const full = numbers.map((n, i): RpcBlock => {
      const s = settled[i]
      if (!s.ok) throw s.error
      const b = s.result as RpcBlock | null
      if (!b) throw new MissingBlockError(n, 'the node returned null for eth_getBlockByNumber: it does not have this block')
      if (Number(BigInt(b.number)) !== n) throw new MissingBlockError(n, `the node answered with block ${Number(BigInt(b.number))}`)
      return b
    })
    const receipts: RpcReceipt[][] = full.map(() => [])
    // A block without transactions needs no receipts, whatever the node said about them.
    const withTxs = full.map((_, i) => i).filter(i => full[i].transactions.length > 0)
    let perTx = withTxs
    if (withReceipts) {
      perTx = []
      for (const i of withTxs) {
        const s = settled[numbers.length + i] as Settled<RpcReceipt[] | null>
        if (s.ok && Array.isArray(s.result)) receipts[i] = s.result
        else if (s.ok) perTx.push(i)
        else if (s.error.kind === 'unsupported') {
          method = 'eth_getTransactionReceipt'
          perTx.push(i)
        } else throw s.error
      }
    }
    await Promise.all(perTx.map(async i => (receipts[i] = await receiptsPerTransaction(full[i], numbers[i]))))
    return full.map((block, i) => ({ block, receipts: receipts[i] }))
  }

  return {
    extract,
    get receiptsMethod() {
      return method
    },
  }
}

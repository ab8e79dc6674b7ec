import { afterEach, describe, expect, it } from 'vitest'
import { evmExtractor, MissingBlockError } from '../../src/ingest/extract.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { recordedBlock, recordedReceipts, startFakeNode, type FakeNode } from './fixtures.ts'

const FAST = { retries: 2, backoffMs: 1, maxBackoffMs: 5 }
let node: FakeNode | undefined
afterEach(async () => {
  await node?.close()
  node = undefined
})

describe('evmExtractor', () => {
  it('fetches full blocks and block receipts', async () => {
    node = await startFakeNode()
    const raws = await evmExtractor(createRpcClient(node.url, FAST)).extract(18000000, 18000000)
    expect(raws).toEqual([{ block: recordedBlock(18000000), receipts: recordedReceipts(18000000) }])
    expect(node.calls.map(c => c.method)).toEqual(['eth_getBlockByNumber', 'eth_getBlockReceipts'])
    expect(node.calls[0].params).toEqual(['0x112a880', true])
    expect(node.requests).toBe(1) // one round trip: the receipts ride with their block
  })

  it('needs no receipts for a block without transactions, whatever the node says of them', async () => {
    node = await startFakeNode({
      result: (c, recorded) => (c.method === 'eth_getBlockByNumber' ? { ...recorded, transactions: [] } : recorded),
      error: c => (c.method === 'eth_getBlockReceipts' ? { code: -32000, message: 'missing trie node' } : undefined),
    })
    const extractor = evmExtractor(createRpcClient(node.url, FAST))
    const raws = await extractor.extract(17000000, 17000000)
    expect(raws[0].receipts).toEqual([])
    expect(extractor.receiptsMethod).toBe('eth_getBlockReceipts')
  })

  it('falls back to one receipt per transaction on a node without eth_getBlockReceipts, and remembers', async () => {
    node = await startFakeNode({
      error: c =>
        c.method === 'eth_getBlockReceipts'
          ? { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' }
          : undefined,
    })
    const extractor = evmExtractor(createRpcClient(node.url, FAST))
    const raws = await extractor.extract(17000000, 17000000)
    expect(raws[0].receipts).toEqual(recordedReceipts(17000000))
    expect(extractor.receiptsMethod).toBe('eth_getTransactionReceipt')
    const before = node.calls.length
    await extractor.extract(18000000, 18000000)
    expect(node.calls.slice(before).some(c => c.method === 'eth_getBlockReceipts')).toBe(false)
    expect(node.calls.slice(before).filter(c => c.method === 'eth_getTransactionReceipt').length).toBe(
      recordedBlock(18000000).transactions.length,
    )
  })

  it('names a block the node does not have', async () => {
    node = await startFakeNode()
    const e = await evmExtractor(createRpcClient(node.url, FAST))
      .extract(18000000, 18000001)
      .catch(e => e)
    expect(e).toBeInstanceOf(MissingBlockError)
    expect(e.block).toBe(18000001)
    expect(e.message).toBe('block 18000001: the node returned null for eth_getBlockByNumber: it does not have this block')
  })

  it('names a block whose receipts the node does not have', async () => {
    node = await startFakeNode({ result: (call, recorded) => (call.method.includes('Receipt') ? null : recorded) })
    const e = await evmExtractor(createRpcClient(node.url, FAST))
      .extract(17000000, 17000000)
      .catch(e => e)
    expect(e).toBeInstanceOf(MissingBlockError)
    expect(e.message).toMatch(/^block 17000000: the node has no receipt for transaction 0x/)
  })

  it('refuses a node that answers with another block', async () => {
    node = await startFakeNode({
      result: (call, recorded) => (call.method === 'eth_getBlockByNumber' ? recordedBlock(18500000) : recorded),
    })
    await expect(evmExtractor(createRpcClient(node.url, FAST)).extract(17000000, 17000000)).rejects.toThrow(
      'block 17000000: the node answered with block 18500000',
    )
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findChain } from '../../src/chains/registry.ts'
import { IngestVerificationError } from '../../src/ingest/verify.ts'
import { MissingBlockError } from '../../src/ingest/extract.ts'
import { RpcError } from '../../src/ingest/rpc.ts'
import { runIngest, type IngestOptions } from '../../src/ingest/run.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import {
  ETH,
  expectedRows,
  partitionsOf,
  readManifest,
  readRows,
  recordedBlock,
  recordedReceipts,
  startFakeNode,
  startReplay,
  view,
  WITH_RECEIPTS,
  type FakeNodeOptions,
  type Json,
  type Replay,
} from './fixtures.ts'

const chain = findChain('evm', 'ETH')!
const dirs: string[] = []
const newStore = (): ObjectStore => {
  const dir = mkdtempSync(join(tmpdir(), 'ingest-run-'))
  dirs.push(dir)
  return fsStore(dir)
}
afterAll(() => dirs.forEach(d => rmSync(d, { recursive: true, force: true })))

let replay: Replay
beforeAll(async () => {
  replay = await startReplay()
})
afterAll(() => replay?.stop())

const ingest = (store: ObjectStore, from: number, to: number, o: Partial<IngestOptions> = {}) =>
  runIngest({ chain, rpcUrl: replay.url, from, to, store, ...o })

describe('runIngest from recorded mainnet (replay node)', () => {
  it('ingests exactly the recorded blocks and reads back every field of every row', async () => {
    expect(replay.receipts).toEqual(expect.arrayContaining(WITH_RECEIPTS))
    const store = newStore()
    for (const n of WITH_RECEIPTS) {
      const report = await ingest(store, n, n)
      expect(report.units).toBe(1)
    }
    const root = (await readManifest(store, ETH))!
    for (const ds of ['blocks', 'transactions', 'logs']) {
      // Sparse source: coverage is exactly the recorded blocks, with gaps between.
      expect(root.datasets[ds].coverage).toEqual(WITH_RECEIPTS.map(n => [n, n]))
    }
    const expected = expectedRows(WITH_RECEIPTS.map(n => ({ block: recordedBlock(n), receipts: recordedReceipts(n) })))
    for (const ds of ['blocks', 'transactions', 'logs'] as const) {
      const rows = (await readRows(store, ETH, ds)).map(view)
      expect(rows.length, ds).toBe(expected[ds].length)
      rows.forEach((row, i) => expect(row, `${ds} row ${i}`).toEqual(expected[ds][i]))
    }
    expect(expected.transactions.length).toBe(102 + 94 + 157)
    expect(expected.logs.length).toBe(237 + 291 + 408)

    const txs = (await readRows(store, ETH, 'transactions')).map(view)
    // The pre-EIP-155 legacy transaction of block 18000000: v 27/28 and no chain id.
    const unprotected = txs.filter(t => t.type === 0n && (t.v === 27n || t.v === 28n))
    expect(unprotected.length).toBeGreaterThanOrEqual(1)
    expect(unprotected.every(t => t.chain_id === null && t.block_number === 18000000n)).toBe(true)
    // EIP-155 legacy transactions carry chain id 1, as the node says.
    const source = new Map<string, Json>(WITH_RECEIPTS.flatMap(n => recordedBlock(n).transactions.map((t: Json) => [t.hash, t])))
    for (const t of txs.filter(t => t.type === 0n && t.chain_id !== null))
      expect(t.chain_id).toBe(BigInt(source.get(t.hash as string).chainId))
    expect(new Set(txs.map(t => t.type))).toEqual(new Set([0n, 2n]))
    // Contract creations: `to` null, contract address from the receipt.
    const creations = txs.filter(t => t.to === null)
    expect(creations.length).toBeGreaterThanOrEqual(1)
    expect(creations.every(t => typeof t.contract_address === 'string')).toBe(true)
    // Withdrawals after Shanghai, none before.
    const blockRows = (await readRows(store, ETH, 'blocks')).map(view)
    expect(blockRows[0].withdrawals).toBeNull()
    expect((blockRows[1].withdrawals as Json[]).length).toBe(16)
    expect(blockRows[1].withdrawals).toEqual(recordedBlock(18000000).withdrawals)
  })

  it('is idempotent: a rerun publishes nothing and leaves the manifest as it was', async () => {
    const store = newStore()
    await ingest(store, 18000000, 18000000)
    const before = await store.get(rootKey(ETH))
    const report = await ingest(store, 18000000, 18000000)
    expect(report.units).toBe(0)
    expect((await store.get(rootKey(ETH)))!.body).toEqual(before!.body)
  })

  it('fails on a range the node has only part of, naming the block, and publishes nothing', async () => {
    const store = newStore()
    await ingest(store, 18500000, 18500000)
    const before = await store.get(rootKey(ETH))
    const e = await ingest(store, 18000000, 18000001).catch(e => e)
    expect(e).toBeInstanceOf(MissingBlockError)
    expect(e.message).toMatch(/^block 18000001: /)
    expect((await store.get(rootKey(ETH)))!.body).toEqual(before!.body)
  })

  it('ingests a subset of datasets, then fills in the others without rewriting it', async () => {
    const store = newStore()
    await ingest(store, 17000000, 17000000, { datasets: ['logs'] })
    const root = (await readManifest(store, ETH))!
    expect(Object.keys(root.datasets)).toEqual(['logs'])
    const logKeys = (await partitionsOf(store, ETH, 'logs')).map(p => p.key)
    const report = await ingest(store, 17000000, 17000000)
    expect(report.rows).toMatchObject({ blocks: 1, transactions: 102, logs: 0 })
    expect((await partitionsOf(store, ETH, 'logs')).map(p => p.key)).toEqual(logKeys)
    expect((await readRows(store, ETH, 'transactions')).length).toBe(102)
  })

  it('refuses an unknown dataset and a range past the head', async () => {
    await expect(ingest(newStore(), 17000000, 17000000, { datasets: ['traces'] })).rejects.toThrow(
      'unknown dataset "traces": this chain has blocks, transactions, logs',
    )
    await expect(ingest(newStore(), 30000000, 30000000)).rejects.toThrow(/block 30000000 is past the node's head 24476009/)
  })
})

describe('runIngest from a misbehaving node: a clear error and nothing published', () => {
  const FAST = { retries: 2, backoffMs: 1, maxBackoffMs: 5, timeoutMs: 2_000 }
  const tamperBlock = (f: (b: Json) => void) => (call: { method: string }, recorded: Json) => {
    if (call.method === 'eth_getBlockByNumber' && recorded && Number(recorded.number) === 17000000) f(recorded)
    return recorded
  }
  const cases: [string, FakeNodeOptions, (e: unknown) => void][] = [
    [
      'null block',
      { result: (c, r) => (c.method === 'eth_getBlockByNumber' && r && Number(r.number) === 17000000 ? null : r) },
      e => {
        expect(e).toBeInstanceOf(MissingBlockError)
        expect((e as Error).message).toMatch(/^block 17000000: the node returned null/)
      },
    ],
    [
      'wrong block hash',
      { result: tamperBlock(b => (b.hash = '0x' + '12'.repeat(32))) },
      e => {
        expect(e).toBeInstanceOf(IngestVerificationError)
        expect((e as Error).message).toMatch(/^block 17000000: header hash .* does not match/)
      },
    ],
    [
      'changed transaction',
      { result: tamperBlock(b => (b.transactions[7].input = '0x')) },
      e => {
        expect(e).toBeInstanceOf(IngestVerificationError)
        expect((e as Error).message).toMatch(/^block 17000000: transaction 7 hashes to/)
      },
    ],
    [
      'changed log',
      {
        result: (c, r) => {
          if (c.method === 'eth_getBlockReceipts' && r && Number(r[0].blockNumber) === 17000000)
            r.find((x: Json) => x.logs.length).logs[0].topics.reverse()
          return r
        },
      },
      e => {
        expect(e).toBeInstanceOf(IngestVerificationError)
        expect((e as Error).message).toMatch(/^block 17000000: receipts root/)
      },
    ],
    [
      'malformed JSON',
      { reply: calls => (calls[0].method === 'eth_getBlockByNumber' ? { body: '{"jsonrpc": "2.0", "result": {' } : undefined) },
      e => {
        expect(e).toBeInstanceOf(RpcError)
        expect((e as Error).message).toMatch(/^eth_getBlockByNumber\(0x1036640, true\) failed: malformed JSON/)
      },
    ],
    [
      'JSON-RPC error',
      { error: c => (c.method === 'eth_getBlockReceipts' ? { code: -32000, message: 'missing trie node' } : undefined) },
      e => {
        expect(e).toBeInstanceOf(RpcError)
        expect((e as Error).message).toBe('eth_getBlockReceipts(0x1036640) failed: JSON-RPC error -32000: missing trie node')
      },
    ],
    [
      'persistent 500',
      { reply: calls => (calls[0].method === 'eth_getBlockByNumber' ? { status: 500, body: 'upstream unavailable' } : undefined) },
      e => {
        expect(e).toBeInstanceOf(RpcError)
        expect((e as Error).message).toMatch(
          /^eth_getBlockByNumber\(0x1036640, true\) failed: HTTP 500 .*upstream unavailable \(gave up after 3 attempts\)/,
        )
      },
    ],
  ]
  for (const [name, options, check] of cases) {
    it(name, async () => {
      const node = await startFakeNode(options)
      try {
        const fresh = newStore()
        check(await runIngest({ chain, rpcUrl: node.url, from: 17000000, to: 17000000, store: fresh, rpc: FAST }).catch(e => e))
        expect(await fresh.head(rootKey(ETH))).toBeNull()
        expect(await fresh.list('evm-1/')).toEqual([])
        // With a manifest already there, it is left unchanged.
        const used = newStore()
        await runIngest({ chain, rpcUrl: replay.url, from: 18500000, to: 18500000, store: used })
        const before = await used.get(rootKey(ETH))
        check(await runIngest({ chain, rpcUrl: node.url, from: 17000000, to: 17000000, store: used, rpc: FAST }).catch(e => e))
        expect((await used.get(rootKey(ETH)))!.etag).toBe(before!.etag)
      } finally {
        await node.close()
      }
    })
  }

  it('retries a node that answers 429 and ends with the same rows', async () => {
    let limited = 0
    const node = await startFakeNode({
      reply: (_c, n) => (n % 2 === 1 && limited++ < 3 ? { status: 429, body: 'rate limited' } : undefined),
    })
    try {
      const store = newStore()
      const report = await runIngest({ chain, rpcUrl: node.url, from: 17000000, to: 17000000, store, rpc: FAST })
      expect(limited).toBeGreaterThanOrEqual(1)
      expect(report.rows).toMatchObject({ blocks: 1, transactions: 102, logs: 237 })
      const reference = newStore()
      await ingest(reference, 17000000, 17000000)
      expect((await partitionsOf(store, ETH, 'logs')).map(p => p.key)).toEqual((await partitionsOf(reference, ETH, 'logs')).map(p => p.key))
    } finally {
      await node.close()
    }
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChain } from '../../src/chains/registry.ts'
import { MissingBlockError } from '../../src/ingest/extract.ts'
import { atKey, unitPool, withHandedBytes, type UnitPool } from '../../src/ingest/pool.ts'
import type { EncodedUnit } from '../../src/ingest/unit.ts'
import type { BuiltSegment } from '../../src/index/build.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { IngestVerificationError } from '../../src/ingest/verify.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { fsStore } from '../../src/store/fs.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
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
  type Json,
  type Replay,
} from './fixtures.ts'

const chain = findChain('evm', 'ETH')!
afterAll(removeTempDirs)

let replay: Replay
let pool: UnitPool
beforeAll(async () => {
  replay = await startReplay()
  pool = unitPool({ chain: ETH, rpcUrl: replay.url, workers: 2 })
})
afterAll(async () => {
  replay?.stop()
  await pool?.close()
})

describe('runIngest with worker threads (WebAssembly keccak)', () => {
  it('publishes the same partitions, byte for byte, as the in-thread ingest, with every row', async () => {
    const { store: threaded } = await tempStore()
    const { store: local } = await tempStore()
    for (const n of WITH_RECEIPTS) {
      const report = await runIngest({
        chain,
        rpcUrl: replay.url,
        from: n,
        to: n,
        store: threaded,
        builder: pool,
        concurrency: pool.capacity,
      })
      expect(report.units).toBe(1)
      await runIngest({ chain, rpcUrl: replay.url, from: n, to: n, store: local })
    }
    const expected = expectedRows(WITH_RECEIPTS.map(n => ({ block: recordedBlock(n), receipts: recordedReceipts(n) })))
    for (const ds of ['blocks', 'transactions', 'logs'] as const) {
      expect(
        (await partitionsOf(threaded, ETH, ds)).map(p => p.key),
        ds,
      ).toEqual((await partitionsOf(local, ETH, ds)).map(p => p.key))
      const rows = (await readRows(threaded, ETH, ds)).map(view)
      expect(rows.length, ds).toBe(expected[ds].length)
      rows.forEach((row, i) => expect(row, `${ds} row ${i}`).toEqual(expected[ds][i]))
    }
    // Partitions, lookup copies and index objects reach the main thread ahead of their unit: each lands whole.
    const objects = async (s: typeof local) => (await s.list('evm-1/')).map(o => o.key).filter(k => !k.includes('/manifest/'))
    const keys = await objects(threaded)
    expect(keys.some(k => k.includes('/index/')) && keys.some(k => k.endsWith('.parquet'))).toBe(true)
    expect(keys.sort()).toEqual((await objects(local)).sort())
    for (const key of keys) expect(Buffer.from((await threaded.get(key))!.body).equals((await local.get(key))!.body), key).toBe(true)
  })
})

describe('a tampered block is refused on the fast path: nothing published', () => {
  const tamperBlock = (f: (b: Json) => void) => (call: { method: string }, recorded: Json) => {
    if (call.method === 'eth_getBlockByNumber' && recorded && Number(recorded.number) === 17000000) f(recorded)
    return recorded
  }
  const cases: [string, Parameters<typeof startFakeNode>[0], RegExp][] = [
    ['a wrong block hash', { result: tamperBlock(b => (b.hash = '0x' + '12'.repeat(32))) }, /header hash .* does not match/],
    ['a changed transaction', { result: tamperBlock(b => (b.transactions[7].input = '0x')) }, /transaction 7 hashes to/],
    ['a missing transaction', { result: tamperBlock(b => b.transactions.pop()) }, /transactions root/],
    [
      'a changed log',
      {
        result: (c, r) => {
          if (c.method === 'eth_getBlockReceipts' && r && Number(r[0].blockNumber) === 17000000)
            r.find((x: Json) => x.logs.length).logs[0].data = '0x00'
          return r
        },
      },
      /receipts root/,
    ],
    [
      'a changed logs bloom',
      {
        result: (c, r) => {
          if (c.method === 'eth_getBlockReceipts' && r && Number(r[0].blockNumber) === 17000000) r[3].logsBloom = '0x' + 'ff'.repeat(256)
          return r
        },
      },
      /receipts root/,
    ],
  ]
  for (const [name, options, message] of cases) {
    it(name, async () => {
      const node = await startFakeNode(options)
      const tampered = unitPool({ chain: ETH, rpcUrl: node.url, workers: 1, rpc: { retries: 1, backoffMs: 1 } })
      try {
        const { store } = await tempStore()
        const e = await runIngest({ chain, rpcUrl: node.url, from: 17000000, to: 17000000, store, builder: tampered }).catch(e => e)
        expect(e).toBeInstanceOf(IngestVerificationError)
        expect((e as IngestVerificationError).block).toBe(17000000)
        expect((e as Error).message).toMatch(/^block 17000000: /)
        expect((e as Error).message).toMatch(message)
        expect(await store.head(rootKey(ETH))).toBeNull()
        expect(await store.list('evm-1/')).toEqual([])
      } finally {
        await tampered.close()
        await node.close()
      }
    })
  }

  it('a block the node lacks fails as MissingBlockError naming it', async () => {
    const e = await runIngest({
      chain,
      rpcUrl: replay.url,
      from: 18000000,
      to: 18000001,
      store: (await tempStore()).store,
      builder: pool,
    }).catch(e => e)
    expect(e).toBeInstanceOf(MissingBlockError)
    expect((e as Error).message).toMatch(/^block 18000001: /)
  })
})

describe('parallel backfill: ingesters of disjoint ranges publishing into one lake at once', () => {
  it('lands every range once, whichever publication wins each conditional write', async () => {
    const { dir } = await tempStore()
    // One store client per ingester, as separate machines have; two threaded, one in-thread.
    await Promise.all(
      WITH_RECEIPTS.map((n, i) =>
        runIngest({ chain, rpcUrl: replay.url, from: n, to: n, store: fsStore(dir), ...(i < 2 ? { builder: pool, concurrency: 2 } : {}) }),
      ),
    )
    const store = fsStore(dir)
    const root = (await readManifest(store, ETH))!
    for (const ds of ['blocks', 'transactions', 'logs']) expect(root.datasets[ds].coverage, ds).toEqual(WITH_RECEIPTS.map(n => [n, n]))
    expect((await readRows(store, ETH, 'transactions')).length).toBe(102 + 94 + 157)
    expect((await readRows(store, ETH, 'logs')).length).toBe(237 + 291 + 408)
  })
})

describe('withHandedBytes', () => {
  const objects = (...keys: string[]) => keys.map(key => ({ key, bytes: new Uint8Array(0) }))
  const unit = (): EncodedUnit => ({
    partitions: {
      logs: [
        { entry: {} as PartitionEntry, objects: objects('logs/a', 'logs/by-address/a') },
        { entry: {} as PartitionEntry, objects: objects('logs/b') },
      ],
    },
    segments: { logs: { descriptor: {} as BuiltSegment['descriptor'], objects: objects('index/1', 'index/2') } },
  })
  const bytes = (...xs: number[]) => xs.map(x => Uint8Array.of(x))
  const handed = () =>
    new Map([
      [atKey({ storage: 'logs', part: 0 }), bytes(1, 2)],
      [atKey({ storage: 'logs', part: 1 }), bytes(3)],
      [atKey({ storage: 'logs' }), bytes(4, 5)],
    ])

  it('puts each object its bytes back, in order', () => {
    const out = withHandedBytes(unit(), handed())
    expect(out.partitions.logs.flatMap(p => p.objects.map(o => [o.key, o.bytes[0]]))).toEqual([
      ['logs/a', 1],
      ['logs/by-address/a', 2],
      ['logs/b', 3],
    ])
    expect(out.segments.logs.objects.map(o => o.bytes[0])).toEqual([4, 5])
  })

  it('rejects a unit whose thread sent no bytes, or a wrong count, for any of its objects', () => {
    const none = handed()
    none.delete(atKey({ storage: 'logs', part: 1 }))
    expect(() => withHandedBytes(unit(), none)).toThrow('logs partition 1: the thread sent no bytes for its objects')
    const short = handed()
    short.set(atKey({ storage: 'logs' }), bytes(4))
    expect(() => withHandedBytes(unit(), short)).toThrow("logs's index segment: 1 objects' bytes for 2 objects")
  })
})

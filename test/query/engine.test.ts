import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import type { DatasetDecl, FieldDecl } from '../../src/schema/dataset.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'
import { countingStore } from '../../src/store/counting.ts'
import { StorageError, type ObjectStore } from '../../src/store/types.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { ScanOptions } from '../../src/query/scan.ts'
import { ReadBuffers } from '../../src/query/read-buffers.ts'
import { TailCache } from '../../src/query/io.ts'
import { InvalidRangeError, NoDataError } from '../../src/query/errors.ts'
import type { Operator } from '../../src/schema/kinds.ts'
import type { Predicate, QuerySpec } from '../../src/query/types.ts'
import {
  batchRows,
  buildLake,
  bytesWithin,
  collect,
  expected,
  legacyEntry,
  makePools,
  makeRows,
  randomBytes,
  rng,
  type Pools,
  type Row,
} from './lake.ts'
import { recordingStore, rounds, type ReadRecord } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { compareBytes } from '../../src/columns/compare.ts'

/** A dataset with the kinds the EVM datasets lack as stored columns: string, json, address32. */
const things: DatasetDecl = {
  name: 'things',
  family: 'evm',
  path: 'things',
  storage: 'things',
  rangeKey: 'block_number',
  orderBy: ['block_number', 'seq'],
  fields: [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex' },
    { name: 'seq', kind: 'u64int' },
    { name: 'label', kind: 'string', nullable: true },
    { name: 'payload', kind: 'json', nullable: true },
    { name: 'owner', kind: 'address32', bloom: true },
    { name: 'flag', kind: 'bool' },
    { name: 'note', kind: 'string', virtual: 'null', nullable: true },
  ],
}

// Partitions with a gap (1200-1299) between the second and third; 100-row groups of
// 256-byte pages, so range-key chunks have several pages and page indexes.
const SPANS: [number, number][] = [
  [1000, 1099],
  [1100, 1199],
  [1300, 1399],
  [1400, 1499],
]
const LAYOUT = { rowGroupSize: 100, pageSize: 256 }
const blocksOf = ([a, b]: [number, number]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)

interface Lake {
  store: ObjectStore
  rows: Record<string, Row[]>
  entries: Record<string, PartitionEntry[]>
  pools: Pools
}

let lake: Lake

beforeAll(async () => {
  const { store } = await tempStore()
  const r = rng(7)
  const pools = makePools(r)
  const rows: Record<string, Row[]> = {}
  const entries: Record<string, PartitionEntry[]> = {}
  for (const dataset of [logs, transactions, things]) {
    const parts = SPANS.map(span => ({ from: span[0], to: span[1], rows: makeRows(dataset, blocksOf(span), r, pools) }))
    rows[dataset.storage] = parts.flatMap(p => p.rows)
    entries[dataset.storage] = await buildLake(store, ETH, dataset, parts, LAYOUT)
  }
  lake = { store, rows, entries, pools }
})

afterAll(removeTempDirs)

const field = (d: DatasetDecl, name: string): FieldDecl => {
  const f = d.fields.find(x => x.name === name)
  if (!f) throw new Error(`no field ${name}`)
  return f
}
const pred = (d: DatasetDecl, name: string, op: Operator, ...values: (StoredValue | null)[]): Predicate => ({
  field: field(d, name),
  op,
  values,
})

function spec(dataset: DatasetDecl, predicates: Predicate[], extra: Partial<QuerySpec> = {}): QuerySpec {
  return { chain: ETH, dataset, from: 1000, to: 1499, predicates, fields: [...dataset.fields], ...extra }
}

/** A value of `column` that occurs in exactly `times` rows. */
function valueSeen(rows: Row[], column: string, times: number): Uint8Array {
  const counts = new Map<string, { v: Uint8Array; n: number }>()
  for (const row of rows) {
    const v = row[column]
    if (!(v instanceof Uint8Array)) continue
    const k = v.join(',')
    const c = counts.get(k) ?? { v, n: 0 }
    c.n++
    counts.set(k, c)
  }
  const hit = [...counts.values()].find(c => c.n === times)
  if (!hit) throw new Error(`no ${column} value seen ${times} times`)
  return hit.v
}

async function check(s: QuerySpec, store: ObjectStore = lake.store, scan?: ScanOptions) {
  const result = await runQuery({ store, manifest: new ManifestReader(store), scan }, s)
  const got = batchRows(await collect(result.batches))
  const range = result.range
  const want = expected(lake.rows[s.dataset.storage], s.predicates, s.fields, range, s.dataset.rangeKey, ETH.id)
  expect(got).toEqual(want)
  return { result, got }
}

describe('runQuery results equal a plain filter over the same rows', () => {
  const u256 = (n: bigint) => {
    const b = new Uint8Array(32)
    for (let i = 31; i >= 0; i--, n >>= 8n) b[i] = Number(n & 0xffn)
    return b
  }
  const cases: [string, DatasetDecl, () => Predicate[]][] = [
    ['logs, no filter', logs, () => []],
    ['address eq (rare)', logs, () => [pred(logs, 'address', 'eq', valueSeen(lake.rows.logs, 'address', 1))]],
    [
      'address in (hot, rare, absent)',
      logs,
      () => [
        pred(
          logs,
          'address',
          'in',
          lake.pools.hot.get(20)![0],
          lake.pools.warm.get(20)![5],
          valueSeen(lake.rows.logs, 'address', 1),
          new Uint8Array(20).fill(9),
        ),
      ],
    ],
    ['topic0 is null', logs, () => [pred(logs, 'topic0', 'in', null)]],
    ['topic0 null or value', logs, () => [pred(logs, 'topic0', 'in', null, lake.pools.hot.get(32)![1])]],
    [
      'topic1 eq and address in',
      logs,
      () => [pred(logs, 'topic1', 'eq', lake.pools.warm.get(32)![3]), pred(logs, 'address', 'in', ...lake.pools.hot.get(20)!)],
    ],
    ['block_number gte and lte', logs, () => [pred(logs, 'block_number', 'gte', 1150n), pred(logs, 'block_number', 'lte', 1320n)]],
    [
      'log_index gte, transaction_index lte',
      logs,
      () => [pred(logs, 'log_index', 'gte', 5n), pred(logs, 'transaction_index', 'lte', 300n)],
    ],
    ['u64 beyond 2^63', logs, () => [pred(logs, 'block_timestamp', 'gte', 1n << 63n)]],
    ['u64 in', logs, () => [pred(logs, 'transaction_index', 'in', 1n, 2n, 999n)]],
    ['bytes eq empty', logs, () => [pred(logs, 'data', 'eq', new Uint8Array(0))]],
    ['bytes in', logs, () => [pred(logs, 'data', 'in', lake.rows.logs[5].data as Uint8Array, lake.rows.logs[9].data as Uint8Array)]],
    ['bool eq', logs, () => [pred(logs, 'removed', 'eq', true)]],
    ['virtual chain matches', logs, () => [pred(logs, 'chain', 'in', 1n, 5n), pred(logs, 'topic2', 'in', null)]],
    ['virtual chain excludes', logs, () => [pred(logs, 'chain', 'eq', 2n)]],
    ['hash absent', logs, () => [pred(logs, 'topic3', 'eq', new Uint8Array(32).fill(1))]],
    ['u256pad gte', transactions, () => [pred(transactions, 'value', 'gte', u256(1n << 200n))]],
    ['u256pad lte', transactions, () => [pred(transactions, 'value', 'lte', u256(1n << 100n))]],
    [
      'u256hex nullable between',
      transactions,
      () => [pred(transactions, 'gas_price', 'gte', u256(1n << 64n)), pred(transactions, 'gas_price', 'lte', u256(1n << 240n))],
    ],
    ['to is null (deployments)', transactions, () => [pred(transactions, 'to', 'in', null)]],
    ['to null or hot', transactions, () => [pred(transactions, 'to', 'in', null, lake.pools.hot.get(20)![2])]],
    [
      'virtual null in null',
      transactions,
      () => [pred(transactions, 'raw', 'in', null), pred(transactions, 'from', 'eq', lake.pools.hot.get(20)![0])],
    ],
    ['virtual null eq value', transactions, () => [pred(transactions, 'raw', 'eq', 'x')]],
    ['string eq and lte', things, () => [pred(things, 'label', 'lte', 'ab'), pred(things, 'label', 'in', 'a', 'ab', 'z', null)]],
    ['string gte, null excluded', things, () => [pred(things, 'label', 'gte', 'b')]],
    ['address32 in, bool eq', things, () => [pred(things, 'owner', 'in', ...lake.pools.hot.get(32)!), pred(things, 'flag', 'eq', false)]],
  ]
  for (const [name, dataset, predicates] of cases) {
    it(name, async () => {
      await check(spec(dataset, predicates()))
      await check(spec(dataset, predicates(), { from: 1050, to: 1420 }))
    })
  }

  it('returns the output fields asked for, in their order, virtual ones filled', async () => {
    const fields = ['topic0', 'chain', 'block_number', 'address'].map(n => field(logs, n))
    const { got } = await check(spec(logs, [pred(logs, 'address', 'in', ...lake.pools.hot.get(20)!)], { fields }))
    expect(got.length).toBeGreaterThan(100)
    expect(Object.keys(got[0])).toEqual(['topic0', 'chain', 'block_number', 'address'])
    expect(got.every(r => r.chain === '1')).toBe(true)
  })

  it('keeps (block, index) order and bounded batches', async () => {
    const result = await runQuery(
      { store: lake.store, manifest: new ManifestReader(lake.store), scan: { maxBatchRows: 40 } },
      spec(logs, []),
    )
    const batches = await collect(result.batches)
    expect(Math.max(...batches.map(b => b.length))).toBeLessThanOrEqual(40)
    const keys = batchRows(batches).map(r => [BigInt(r.block_number as string), BigInt(r.log_index as string)] as const)
    expect(keys.length).toBe(lake.rows.logs.length)
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1], keys[i]]
      expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])).toBe(true)
    }
  })
})

describe('range resolution and coverage', () => {
  it('resolves latest to the highest covered block and reports the served parts of a range with gaps', async () => {
    const { result } = await check(spec(logs, [], { from: 1150, to: 'latest' }))
    expect(result.range).toEqual([1150, 1499])
    expect(result.served).toEqual([
      [1150, 1199],
      [1300, 1499],
    ])
    const latest = await check(spec(logs, [], { from: 'latest', to: 'latest' }))
    expect(latest.result.range).toEqual([1499, 1499])
  })

  it('throws NoDataError with the coverage for a range with nothing stored', async () => {
    const err = await runQuery(
      { store: lake.store, manifest: new ManifestReader(lake.store) },
      spec(logs, [], { from: 1210, to: 1290 }),
    ).catch(e => e)
    expect(err).toBeInstanceOf(NoDataError)
    expect(err.coverage).toEqual([
      [1000, 1199],
      [1300, 1499],
    ])
    const other = await runQuery(
      { store: lake.store, manifest: new ManifestReader(lake.store) },
      spec(logs, [], { chain: { ...ETH, id: 99 } }),
    ).catch(e => e)
    expect(other).toBeInstanceOf(NoDataError)
    expect(other.coverage).toEqual([])
  })

  it('answers a from above the newest block with to at latest with nothing, and the newest block (a poller)', async () => {
    const ctx = { store: lake.store, manifest: new ManifestReader(lake.store) }
    const polled = await runQuery(ctx, spec(logs, [], { from: 1500, to: 'latest' }))
    expect(polled.latest).toBe(1499)
    expect(polled.served).toEqual([])
    expect(await collect(polled.batches)).toEqual([])
    const err = await runQuery(ctx, spec(logs, [], { from: 'latest', to: 1200 })).catch(e => e)
    expect(err).toBeInstanceOf(InvalidRangeError)
  })
})

describe('schema evolution', () => {
  it('reads a column missing from older partitions as null, in filters and output', async () => {
    const { store } = await tempStore()
    const evolved: DatasetDecl = { ...things, name: 'evolved', storage: 'evolved' }
    const older: DatasetDecl = { ...evolved, fields: evolved.fields.filter(f => f.name !== 'label') }
    const r = rng(3)
    const pools = makePools(r)
    const old = makeRows(older, blocksOf([0, 49]), r, pools)
    const next = makeRows(evolved, blocksOf([50, 99]), r, pools)
    await buildLake(store, ETH, older, [{ from: 0, to: 49, rows: old }], { rowGroupSize: 50 })
    await buildLake(store, ETH, evolved, [{ from: 50, to: 99, rows: next }], { rowGroupSize: 50 })
    const all = [...old.map(row => ({ ...row, label: null })), ...next]
    for (const predicates of [[], [pred(evolved, 'label', 'in', null)], [pred(evolved, 'label', 'eq', 'a')]]) {
      const s: QuerySpec = { chain: ETH, dataset: evolved, from: 0, to: 99, predicates, fields: [...evolved.fields] }
      const result = await runQuery({ store, manifest: new ManifestReader(store) }, s)
      expect(batchRows(await collect(result.batches))).toEqual(expected(all, predicates, s.fields, [0, 99], 'block_number', ETH.id))
    }
  })
})

describe('storage failures', () => {
  it('reject the query before any batch when a partition cannot be read, so the caller can answer 503', async () => {
    const failing: ObjectStore = {
      ...lake.store,
      get: (key, range) => (key.endsWith('.parquet') ? Promise.reject(new StorageError('unreachable')) : lake.store.get(key, range)),
    }
    const err = await runQuery({ store: failing, manifest: new ManifestReader(failing) }, spec(logs, [])).catch(e => e)
    expect(err).toBeInstanceOf(StorageError)
    const limited = await runQuery({ store: failing, manifest: new ManifestReader(failing) }, spec(logs, [], { limit: 10 })).catch(e => e)
    expect(limited).toBeInstanceOf(StorageError)
  })

  it('fail the batch stream, not end it cleanly, when a later read fails', async () => {
    let tails = 0
    const flaky: ObjectStore = {
      ...lake.store,
      get: (key, range) => {
        // The read that ends a file is the one fetching its footer (data pages never reach the end).
        if (
          key.endsWith('.parquet') &&
          range &&
          'offset' in range &&
          lake.entries.logs.some(e => e.key === key && range.offset + (range.length ?? 0) === e.bytes) &&
          ++tails > 1
        ) {
          return Promise.reject(new StorageError('gone'))
        }
        return lake.store.get(key, range)
      },
    }
    const result = await runQuery({ store: flaky, manifest: new ManifestReader(flaky), scan: { partitionLookAhead: 1 } }, spec(logs, []))
    await expect(collect(result.batches)).rejects.toBeInstanceOf(StorageError)
  })
})

describe('limit pages at block boundaries', () => {
  async function pages(s: QuerySpec, limit: number) {
    const out: { rows: Record<string, unknown>[]; nextFrom?: number; served: [number, number][] }[] = []
    let from = s.from as number
    for (;;) {
      const r = await runQuery({ store: lake.store, manifest: new ManifestReader(lake.store) }, { ...s, from, limit })
      out.push({ rows: batchRows(await collect(r.batches)), nextFrom: r.nextFrom, served: r.served })
      if (r.nextFrom === undefined) return out
      expect(r.nextFrom).toBeGreaterThan(from)
      from = r.nextFrom
    }
  }

  for (const limit of [1, 7, 50, 333]) {
    it(`limit ${limit}: concatenated pages equal the whole, no block split, each page within the limit unless one block`, async () => {
      for (const s of [
        spec(logs, [], { from: 1150, to: 1320 }),
        spec(logs, [pred(logs, 'address', 'in', ...lake.pools.hot.get(20)!)], { from: 1050 }),
      ]) {
        const whole = expected(lake.rows.logs, s.predicates, s.fields, [s.from as number, s.to as number], 'block_number', ETH.id)
        const ps = await pages(s, limit)
        expect(ps.flatMap(p => p.rows)).toEqual(whole)
        for (const p of ps) {
          const blocks = new Set(p.rows.map(r => r.block_number))
          expect(p.rows.length <= limit || blocks.size === 1).toBe(true)
          if (p.nextFrom !== undefined) {
            const last = Number(BigInt(p.rows[p.rows.length - 1].block_number as string))
            expect(last).toBeLessThan(p.nextFrom)
            expect(p.served[p.served.length - 1][1]).toBeLessThan(p.nextFrom)
            expect(p.served[p.served.length - 1][1]).toBeGreaterThanOrEqual(last)
          }
        }
        const blockPages = new Map<unknown, number>()
        ps.forEach((p, i) =>
          p.rows.forEach(r => {
            const seen = blockPages.get(r.block_number)
            expect(seen === undefined || seen === i).toBe(true)
            blockPages.set(r.block_number, i)
          }),
        )
      }
    })
  }

  it('gives no nextFrom when the limit is not reached', async () => {
    const r = await runQuery(
      { store: lake.store, manifest: new ManifestReader(lake.store) },
      spec(logs, [], { from: 1000, to: 1003, limit: 10_000 }),
    )
    expect(r.nextFrom).toBeUndefined()
    expect(batchRows(await collect(r.batches))).toEqual(expected(lake.rows.logs, [], logs.fields, [1000, 1003], 'block_number', ETH.id))
  })
})

describe('pushdown, proven by counting reads', () => {
  const isPartition = (key: string) => key.endsWith('.parquet')
  // No merging of nearby reads (these files are small), so the reads are what the engine asked for.
  const exact: ScanOptions = { readQueue: { maxGap: 0 } }
  const bloomStart = (e: PartitionEntry) => Math.min(...Object.values(e.blooms!).map(b => b.offset))
  const inTail = (e: PartitionEntry) => (r: ReadRecord) => r.offset >= e.tailOffset && r.offset + r.length <= e.bytes
  const isLookup = (key: string) => key.includes('/by-address/')
  /** Reads of block-ordered partitions below their tails: data pages, not metadata. */
  const partitionData = (reads: ReadRecord[]) =>
    reads.filter(r => isPartition(r.key) && !isLookup(r.key) && looked.entries.some(e => e.key === r.key && r.offset < e.tailOffset))
  /** Reads of the row groups of `e`'s lookup copy (anything before its tail). */
  const groupReads = (reads: ReadRecord[], e: PartitionEntry) =>
    reads.filter(r => r.key === e.lookup!.key && r.offset < e.lookup!.tailOffset)

  // The same logs in two more lakes: one whose manifest predates lookup copies, one with
  // copies in row groups of GROUP rows. The declared 1,024-row groups would leave these
  // ~600-row partitions a one-group copy, always beyond LOOKUP_SHARE of them.
  const GROUP = 4
  let unlooked: { store: ObjectStore; entries: PartitionEntry[] }
  let looked: { store: ObjectStore; entries: PartitionEntry[] }
  beforeAll(async () => {
    const parts = SPANS.map(([from, to]) => ({
      from,
      to,
      rows: lake.rows.logs.filter(r => Number(r.block_number) >= from && Number(r.block_number) <= to),
    }))
    const plain = (await tempStore()).store
    unlooked = { store: plain, entries: await buildLake(plain, ETH, logs, parts, LAYOUT, { entry: ({ lookup: _, ...e }) => e }) }
    const copied = (await tempStore()).store
    looked = {
      store: copied,
      entries: await buildLake(copied, ETH, { ...logs, lookup: { column: 'address', rowGroupSize: GROUP } }, parts, LAYOUT),
    }
  })

  /** A row with a topic0 whose address no other row has. */
  const rareRow = () => lake.rows.logs.find(r => r.topic0 !== null && lake.rows.logs.filter(x => x.address === r.address).length === 1)!

  /**
   * Rows whose addresses no other row has: two per partition, the later one's address
   * first in byte order (so its lookup copy holds them out of block order); in the first
   * partition on either side of block 1050, in the last beyond block 1420.
   */
  function spreadRares(): Row[] {
    const rare = lake.rows.logs.filter(r => lake.rows.logs.filter(x => x.address === r.address).length === 1)
    const block = (r: Row) => Number(r.block_number)
    const fits = [(a: Row, b: Row) => block(a) < 1050 && block(b) >= 1050, () => true, () => true, (a: Row) => block(a) > 1420]
    return SPANS.flatMap(([from, to], i) => {
      const mine = rare.filter(r => block(r) >= from && block(r) <= to)
      for (const a of mine) {
        const b = mine.find(b => block(b) > block(a) && compareBytes(a.address as Uint8Array, b.address as Uint8Array) > 0 && fits[i](a, b))
        if (b) return [a, b]
      }
      throw new Error(`no pair of rare addresses in blocks ${from}-${to}`)
    })
  }

  function expectBlockOrder(rows: Record<string, unknown>[]) {
    const keys = rows.map(r => [BigInt(r.block_number as string), BigInt(r.log_index as string)])
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1], keys[i]]
      expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])).toBe(true)
    }
  }

  /** Every bloom byte read for `e` is of `columns`, and all of theirs are read. */
  function expectBloomsRead(reads: ReadRecord[], e: PartitionEntry, columns: string[]) {
    expect(Object.keys(e.blooms!)).toEqual(expect.arrayContaining(['address', 'topic0', 'topic1']))
    for (const [column, span] of Object.entries(e.blooms!)) {
      expect({ column, read: bytesWithin(reads, e.key, span) }).toEqual({ column, read: columns.includes(column) ? span.length : 0 })
    }
  }

  it('a one-block query fetches page indexes and footer but no bloom filter, then data inside one row group only', async () => {
    const entry = lake.entries.logs[1]
    const group = entry.rowGroups.find(g => g.to - g.from >= 2)!
    const block = group.from + 1
    const { store, reads } = recordingStore(lake.store)
    const { result } = await check(spec(logs, [], { from: block, to: block }), store, exact)
    const parts = reads.filter(r => isPartition(r.key))
    expect(new Set(parts.map(r => r.key))).toEqual(new Set([entry.key]))
    const tail = parts.filter(inTail(entry))
    expect(tail.filter(r => r.offset + r.length === entry.bytes).length).toBe(1)
    const indexes = { offset: entry.tailOffset, length: bloomStart(entry) - entry.tailOffset }
    expect(indexes.length).toBeGreaterThan(0)
    expect(bytesWithin(tail, entry.key, indexes)).toBe(indexes.length)
    expectBloomsRead(parts, entry, [])
    for (const r of parts.filter(r => !tail.includes(r))) {
      expect(r.offset).toBeGreaterThanOrEqual(group.offset)
      expect(r.offset + r.length).toBeLessThanOrEqual(group.offset + group.length)
    }
    expect(result.stats.partitionsRead).toBe(1)
    expect(result.stats.rowGroupsRead).toBe(1)
    expect(result.stats.partitionsTotal).toBe(4)
    expect(result.stats.requests).toBe(reads.length)
    expect(result.stats.bytesFetched).toBe(reads.reduce((n, r) => n + r.length, 0))
  })

  it('an absent address reads only tails, and of the bloom filters only the address ones', async () => {
    const { store, reads } = recordingStore(lake.store)
    const { result, got } = await check(spec(logs, [pred(logs, 'address', 'eq', new Uint8Array(20).fill(0x42))]), store, exact)
    expect(got).toEqual([])
    const parts = reads.filter(r => isPartition(r.key))
    for (const e of lake.entries.logs) {
      const mine = parts.filter(r => r.key === e.key)
      expect(mine.length).toBeGreaterThan(0)
      expect(mine.every(inTail(e))).toBe(true)
      expectBloomsRead(mine, e, ['address'])
    }
    expect(result.stats.rowGroupsRead).toBe(0)
    expect(result.stats.rowsScanned).toBe(0)
    expect(result.pushed).toEqual(['address'])
  })

  it('without lookup copies, a rare address and topic0 costs three rounds (tails with their two bloom columns, filter columns, output columns)', async () => {
    const rare = rareRow()
    const { store, reads } = recordingStore(unlooked.store, 5)
    const s = spec(logs, [pred(logs, 'address', 'eq', rare.address), pred(logs, 'topic0', 'eq', rare.topic0)])
    const { result, got } = await check(s, store, exact)
    expect(got.length).toBe(1)
    expect(unlooked.entries.every(e => e.lookup === undefined)).toBe(true)
    expect(rounds(reads.filter(r => isPartition(r.key)))).toBe(3)
    for (const e of unlooked.entries) expectBloomsRead(reads, e, ['address', 'topic0'])
    expect(result.stats.rowGroupsRead).toBeLessThanOrEqual(2)
    expect(result.stats.rowGroupsTotal).toBe(unlooked.entries.reduce((n, e) => n + e.rowGroups.length, 0))
  })

  describe('through lookup copies', () => {
    it("a rare address and topic0 read no data of the partitions, in two rounds: the tails (partitions and copies), then the copies' row groups that may hold the address", async () => {
      const rare = rareRow()
      const { store, reads } = recordingStore(looked.store, 5)
      const s = spec(logs, [pred(logs, 'address', 'eq', rare.address), pred(logs, 'topic0', 'eq', rare.topic0)])
      const { result, got } = await check(s, store, exact)
      expect(got.length).toBe(1)
      const parts = reads.filter(r => isPartition(r.key))
      expect(partitionData(parts)).toEqual([])
      expect(rounds(parts)).toBe(2)
      for (const e of looked.entries) {
        const copy = e.lookup!
        const mine = parts.filter(r => r.key === copy.key)
        expect(mine.filter(r => r.offset + r.length > copy.tailOffset).map(r => [r.offset, r.offset + r.length])).toEqual([
          [copy.tailOffset, copy.bytes],
        ])
        expect(groupReads(parts, e).length).toBeLessThanOrEqual(2)
      }
      const home = looked.entries.find(e => e.from <= Number(rare.block_number) && Number(rare.block_number) <= e.to)!
      expect(groupReads(parts, home).length).toBeGreaterThanOrEqual(1)
      expect(result.stats.rowsScanned).toBeLessThanOrEqual(2 * GROUP * looked.entries.length)
      expect(result.stats.partitionsRead).toBe(looked.entries.length)
    })

    it("absent addresses read tails only: the bounds of the copies' row groups or the partitions' bloom filters rule them out", async () => {
      // Below and above every address: no group's bounds hold them.
      const outside = [new Uint8Array(20), new Uint8Array(20).fill(0xff)]
      const { store, reads } = recordingStore(looked.store)
      const { result, got } = await check(spec(logs, [pred(logs, 'address', 'in', ...outside)]), store, exact)
      expect(got).toEqual([])
      expect(partitionData(reads)).toEqual([])
      for (const e of looked.entries) expect(groupReads(reads, e)).toEqual([])
      expect(result.stats.rowsScanned).toBe(0)
      expect(result.stats.partitionsRead).toBe(looked.entries.length)

      const between = recordingStore(looked.store)
      const inside = await check(spec(logs, [pred(logs, 'address', 'eq', new Uint8Array(20).fill(0x42))]), between.store, exact)
      expect(inside.got).toEqual([])
      expect(partitionData(between.reads)).toEqual([])
      // Inside some group's bounds, but the bloom filters say absent (a false positive may cost one group).
      expect(looked.entries.reduce((n, e) => n + groupReads(between.reads, e).length, 0)).toBeLessThanOrEqual(1)
      expect(inside.result.stats.rowsScanned).toBeLessThanOrEqual(GROUP * looked.entries.length)
    })

    it("a hot address beyond the share is read through its copy's row groups, in fewer bytes than the block-ordered scan reads", async () => {
      const hot = lake.pools.hot.get(20)![0]
      const s = spec(logs, [pred(logs, 'address', 'eq', hot)])
      const copied = recordingStore(looked.store)
      const { got } = await check(s, copied.store, exact)
      expect(got.length).toBeGreaterThan(lake.rows.logs.length / 16)
      for (const e of looked.entries) {
        expect(groupReads(copied.reads, e).length).toBeGreaterThan(0)
        expect(partitionData(copied.reads).filter(r => r.key === e.key)).toEqual([])
      }
      // Below the tails, which a server keeps: the copies' groups against the partitions' pages.
      const plain = recordingStore(unlooked.store)
      await check(s, plain.store, exact)
      const bytes = (reads: ReadRecord[]) => reads.reduce((n, r) => n + r.length, 0)
      const groups = looked.entries.flatMap(e => groupReads(copied.reads, e))
      const pages = plain.reads.filter(r => unlooked.entries.some(e => e.key === r.key && r.offset < e.tailOffset))
      expect(bytes(groups)).toBeLessThan(bytes(pages))
    })

    it('hot addresses in one __in, read through the copies, come out in block order with every row', async () => {
      const hot = lake.pools.hot.get(20)!
      const { store, reads } = recordingStore(looked.store)
      const { got } = await check(spec(logs, [pred(logs, 'address', 'in', hot[2], hot[0])]), store, exact)
      expect(got.length).toBeGreaterThan(lake.rows.logs.length / 8)
      expect(looked.entries.every(e => groupReads(reads, e).length > 0)).toBe(true)
      expectBlockOrder(got)
    })

    it('a hot address beside a rare topic1 the bloom filters prune to one row group keeps the block-ordered scan: of the copies only the tails are read', async () => {
      const hot = lake.pools.hot.get(20)![0]
      const once = (r: Row) => r.topic1 instanceof Uint8Array && lake.rows.logs.filter(x => x.topic1 === r.topic1).length === 1
      const row = lake.rows.logs.find(r => r.address === hot && once(r))!
      const { store, reads } = recordingStore(looked.store)
      const { got } = await check(spec(logs, [pred(logs, 'address', 'eq', hot), pred(logs, 'topic1', 'eq', row.topic1)]), store, exact)
      expect(got.length).toBe(1)
      for (const e of looked.entries) {
        expect(groupReads(reads, e)).toEqual([])
        expectBloomsRead(reads, e, ['address', 'topic1'])
      }
      expect(looked.entries.filter(e => reads.some(r => r.key === e.key && r.offset < e.tailOffset)).length).toBe(1)
    })

    it('several rare addresses come out in (block, log index) order, within the block range, whatever fields are asked for', async () => {
      const rows = spreadRares()
      const addresses = rows.map(r => r.address)
      const s = spec(logs, [pred(logs, 'address', 'in', ...addresses)])
      const { store, reads } = recordingStore(looked.store)
      const { got } = await check(s, store, exact)
      expect(got.length).toBe(rows.length)
      expect(partitionData(reads)).toEqual([])
      expectBlockOrder(got)
      // Only the address and the range key: the order columns are not among the output ones.
      await check(
        spec(logs, [pred(logs, 'address', 'in', ...addresses)], { fields: ['address', 'block_number'].map(n => field(logs, n)) }),
        looked.store,
      )

      const cut = recordingStore(looked.store)
      const inRange = await check(spec(logs, [pred(logs, 'address', 'in', ...addresses)], { from: 1050, to: 1420 }), cut.store, exact)
      expect(inRange.got.length).toBeGreaterThan(0)
      expect(inRange.got.length).toBeLessThan(rows.length - 1)
      expect(inRange.got.every(r => Number(r.block_number) >= 1050 && Number(r.block_number) <= 1420)).toBe(true)
      expectBlockOrder(inRange.got)
      // The first partition, cut at block 1050, is read through its lookup copy only.
      const first = looked.entries[0]
      expect(groupReads(cut.reads, first).length).toBeGreaterThan(0)
      expect(partitionData(cut.reads.filter(r => r.key === first.key))).toEqual([])
    })

    for (const limit of [1, 2, 5]) {
      it(`with limit ${limit}, the pages concatenated equal the whole`, async () => {
        const addresses = spreadRares().map(r => r.address)
        const s = spec(logs, [pred(logs, 'address', 'in', ...addresses, lake.pools.warm.get(20)![0])], { from: 1050 })
        const whole = expected(lake.rows.logs, s.predicates, s.fields, [1050, 1499], 'block_number', ETH.id)
        const { store, reads } = recordingStore(looked.store)
        const pages: Record<string, unknown>[][] = []
        for (let from: number | undefined = 1050; from !== undefined;) {
          const r = await runQuery({ store, manifest: new ManifestReader(store), scan: exact }, { ...s, from, limit })
          const rows = batchRows(await collect(r.batches))
          expect(rows.length <= limit || new Set(rows.map(x => x.block_number)).size === 1).toBe(true)
          pages.push(rows)
          if (r.nextFrom !== undefined) expect(r.nextFrom).toBeGreaterThan(from)
          from = r.nextFrom
        }
        expect(pages.length).toBeGreaterThan(1)
        expect(pages.flat()).toEqual(whole)
        expect(
          reads.some(r => isLookup(r.key) && looked.entries.some(e => r.key === e.lookup!.key && r.offset < e.lookup!.tailOffset)),
        ).toBe(true)
      })
    }
  })

  it('opens a partition whose manifest entry predates bloom spans with one read of its whole tail', async () => {
    const { store: fs } = await tempStore()
    const r = rng(11)
    const parts = SPANS.slice(0, 2).map(span => ({ from: span[0], to: span[1], rows: makeRows(logs, blocksOf(span), r, lake.pools) }))
    const rows = parts.flatMap(p => p.rows)
    const entries = await buildLake(fs, ETH, logs, parts, LAYOUT, { entry: legacyEntry })
    expect(entries.every(e => e.blooms === undefined && e.footerOffset === undefined)).toBe(true)
    const { store, reads } = recordingStore(fs)
    const predicates = [pred(logs, 'address', 'in', ...lake.pools.hot.get(20)!.slice(0, 2))]
    const s = spec(logs, predicates, { from: 1000, to: 1199 })
    const result = await runQuery({ store, manifest: new ManifestReader(store), scan: exact }, s)
    expect(batchRows(await collect(result.batches))).toEqual(expected(rows, predicates, s.fields, [1000, 1199], 'block_number', ETH.id))
    for (const e of entries) {
      const tail = reads.filter(x => x.key === e.key && x.offset + x.length > e.tailOffset)
      expect(tail.map(x => [x.offset, x.offset + x.length])).toEqual([[e.tailOffset, e.bytes]])
    }
  })

  it('a full scan reads every row group once and decodes every row once', async () => {
    const counted = countingStore(lake.store)
    const { result } = await check(spec(logs, []), counted)
    const total = lake.entries.logs.reduce((n, e) => n + e.rowGroups.length, 0)
    expect(result.stats.rowGroupsRead).toBe(total)
    expect(result.stats.rowsScanned).toBe(lake.rows.logs.length)
    expect(result.stats.requests).toBe(counted.counts.requests)
  })

  it('a virtual predicate that excludes every row reads no partition', async () => {
    const { store, reads } = recordingStore(lake.store)
    await check(spec(logs, [pred(logs, 'chain', 'eq', 5n)]), store)
    expect(reads.filter(r => isPartition(r.key))).toEqual([])
  })

  it('an order filter on a hash or a 256-bit quantity reads only the row groups whose statistics it meets', async () => {
    const groups = lake.entries.transactions.reduce((n, e) => n + e.rowGroups.length, 0)
    expect(groups).toBeGreaterThan(4)
    const hashes = lake.rows.transactions.map(r => r.hash as Uint8Array).sort(compareBytes)
    for (const [op, bound] of [
      ['gte', hashes.at(-1)!],
      ['lte', hashes[0]],
    ] as const) {
      const { result, got } = await check(spec(transactions, [pred(transactions, 'hash', op, bound)]))
      expect(got).toHaveLength(1)
      expect({ op, read: result.stats.rowGroupsRead, total: result.stats.rowGroupsTotal }).toEqual({ op, read: 1, total: groups })
      expect(result.pushed).toEqual([`hash__${op}`])
    }
    const values = lake.rows.transactions.map(r => r.value as Uint8Array).sort(compareBytes)
    const above = values.at(-1)!.slice()
    above[31]++
    const { result, got } = await check(spec(transactions, [pred(transactions, 'value', 'gte', above)]))
    expect(got).toEqual([])
    expect(result.stats.rowGroupsRead).toBe(0)
    // Between the bounds every row group may hold a match: nothing is skipped.
    const middle = await check(spec(transactions, [pred(transactions, 'hash', 'gte', hashes[hashes.length >> 1])]))
    expect(middle.result.stats.rowGroupsRead).toBe(groups)
  })
})

describe('the manifest is walked shard by shard', () => {
  // Ten partitions of 100 blocks in five manifest shards of 200 blocks.
  let store: ObjectStore
  let rows: Row[]
  beforeAll(async () => {
    store = (await tempStore()).store
    const r = rng(5)
    const parts = Array.from({ length: 10 }, (_, i) => ({
      from: i * 100,
      to: i * 100 + 99,
      rows: makeRows(logs, blocksOf([i * 100, i * 100 + 99]), r, lake.pools, 3),
    }))
    rows = parts.flatMap(p => p.rows)
    await buildLake(store, ETH, logs, parts, LAYOUT, { shardSpan: 200 })
  })
  const isShard = (key: string) => key.includes('/manifest/logs/')

  it('a query over five shards has at most two shard reads in flight and reads each shard once', async () => {
    const { store: recorded, reads } = recordingStore(store, 5)
    const s = spec(logs, [], { from: 0, to: 999 })
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded), scan: { partitionLookAhead: 1 } }, s)
    expect(batchRows(await collect(result.batches))).toEqual(expected(rows, [], s.fields, [0, 999], 'block_number', ETH.id))
    const shards = reads.filter(r => isShard(r.key))
    expect(new Set(shards.map(r => r.key)).size).toBe(5)
    expect(shards.length).toBe(5)
    const inFlight = shards.map(a => shards.filter(b => b.started <= a.started && b.ended > a.started).length)
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(2)
    // Opening one partition at a time, the last shard is asked for only once earlier partitions were read.
    const last = shards[shards.length - 1]
    expect(reads.some(r => r.key.endsWith('.parquet') && r.ended < last.started)).toBe(true)
    expect(result.stats.partitionsTotal).toBe(10)
    expect(result.stats.rowGroupsTotal).toBe(result.stats.rowGroupsRead)
  })

  it('a one-block query loads the root and the one shard holding the block', async () => {
    const { store: recorded, reads } = recordingStore(store)
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, spec(logs, [], { from: 650, to: 650 }))
    expect(batchRows(await collect(result.batches))).toEqual(expected(rows, [], logs.fields, [650, 650], 'block_number', ETH.id))
    const manifest = reads.filter(r => r.key.includes('/manifest/')).map(r => r.key)
    expect(manifest.length).toBe(2)
    expect(manifest[0]).toMatch(/root\.json$/)
    expect(manifest[1]).toMatch(/\/manifest\/logs\/000003-g\d+\.json$/)
    expect(result.stats.partitionsTotal).toBe(10)
  })
})

describe('a value spread thin over a row group', () => {
  // One partition, one row group of 6,000 logs with 160 random bytes of data each: a topic0 in
  // every 300th log has 20 matches, each in a page of its own in every column, the data pages
  // ~48 KB apart. Without the value index (as for a value the index calls hot), the filter
  // round reads the topic0 chunk and the output round the pages holding the matches.
  const ROWS = 6_000
  const EVERY = 300
  let store: ObjectStore
  let rows: Row[]
  let entry: PartitionEntry
  const sig = Uint8Array.from({ length: 32 }, (_, i) => 0x40 + i)
  beforeAll(async () => {
    store = (await tempStore()).store
    const r = rng(11)
    const pools = makePools(r)
    rows = makeRows(logs, blocksOf([0, 1999]), r, pools, 12).slice(0, ROWS)
    const others = Array.from({ length: 8 }, () => randomBytes(r, 32))
    rows.forEach((row, i) => {
      row.topic0 = i % EVERY === EVERY / 2 ? sig : others[i % others.length]
      row.data = randomBytes(r, 160)
    })
    expect(rows.length).toBe(ROWS)
    const to = Number(rows[rows.length - 1].block_number)
    ;[entry] = await buildLake(store, ETH, logs, [{ from: 0, to, rows }], { rowGroupSize: ROWS })
  })

  it('is read in a few requests, not a request per page run: a hole between wanted pages is read when smaller than a request costs', async () => {
    const { store: recorded, reads } = recordingStore(store)
    const s: QuerySpec = {
      chain: ETH,
      dataset: logs,
      from: 0,
      to: Number(rows[ROWS - 1].block_number),
      predicates: [pred(logs, 'topic0', 'eq', sig)],
      fields: [...logs.fields],
    }
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, s)
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    expect(got.length).toBe(ROWS / EVERY)
    const data = reads.filter(r => r.key === entry.key && r.offset < entry.tailOffset)
    // the topic0 chunk, then the output pages of 20 rows in every column: one or two merged reads each
    expect(data.length).toBeLessThanOrEqual(4)
    expect(result.stats.rowGroupsRead).toBe(1)
  })

  it('gives the same rows when scans read into memory earlier scans read into, also after one stopped early', async () => {
    // memory given back is scribbled over: a byte read after that would fail its page checksum or differ
    const buffers = new (class extends ReadBuffers {
      override give(given: readonly Uint8Array[]) {
        for (const b of given) b.fill(0xaa)
        super.give(given)
      }
    })()
    const scan: ScanOptions = { buffers, tails: new TailCache() }
    let lent = 0
    const lending: ObjectStore = {
      ...store,
      get: (key, range) => {
        if (range && 'into' in range && range.into) lent++
        return store.get(key, range)
      },
    }
    const to = Number(rows[ROWS - 1].block_number)
    const query = (predicates: Predicate[]): QuerySpec => ({ chain: ETH, dataset: logs, from: 0, to, predicates, fields: [...logs.fields] })
    const run = async (s: QuerySpec) => {
      const result = await runQuery({ store: lending, manifest: new ManifestReader(lending), scan }, s)
      expect(batchRows(await collect(result.batches))).toEqual(expected(rows, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    }
    const thin = query([pred(logs, 'topic0', 'eq', sig)])
    await run(thin)
    expect(lent).toBeGreaterThan(0)
    const kept = buffers.size
    expect(kept).toBeGreaterThan(0)
    // a full scan, then the thin one again, each reading into the memory the one before read into
    await run(query([]))
    expect(buffers.size).toBeGreaterThanOrEqual(kept)
    // a scan stopped after its first batch keeps what it took
    const stopped = await runQuery({ store: lending, manifest: new ManifestReader(lending), scan }, query([]))
    for await (const batch of stopped.batches) {
      expect(batch.length).toBeGreaterThan(0)
      break
    }
    await run(thin)
    // scans at once share the memory and never read each other's
    await Promise.all([run(thin), run(query([])), run(query([pred(logs, 'topic0', 'in', sig, rows[1].topic0)])), run(thin)])
  })
})

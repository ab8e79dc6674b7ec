import { bytesEqual } from '../../src/columns/compare.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { parseRoot } from '../../src/manifest/read.ts'
import { encodeRoot } from '../../src/manifest/codec.ts'
import { hashHex } from '../../src/index/hash.ts'
import { rowFieldsOf } from '../../src/index/rows.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { runQuery } from '../../src/query/engine.ts'
import { IndexCache } from '../../src/index/read.ts'
import type { Predicate, QuerySpec } from '../../src/query/types.ts'
import { batchRows, buildLake, collect, expected, makePools, makeRows, randomBytes, rng, type Row } from './lake.ts'
import { recordingStore } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

// Indexed partitions published two at a time (so tiers merge them), a gap, then one partition
// published without an index: queries over the whole range mix both paths.
const INDEXED: [number, number][][] = [
  [
    [1000, 1099],
    [1100, 1199],
  ],
  [
    [1200, 1299],
    [1300, 1399],
  ],
  [
    [1400, 1499],
    [1500, 1599],
  ],
  [[1700, 1799]],
]
const PLAIN: [number, number] = [1800, 1899]
const LAYOUT = { rowGroupSize: 16, pageSize: 256 }
const blocksOf = ([a, b]: [number, number]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)

// The main lake stores inline the rows of values in at most INLINE (8) rows of a segment, so
// a value is inline in small segments and over the threshold once merged (mixed answers); the
// second lake, the same rows without inline rows, keeps the candidate and lookup-copy paths.
const INLINE = 8
let store: ObjectStore
let plainStore: ObjectStore
const rows: Record<string, Row[]> = {}
// Lookup copies in small row groups, so these small partitions get one (as a 200k-log partition does);
// the fields' own inline caps left out, so INLINE binds every column.
const withCopies = (d: DatasetDecl): DatasetDecl => ({
  ...d,
  ...(d.lookup ? { lookup: { ...d.lookup, rowGroupSize: 8 } } : {}),
  fields: d.fields.map(f => (typeof f.index === 'object' ? { ...f, index: true } : f)),
})

beforeAll(async () => {
  ;({ store } = await tempStore())
  ;({ store: plainStore } = await tempStore())
  const r = rng(11)
  const pools = makePools(r)
  for (const dataset of [logs, transactions]) {
    rows[dataset.storage] = []
    for (const spans of INDEXED) {
      const parts = spans.map(span => ({ from: span[0], to: span[1], rows: makeRows(dataset, blocksOf(span), r, pools, 8) }))
      rows[dataset.storage].push(...parts.flatMap(p => p.rows))
      await buildLake(store, ETH, withCopies(dataset), parts, LAYOUT, { index: true, inlineRows: INLINE })
      await buildLake(plainStore, ETH, withCopies(dataset), parts, LAYOUT, { index: true, inlineRows: 0 })
    }
    const plain = { from: PLAIN[0], to: PLAIN[1], rows: makeRows(dataset, blocksOf(PLAIN), r, pools, 8) }
    rows[dataset.storage].push(...plain.rows)
    await buildLake(store, ETH, withCopies(dataset), [plain], LAYOUT)
    await buildLake(plainStore, ETH, withCopies(dataset), [plain], LAYOUT)
  }
})

afterAll(removeTempDirs)

const field = (d: DatasetDecl, name: string) => d.fields.find(f => f.name === name)!

/** Values of `column` by how often they occur: the commonest (hot), one seen a few times, one seen once, and one never seen. */
function valuesOf(d: DatasetDecl, column: string, r: () => number): StoredValue[] {
  const counts = new Map<string, { v: StoredValue; n: number }>()
  for (const row of rows[d.storage]) {
    const v = row[column]
    if (!(v instanceof Uint8Array)) continue
    const k = v.join(',')
    counts.set(k, { v, n: (counts.get(k)?.n ?? 0) + 1 })
  }
  const sorted = [...counts.values()].sort((a, b) => b.n - a.n)
  const pick = (xs: { v: StoredValue }[]) => xs[Math.floor(r() * xs.length)].v
  const width = (sorted[0].v as Uint8Array).length
  return [sorted[0].v, pick(sorted.filter(c => c.n > 1 && c.n < 20)), pick(sorted.filter(c => c.n === 1)), randomBytes(r, width)]
}

function randomSpec(r: () => number): QuerySpec {
  const dataset = r() < 0.7 ? logs : transactions
  const indexed = dataset === logs ? ['address', 'topic0', 'topic1', 'topic2', 'topic3'] : ['hash', 'from', 'to']
  const predicates: Predicate[] = []
  const n = 1 + Math.floor(r() * 2)
  for (const name of [...indexed].sort(() => r() - 0.5).slice(0, n)) {
    const pool = valuesOf(dataset, name, r)
    const k = r() < 0.5 ? 1 : 2 + Math.floor(r() * 3)
    const values = Array.from({ length: k }, () => pool[Math.floor(r() * pool.length)])
    predicates.push({ field: field(dataset, name), op: k === 1 ? 'eq' : 'in', values })
  }
  if (r() < 0.2) predicates.push({ field: field(dataset, dataset === logs ? 'log_index' : 'transaction_index'), op: 'lte', values: [3n] })
  if (r() < 0.15) predicates.push({ field: field(dataset, 'block_number'), op: 'gte', values: [BigInt(1000 + Math.floor(r() * 800))] })
  const from = 950 + Math.floor(r() * 900)
  // at least 101 blocks, so never inside the gap alone
  const to = Math.min(1950, from + 101 + Math.floor(r() * 900))
  // a projection in any order, now and then
  const fields = r() < 0.3 ? [...dataset.fields].sort(() => r() - 0.5).slice(0, 1 + Math.floor(r() * 4)) : [...dataset.fields]
  return {
    chain: ETH,
    dataset,
    from,
    to,
    predicates,
    fields,
    ...(r() < 0.25 ? { limit: 1 + Math.floor(r() * 40) } : {}),
  }
}

async function answer(s: QuerySpec, noIndex: boolean, cache?: IndexCache, from: ObjectStore = store) {
  const result = await runQuery({ store: from, manifest: new ManifestReader(from), noIndex, index: cache }, s)
  return { result, rows: batchRows(await collect(result.batches)) }
}

/** `column` = `value` over `dataset` from block 1000 to `to`, through a store that records every read (default: the lake without inline rows). */
async function recordedQuery(column: string, value: StoredValue, to: number, dataset: DatasetDecl = logs, from: ObjectStore = plainStore) {
  const s: QuerySpec = {
    chain: ETH,
    dataset,
    from: 1000,
    to,
    predicates: [{ field: field(dataset, column), op: 'eq', values: [value] }],
    fields: [...dataset.fields],
  }
  const { store: recorded, reads } = recordingStore(from)
  const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, s)
  return { s, result, got: batchRows(await collect(result.batches)), reads }
}

describe('the value index in the planner', () => {
  it('publishes segments with the partitions they cover, and none for a partition published without', async () => {
    const root = parseRoot((await store.get(rootKey(ETH)))!.body)
    const index = root.datasets.logs.index!
    const covered = index.segments.flatMap(s => s.coverage).sort((a, b) => a[0] - b[0])
    expect(covered).toEqual([
      [1000, 1599],
      [1700, 1799],
    ])
    // four publications merged by the tier policy into fewer segments
    expect(index.segments.length).toBeLessThan(4)
    expect(Object.keys(index.segments[0].columns).sort()).toEqual(['address', 'topic0', 'topic1', 'topic2', 'topic3'])
  })

  it('gives the same rows in the same order as the per-partition path and a plain filter (random values, ranges, __in, fields, limit and its cursor)', async () => {
    const r = rng(2024)
    const cache = new IndexCache()
    const plainCache = new IndexCache()
    let used = 0
    let hot = 0
    let inline = 0
    let mixed = 0
    for (let i = 0; i < 100; i++) {
      const s = randomSpec(r)
      const viaIndex = await answer(s, false, i % 2 ? cache : undefined)
      const viaCandidates = await answer(s, false, i % 2 ? plainCache : undefined, plainStore)
      const plain = await answer(s, true)
      expect(viaIndex.rows).toEqual(plain.rows)
      expect(viaCandidates.rows).toEqual(plain.rows)
      expect(viaIndex.result.nextFrom).toBe(plain.result.nextFrom)
      if (s.limit === undefined) {
        const range = viaIndex.result.range
        expect(viaIndex.rows).toEqual(expected(rows[s.dataset.storage], s.predicates, s.fields, range, s.dataset.rangeKey, ETH.id))
      } else if (plain.result.nextFrom !== undefined) {
        // the next page, from the cursor
        const next = { ...s, from: plain.result.nextFrom }
        expect((await answer(next, false, cache)).rows).toEqual((await answer(next, true)).rows)
      }
      if (viaIndex.result.index) used++
      if (viaIndex.result.index?.hot.length) hot++
      if (viaIndex.result.index?.rows) {
        inline++
        if (viaIndex.result.stats.partitionsRead > 1) mixed++
      }
    }
    expect(used).toBeGreaterThan(60)
    expect(hot).toBeGreaterThan(0)
    expect(inline).toBeGreaterThan(20)
    expect(mixed).toBeGreaterThan(0)
  })

  it('answers values spread over many partitions from the index, opening no partition', async () => {
    // topic1 values each in one row, from the six partitions of blocks 1000-1599 (all indexed), as one __in list
    const counts = new Map<string, number>()
    for (const row of rows.logs)
      if (row.topic1 instanceof Uint8Array) counts.set(row.topic1.join(','), (counts.get(row.topic1.join(',')) ?? 0) + 1)
    const byPartition = new Map<number, StoredValue>()
    for (const row of rows.logs) {
      const block = Number(row.block_number)
      if (block < 1600 && row.topic1 instanceof Uint8Array && counts.get(row.topic1.join(',')) === 1)
        byPartition.set(Math.floor(block / 100), row.topic1)
    }
    const values = [...byPartition.values()].slice(0, 6)
    expect(values.length).toBe(6)
    const s: QuerySpec = {
      chain: ETH,
      dataset: logs,
      from: 1000,
      to: 1599,
      predicates: [{ field: field(logs, 'topic1'), op: 'in', values }],
      fields: [...logs.fields],
    }
    const { store: recorded, reads } = recordingStore(store)
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, s)
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows.logs, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    expect(got.length).toBe(6)
    expect(result.index?.rows).toBe(6)
    expect(result.stats.partitionsRead).toBe(0)
    expect(reads.filter(x => x.key.endsWith('.parquet'))).toEqual([])
    expect(reads.filter(x => x.key.includes('/manifest/') && !x.key.endsWith('root.json'))).toEqual([])
    expect(reads.filter(x => x.key.endsWith('.rows')).length).toBeGreaterThan(0)
  })

  it('reads each index object once in a query with two predicates on one indexed column, without a server cache', async () => {
    const inRange = rows.logs.filter(r => Number(r.block_number) >= 1000)
    const a = inRange[0].address as Uint8Array
    const b = inRange.find(r => !bytesEqual(r.address as Uint8Array, a))!.address as Uint8Array
    const s: QuerySpec = {
      chain: ETH,
      dataset: logs,
      from: 1000,
      to: 1799,
      predicates: [
        { field: field(logs, 'address'), op: 'eq', values: [a] },
        { field: field(logs, 'address'), op: 'in', values: [a, b] },
      ],
      fields: [...logs.fields],
    }
    const { store: recorded, reads } = recordingStore(store)
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, s)
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows.logs, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    const index = reads.filter(x => x.key.includes('/index/')).map(x => `${x.key} ${x.offset} ${x.length}`)
    expect(index.length).toBeGreaterThan(1)
    expect(new Set(index).size).toBe(index.length)
  })

  it('fails visibly, naming the object and the value, when a byte of a rows object is flipped', async () => {
    const value = valuesOf(logs, 'topic2', rng(12))[2]
    const { reads } = await recordedQuery('topic2', value, 1799, logs, store)
    const key = reads.find(x => x.key.endsWith('.rows'))!.key
    const original = (await store.get(key))!.body.slice()
    const read = reads.find(x => x.key === key)!
    const damaged = original.slice()
    damaged[read.offset + Math.floor(read.length / 2)] ^= 0x10
    await store.put(key, damaged)
    try {
      await expect(recordedQuery('topic2', value, 1799, logs, store)).rejects.toThrow(/rows of 0x[0-9a-f]{64} at \d+ fail their CRC-32/)
      await expect(recordedQuery('topic2', value, 1799, logs, store)).rejects.toMatchObject({ name: 'IndexObjectError', key })
    } finally {
      await store.put(key, original)
    }
  })

  it('answers segments written in another slice layout (an older codec id) by their postings, never decoding their rows', async () => {
    const value = valuesOf(logs, 'topic2', rng(12))[2]
    const before = await recordedQuery('topic2', value, 1799, logs, store)
    expect(before.result.index?.rows).toBe(1)
    const original = (await store.get(rootKey(ETH)))!.body
    const root = parseRoot(original)
    // the id the first layout (row by row, rows1) gave the logs' fields
    const old = hashHex(
      new TextEncoder().encode(
        `rows1:${rowFieldsOf(logs)
          .map(f => `${f.column}:${f.kind}`)
          .join(',')}`,
      ),
    )
    for (const segment of root.datasets.logs.index!.segments)
      for (const c of Object.values(segment.columns)) if (c.rows) c.rows = { ...c.rows, codec: old }
    await store.put(rootKey(ETH), new TextEncoder().encode(JSON.stringify(encodeRoot(root))))
    try {
      const after = await recordedQuery('topic2', value, 1799, logs, store)
      expect(after.got).toEqual(before.got)
      expect(after.result.index?.columns).toEqual(['topic2'])
      expect(after.result.index?.rows).toBe(0)
      expect(after.reads.filter(x => x.key.endsWith('.rows'))).toEqual([])
      expect(after.result.stats.partitionsRead).toBeGreaterThan(0)
    } finally {
      await store.put(rootKey(ETH), original)
    }
  })

  it('opens only the partitions that hold a rare value, and no bloom filter', async () => {
    const { result, got, reads } = await recordedQuery('topic1', valuesOf(logs, 'topic1', rng(5))[2], 1899)
    expect(got.length).toBe(1)
    expect(result.index?.columns).toEqual(['topic1'])
    // one partition named by the index, plus the one published without an index (walked as before)
    expect(result.stats.partitionsRead).toBe(2)
    const shards = reads.filter(x => x.key.includes('/manifest/') && !x.key.endsWith('root.json'))
    expect(shards.length).toBe(1)
  })

  it('reads a rare address through the lookup copies the index names, not the partitions themselves', async () => {
    const { s, result, got, reads } = await recordedQuery('address', valuesOf(logs, 'address', rng(8))[1], 1799)
    expect(got).toEqual(expected(rows.logs, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    expect(got.length).toBeGreaterThan(1)
    expect(result.index?.columns).toEqual(['address'])
    const data = reads.filter(x => x.key.endsWith('.parquet'))
    expect(data.length).toBeGreaterThan(0)
    expect(data.every(x => x.key.includes('/by-address/'))).toBe(true)
  })

  it("reads a rare sender's transactions through the lookup copies: the copy's tail and one ranged read per partition holding it", async () => {
    const { s, result, got, reads } = await recordedQuery('from', valuesOf(transactions, 'from', rng(9))[1], 1799, transactions)
    expect(got).toEqual(expected(rows.transactions, s.predicates, s.fields, result.range, 'block_number', ETH.id))
    expect(got.length).toBeGreaterThan(1)
    expect(result.index?.columns).toEqual(['from'])
    const data = reads.filter(x => x.key.endsWith('.parquet'))
    expect(data.every(x => x.key.includes('/by-from/'))).toBe(true)
    const holding = new Set(got.map(row => Math.floor(Number(row.block_number) / 100)))
    expect(new Set(data.map(x => x.key)).size).toBe(holding.size)
    expect(data.length).toBeLessThanOrEqual(2 * holding.size)
  })

  it('reports a hot value and still answers it exactly', async () => {
    const hotValue = valuesOf(logs, 'address', rng(6))[0]
    const s: QuerySpec = {
      chain: ETH,
      dataset: logs,
      from: 1000,
      to: 1799,
      predicates: [{ field: field(logs, 'address'), op: 'eq', values: [hotValue] }],
      fields: [...logs.fields],
    }
    const viaIndex = await answer(s, false)
    expect(viaIndex.result.index?.hot.map(h => h.column)).toEqual(['address'])
    expect(viaIndex.rows).toEqual(expected(rows.logs, s.predicates, s.fields, viaIndex.result.range, 'block_number', ETH.id))
  })
})

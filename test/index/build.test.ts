import { describe, expect, it } from 'vitest'
import { buildSegment, hotCap, type SegmentSpec } from '../../src/index/build.ts'
import { lookupValues, planLookup } from '../../src/index/lookup.ts'
import { bucketKey, decodePack, encodePack, IndexObjectError, log2, packKey, seal, unseal } from '../../src/index/format.ts'
import { valueKey } from '../../src/index/hash.ts'
import type { IndexObject } from '../../src/index/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { address, candidateSet, entryOf, hex, memoryStore, randomLake, type Lake } from './helpers.ts'
import { buildSegments } from '../../src/index/publish.ts'
import { packBatch, type ColumnBatch, type PackedBatch } from '../../src/columns/batch.ts'
import { storedFields, writePartition } from '../../src/parquet/write.ts'
import { indexedColumns } from '../../src/schema/dataset.ts'
import { generatedDatasets, randomBatch } from '../query/lake.ts'

const spec = (bucketBytes = 2048): SegmentSpec => ({ prefix: 'evm-1/index/logs', columns: ['a', 'b'], bucketBytes })

async function stored(objects: IndexObject[]) {
  const store = memoryStore()
  for (const o of objects) await store.put(o.key, o.bytes)
  store.reset()
  return store
}

/** Values to look up: some present (rare and common), some absent. */
function probes(lake: Lake, column: 'a' | 'b', seed: number, n: number): Uint8Array[] {
  const r = mulberry32(seed)
  const present = [...lake.truth[column].keys()]
  return Array.from({ length: n }, (_, i) => {
    if (i % 3 === 2) return address(5e6 + Math.floor(r() * 1e6))
    const h = present[Math.floor(r() * present.length)]
    return Uint8Array.from(h.match(/../g)!.map(x => parseInt(x, 16)))
  })
}

describe('buildSegment → bytes → lookupValues', () => {
  it('finds exactly the row groups of present values, nothing for absent ones, over several buckets', async () => {
    const lake = randomLake(1, { partitions: 6, groups: 8, rows: 200, universe: 3000 })
    const built = buildSegment(spec(), lake.inputs)
    expect(built.descriptor.columns.a.buckets).toBeGreaterThan(4)
    expect(built.descriptor.columns.b.buckets).toBeGreaterThan(4)
    expect(built.descriptor.partitions).toBe(6)
    expect(built.descriptor.rowGroups).toBe(48)
    expect(built.descriptor.coverage).toEqual([[0, 599]])
    const store = await stored(built.objects)
    const index = { prefix: spec().prefix, segments: [built.descriptor] }
    let checked = 0
    for (const column of ['a', 'b'] as const) {
      for (const v of probes(lake, column, 2, 60)) {
        const got = await lookupValues(store, index, column, [v])
        const truth = lake.truth[column].get(hex(v)) ?? new Set()
        expect(got.hot).toEqual([])
        expect(candidateSet(got.partitions)).toEqual(truth)
        checked += truth.size
      }
    }
    expect(checked).toBeGreaterThan(100)
  })

  it('answers an `in` list as the union, and hands out what opens a partition without the manifest', async () => {
    const lake = randomLake(3, { partitions: 3, groups: 4, rows: 100, universe: 500 })
    // One partition with a lookup copy (its key shares the partition key's prefix and suffix), the others without.
    const copy = {
      column: 'address',
      key: lake.inputs[1].entry.key.replace('/logs/', '/logs/by-address/'),
      bytes: 9_000,
      tailOffset: 8_000,
    }
    lake.inputs[1].entry.lookup = { ...copy, tailCrc: 0xfedcba98 }
    const built = buildSegment(spec(), lake.inputs)
    const store = await stored(built.objects)
    const values = probes(lake, 'b', 4, 9)
    const got = await lookupValues(store, { prefix: spec().prefix, segments: [built.descriptor] }, 'b', [...values, values[0]])
    const union = new Set(values.flatMap(v => [...(lake.truth.b.get(hex(v)) ?? [])]))
    expect(candidateSet(got.partitions)).toEqual(union)
    expect(got.partitions.map(p => p.entry.from)).toEqual([...got.partitions.map(p => p.entry.from)].sort((x, y) => x - y))
    const e = lake.inputs[1].entry
    expect(got.partitions.find(p => p.entry.key === e.key)?.entry).toEqual({
      key: e.key,
      from: e.from,
      to: e.to,
      rows: e.rows,
      bytes: e.bytes,
      tailOffset: e.tailOffset,
      footerOffset: e.footerOffset,
      bloomOffset: e.blooms!.address.offset,
      rowGroupCount: 4,
      lookup: { ...copy, tailCrc: 0xfedcba98 },
    })
    expect(got.partitions.every(p => (p.entry.key === e.key) === (p.entry.lookup !== undefined))).toBe(true)
  })

  it('indexes text values (Move entry functions) by their UTF-8', async () => {
    const fns = ['0x1::coin::transfer', '0x1::aptos_account::transfer', '0xcafe::dex::swap', 'ünïcode::m::f']
    const inputs = [0, 1].map(p => ({
      entry: entryOf(p * 10, p * 10 + 9, 3, 2, `s${p}`),
      rowGroups: [0, 1, 2].map(g => ({ a: [fns[(p + g) % 4], null], b: [fns[3 - g]] })),
    }))
    const built = buildSegment(spec(), inputs)
    const store = await stored(built.objects)
    const index = { prefix: spec().prefix, segments: [built.descriptor] }
    const got = await lookupValues(store, index, 'a', ['0xcafe::dex::swap'])
    expect(got.partitions.map(p => [p.entry.from, p.rowGroups])).toEqual([
      [0, [2]],
      [10, [1]],
    ])
    expect((await lookupValues(store, index, 'b', ['ünïcode::m::f'])).partitions.map(p => [p.entry.from, p.rowGroups])).toEqual([
      [0, [0]],
      [10, [0]],
    ])
    expect((await lookupValues(store, index, 'a', ['0x1::coin::Transfer'])).partitions).toEqual([])
  })

  it('keeps a value in more than max(64, 1/8 of the row groups) row groups as hot, without postings', async () => {
    // 16 partitions × 40 row groups = 640 row groups: the cap is 80
    expect(hotCap(640)).toBe(80)
    expect(hotCap(100)).toBe(64)
    const everywhere = address(1)
    const inCap = address(2)
    const overCap = address(3)
    const inputs = Array.from({ length: 16 }, (_, p) => ({
      entry: entryOf(p * 10, p * 10 + 9, 40, 3, `h${p}`),
      rowGroups: Array.from({ length: 40 }, (_, g) => {
        const ordinal = p * 40 + g
        return { a: [everywhere, ordinal < 80 ? inCap : null, ordinal < 81 ? overCap : null], b: [] }
      }),
    }))
    const built = buildSegment(spec(), inputs)
    const store = await stored(built.objects)
    const index = { prefix: spec().prefix, segments: [built.descriptor] }
    const hot = await lookupValues(store, index, 'a', [everywhere])
    expect(hot.hot).toEqual([{ value: everywhere, ranges: [[0, 159]] }])
    expect(hot.scan).toEqual([[0, 159]])
    expect(hot.partitions).toEqual([])
    const capped = await lookupValues(store, index, 'a', [inCap])
    expect(capped.hot).toEqual([])
    expect(capped.partitions.reduce((n, p) => n + p.rowGroups.length, 0)).toBe(80)
    expect((await lookupValues(store, index, 'a', [overCap])).hot.length).toBe(1)
    // a hot value keeps its key only: the column stays small
    expect(built.descriptor.columns.a.bytes).toBeLessThan(built.objects.length * 100 + 80 * 3)
  })

  it('is deterministic: the same partitions, in any order, give the same keys and bytes', () => {
    const lake = randomLake(5, { partitions: 5, groups: 4, rows: 100, universe: 1000 })
    const one = buildSegment(spec(), lake.inputs)
    const two = buildSegment(spec(), [...lake.inputs].reverse())
    expect(two.descriptor).toEqual(one.descriptor)
    expect(two.objects.map(o => o.key)).toEqual(one.objects.map(o => o.key))
    two.objects.forEach((o, i) => expect(hex(o.bytes)).toBe(hex(one.objects[i].bytes)))
    const other = buildSegment(spec(), randomLake(6, { partitions: 5, groups: 4, rows: 100, universe: 1000 }).inputs)
    expect(other.descriptor.columns.a.id).not.toBe(one.descriptor.columns.a.id)
  })

  it('refuses overlapping partitions and values that do not match the entry', () => {
    const lake = randomLake(7, { partitions: 2, groups: 2, rows: 10, universe: 50 })
    expect(() => buildSegment(spec(), [lake.inputs[0], lake.inputs[0]])).toThrow(/overlaps/)
    expect(() => buildSegment(spec(), [{ ...lake.inputs[0], rowGroups: lake.inputs[0].rowGroups.slice(1) }])).toThrow(
      /values for 1 row groups/,
    )
    expect(() => buildSegment({ ...spec(), columns: ['a', 'c'] }, lake.inputs)).toThrow(/no values for indexed column c/)
  })

  it('keeps a descriptor small: ~140 bytes of JSON and ~60–75 more per column (logs: 5 columns, < 110 a column)', () => {
    const lake = randomLake(8, { partitions: 40, groups: 4, rows: 50, universe: 2000, firstBlock: 24_000_000, blocksPerPartition: 10_000 })
    const d = buildSegment(spec(), lake.inputs).descriptor
    expect(d.table).toBeDefined()
    expect(d.columns.a.pack).toBeDefined()
    const column = JSON.stringify(d.columns.a).length + ',"a":'.length
    const segment = JSON.stringify({ ...d, columns: {} }).length
    expect(segment).toBeLessThan(150)
    expect(column).toBeLessThan(80)
    expect((segment + 5 * column) / 5).toBeLessThan(110)
  })

  it('packs the buckets of a column of several buckets up to the cap, as stored, and no column of one bucket', () => {
    const lake = randomLake(8, { partitions: 40, groups: 4, rows: 50, universe: 2000 })
    const built = buildSegment(spec(), lake.inputs)
    const object = (key: string) => built.objects.find(o => o.key === key)!.bytes
    for (const column of ['a', 'b']) {
      const c = built.descriptor.columns[column]
      expect(c.buckets).toBeGreaterThan(1)
      const pack = object(packKey(spec().prefix, built.descriptor, column))
      expect(c.pack).toBe(pack.length)
      const parts = decodePack(unseal('pack', pack, { kind: 'pack', id: c.id, bucket: 0, log2Buckets: log2(c.buckets) }))
      expect(parts).toEqual(Array.from({ length: c.buckets }, (_, b) => object(bucketKey(spec().prefix, built.descriptor, column, b))))
      expect(c.bytes).toBe(parts.reduce((n, p) => n + p.length, 0))
    }
    // over the cap, or in one bucket: buckets only
    const capped = buildSegment({ ...spec(), packBytes: built.descriptor.columns.a.bytes - 1 }, lake.inputs)
    expect(capped.descriptor.columns.a.pack).toBeUndefined()
    expect(capped.objects.filter(o => o.key.endsWith('.pack')).length).toBe(
      capped.descriptor.columns.b.bytes <= built.descriptor.columns.a.bytes - 1 ? 1 : 0,
    )
    const single = buildSegment(spec(1 << 20), lake.inputs)
    expect(single.descriptor.columns.a.buckets).toBe(1)
    expect(single.descriptor.columns.a.pack).toBeUndefined()
    expect(single.objects.some(o => o.key.endsWith('.pack'))).toBe(false)
  })
})

describe('damaged index objects', () => {
  async function setup() {
    const lake = randomLake(9, { partitions: 40, groups: 4, rows: 50, universe: 800 })
    const built = buildSegment(spec(), lake.inputs)
    expect(built.descriptor.table).toBeDefined()
    const store = await stored(built.objects)
    const index = { prefix: spec().prefix, segments: [built.descriptor] }
    const v = probes(lake, 'a', 1, 1)[0]
    const plan = (await lookupValues(store, index, 'a', [v])).reads
    expect(plan).toBe(2)
    const [tableKey, bucketKey] = store.gets
    return { store, index, v, tableKey, bucketKey }
  }
  const flip = (bytes: Uint8Array, at: number) => {
    const out = bytes.slice()
    out[at] ^= 0x10
    return out
  }

  it('throws an error naming the object for a flipped byte, a truncation, a wrong object or a missing one', async () => {
    const { store, index, v, tableKey, bucketKey } = await setup()
    const bucket = store.objects.get(bucketKey)!
    const lookup = () => lookupValues(store, index, 'a', [v])
    for (const at of [0, 5, bucket.length - 30, bucket.length - 20, bucket.length - 3]) {
      store.objects.set(bucketKey, flip(bucket, at))
      await expect(lookup()).rejects.toThrow(new RegExp(`index object ${bucketKey} is damaged`))
    }
    store.objects.set(bucketKey, bucket.subarray(0, bucket.length - 100))
    await expect(lookup()).rejects.toThrow(IndexObjectError)
    const other = [...store.objects.keys()].find(k => k !== bucketKey && k.includes('/a/'))!
    store.objects.set(bucketKey, store.objects.get(other)!)
    await expect(lookup()).rejects.toThrow(/its trailer names/)
    store.objects.set(bucketKey, bucket)
    const table = store.objects.get(tableKey)!
    store.objects.set(tableKey, flip(table, 3))
    await expect(lookup()).rejects.toThrow(new RegExp(`index object ${tableKey} is damaged: checksum`))
    store.objects.delete(tableKey)
    await expect(lookup()).rejects.toThrow(`index object ${tableKey} is missing`)
    store.objects.set(tableKey, table)
    expect((await lookup()).partitions.length).toBeGreaterThan(0)
  })

  it('throws an error naming the pack for a flipped byte or truncation, and the bucket for a wrong bucket inside it', async () => {
    const { store, index } = await setup()
    const d = index.segments[0]
    const key = packKey(index.prefix, d, 'a')
    const values = Array.from({ length: 40 }, (_, i) => address(i))
    expect(planLookup(index, 'a', values.map(valueKey)).some(r => r.kind === 'pack')).toBe(true)
    const lookup = () => lookupValues(store, index, 'a', values)
    const truth = (await lookup()).partitions
    const pack = store.objects.get(key)!
    for (const at of [0, 3, pack.length >> 1, pack.length - 30, pack.length - 3]) {
      store.objects.set(key, flip(pack, at))
      await expect(lookup()).rejects.toThrow(new RegExp(`index object ${key} is damaged`))
    }
    store.objects.set(key, pack.subarray(0, pack.length - 100))
    await expect(lookup()).rejects.toThrow(new RegExp(`index object ${key} is damaged`))
    // a pack sealed over its buckets in another order: each bucket's own trailer refuses it
    const c = d.columns.a
    const parts = decodePack(unseal(key, pack, { kind: 'pack', id: c.id, bucket: 0, log2Buckets: log2(c.buckets) }))
    store.objects.set(
      key,
      seal(encodePack([parts[1], parts[0], ...parts.slice(2)]), { kind: 'pack', id: c.id, bucket: 0, log2Buckets: log2(c.buckets) }),
    )
    await expect(lookup()).rejects.toThrow(new RegExp(`index object ${bucketKey(index.prefix, d, 'a', 0)} is damaged: its trailer names`))
    store.objects.delete(key)
    await expect(lookup()).rejects.toThrow(`index object ${key} is missing`)
    store.objects.set(key, pack)
    expect((await lookup()).partitions).toEqual(truth)
  })
})

describe('property: candidates are a superset of the truth, equal to it with no hot value', () => {
  it.each([11, 12, 13, 14, 15, 16])('seed %i', async seed => {
    const r = mulberry32(seed)
    const shape = {
      partitions: 1 + Math.floor(r() * 12),
      groups: 1 + Math.floor(r() * 12),
      rows: 1 + Math.floor(r() * 120),
      universe: 10 + Math.floor(r() * 3000),
      hot: Math.floor(r() * 3),
    }
    const lake = randomLake(seed, shape)
    const built = buildSegment(spec(256 + Math.floor(r() * 4096)), lake.inputs)
    const store = await stored(built.objects)
    const index = { prefix: spec().prefix, segments: [built.descriptor] }
    for (const column of ['a', 'b'] as const) {
      const values = probes(lake, column, seed, 30)
      for (let i = 0; i < values.length; i += 3) {
        const some = values.slice(i, i + 1 + (i % 4))
        const got = await lookupValues(store, index, column, some)
        const truth = new Set(some.flatMap(v => [...(lake.truth[column].get(hex(v)) ?? [])]))
        const found = candidateSet(got.partitions)
        const inScan = (where: string) =>
          got.scan.some(([a, b]) => {
            const p = lake.inputs.find(x => where.startsWith(x.entry.key))!.entry
            return p.from >= a && p.to <= b
          })
        for (const t of truth) expect(found.has(t) || inScan(t)).toBe(true)
        if (got.hot.length === 0) expect(found).toEqual(truth)
        else
          expect(
            got.hot.every(h => (lake.truth[column].get(hex(h.value as Uint8Array))?.size ?? 0) > hotCap(built.descriptor.rowGroups)),
          ).toBe(true)
      }
    }
  })
})

describe('buildSegments over packed rows', () => {
  it('builds the same objects as from the same rows plain, in every indexed dataset', () => {
    const datasets = generatedDatasets().filter(d => indexedColumns(d).length > 0)
    expect(datasets.length).toBeGreaterThan(6)
    const chain = { family: 'evm' as const, id: 1, code: 'ETH' }
    for (const dataset of datasets) {
      const plain = randomBatch(dataset, 2000, 60, dataset.name.length + 7, 20)
      const packed = packBatch(storedFields(dataset), plain)
      const entry = { key: `${dataset.storage}/p`, ...writePartition(dataset, plain, { from: 2000, to: 2059 }, { rowGroupSize: 40 }).entry }
      const objects = (batch: ColumnBatch | PackedBatch) =>
        buildSegments(chain, [{ dataset, partitions: [{ entry, batch }] }]).get(dataset.storage)!.built.objects
      const [a, b] = [objects(plain), objects(packed)]
      expect(
        b.map(o => o.key),
        dataset.name,
      ).toEqual(a.map(o => o.key))
      b.forEach((o, i) => expect(Buffer.from(o.bytes).equals(Buffer.from(a[i].bytes)), `${dataset.name} ${o.key}`).toBe(true))
    }
  })
})

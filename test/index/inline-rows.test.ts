import { describe, expect, it } from 'vitest'
import { buildSegment, hotCap, type PartitionInput, type SegmentSpec } from '../../src/index/build.ts'
import { bucketOf, log2 } from '../../src/index/format.ts'
import { valueKey } from '../../src/index/hash.ts'
import { mergeSegments } from '../../src/index/merge.ts'
import { segmentSource, storeReader } from '../../src/index/read.ts'
import { decodeSlice, rowCodecId, type RowField } from '../../src/index/rows.ts'
import { segmentKeys } from '../../src/index/tiers.ts'
import type { IndexObject, SegmentDescriptor } from '../../src/index/types.ts'
import { address, entryOf, hex, memoryStore, randomLake, type MemoryStore } from './helpers.ts'

const fields: RowField[] = [
  { column: 'block', kind: 'u64int' },
  { column: 'n', kind: 'u64int' },
  { column: 'a', kind: 'address' },
  { column: 'b', kind: 'address' },
]
const MAX = 8
const spec: SegmentSpec = { prefix: 'evm-1/index/logs', columns: ['a', 'b'], bucketBytes: 1024, rows: { fields, max: MAX } }

/** The lake's partitions with their rows: each row numbered (`n`), so a decoded row names its source. */
function lake(seed: number, partitions: number) {
  const l = randomLake(seed, { partitions, groups: 4, rows: 60, universe: 200, blocksPerPartition: 100, firstBlock: seed * 10_000 })
  let n = 0n
  // value hex → row numbers holding it, per column
  const rowsOf: Record<'a' | 'b', Map<string, bigint[]>> = { a: new Map(), b: new Map() }
  const inputs: PartitionInput[] = l.inputs.map(p => {
    const a = p.rowGroups.flatMap(g => [...(g.a as Iterable<Uint8Array | null>)])
    const b = p.rowGroups.flatMap(g => [...(g.b as Iterable<Uint8Array | null>)])
    const ns = a.map(() => n++)
    ns.forEach((x, i) => {
      for (const [c, v] of [
        ['a', a[i]],
        ['b', b[i]],
      ] as const) {
        if (!v) continue
        const list = rowsOf[c].get(hex(v)) ?? []
        list.push(x)
        rowsOf[c].set(hex(v), list)
      }
    })
    const block = ns.map(x => BigInt(p.entry.from) + (x % 100n))
    return { ...p, rows: { length: a.length, columns: { block, n: ns, a, b } } }
  })
  return { inputs, rowsOf }
}

/** Per key of `column`: the row numbers of its inline rows ('none' when it has none), from the stored objects. */
async function inlineRows(store: MemoryStore, d: SegmentDescriptor, column: string): Promise<Map<number, string>> {
  const source = segmentSource(storeReader(store), spec.prefix, d)
  const out = new Map<number, string>()
  for (let b = 0; b < d.columns[column].buckets; b++) {
    const e = await source.bucket(column, b)
    const body = await source.rows(column, b)
    e.keys.forEach((key, i) => {
      const r = e.rows!
      if (r.count[i] === 0) return out.set(key, 'none')
      const slice = body!.subarray(r.offset[i], r.offset[i] + r.length[i])
      const rows = decodeSlice(fields, column, slice, r.count[i]).batch
      out.set(key, [...(rows.columns.n as bigint[])].sort((x, y) => (x < y ? -1 : 1)).join(','))
    })
  }
  return out
}

/** Per key of `column` with inline rows, its slice's bytes, from the stored bucket. */
async function sliceBytes(store: MemoryStore, d: SegmentDescriptor, column: string): Promise<Map<number, number>> {
  const source = segmentSource(storeReader(store), spec.prefix, d)
  const out = new Map<number, number>()
  for (let b = 0; b < d.columns[column].buckets; b++) {
    const e = await source.bucket(column, b)
    e.keys.forEach((key, i) => e.rows!.count[i] && out.set(key, e.rows!.length[i]))
  }
  return out
}

/** What inline rows must be: a value's rows when at most MAX, else none. */
function truth(rowsOf: Map<string, bigint[]>): Map<number, string> {
  const out = new Map<number, string>()
  for (const [v, ns] of rowsOf) {
    const bytes = Uint8Array.from(v.match(/../g)!.map(x => parseInt(x, 16)))
    out.set(valueKey(bytes), ns.length <= MAX ? [...ns].sort((x, y) => (x < y ? -1 : 1)).join(',') : 'none')
  }
  return out
}

async function put(store: MemoryStore, objects: IndexObject[]) {
  for (const o of objects) await store.put(o.key, o.bytes)
}

/** A segment built over each list of inputs into `store`, then their merge, its objects stored too. */
async function buildAndMerge(store: MemoryStore, inputs: PartitionInput[][], using = spec) {
  const built = inputs.map(i => buildSegment(using, i))
  for (const b of built) await put(store, b.objects)
  const outputs: IndexObject[] = []
  const read = storeReader(store)
  const merged = await mergeSegments(
    using,
    built.map(b => segmentSource(read, spec.prefix, b.descriptor)),
    async o => {
      outputs.push(o)
    },
  )
  await put(store, outputs)
  return { built, merged, outputs }
}

describe('inline rows', () => {
  it('a build stores the rows of every value in at most INLINE_ROWS rows, and only those', async () => {
    const { inputs, rowsOf } = lake(1, 5)
    const store = memoryStore()
    const built = buildSegment(spec, inputs)
    await put(store, built.objects)
    for (const column of ['a', 'b'] as const) {
      expect(built.descriptor.columns[column].rows).toEqual({ codec: rowCodecId(fields), bytes: expect.any(Number) })
      const got = await inlineRows(store, built.descriptor, column)
      const want = truth(rowsOf[column])
      expect(got).toEqual(want)
      // both kinds are there: values with rows, values over the threshold
      expect([...want.values()].filter(x => x === 'none').length).toBeGreaterThan(0)
      expect([...want.values()].filter(x => x !== 'none').length).toBeGreaterThan(20)
    }
    // every object it wrote is one segmentKeys names (what retirement deletes)
    expect(new Set(segmentKeys(spec.prefix, built.descriptor))).toEqual(new Set(built.objects.map(o => o.key)))
    expect(built.objects.some(o => o.key.endsWith('.rows'))).toBe(true)
  })

  it('a build without rows for some partition (or without the spec) stores none', () => {
    const { inputs } = lake(2, 2)
    const { rows: _, ...plain } = spec
    expect(buildSegment(plain, inputs).descriptor.columns.a.rows).toBeUndefined()
    expect(
      buildSegment(spec, [inputs[0], { entry: inputs[1].entry, rowGroups: inputs[1].rowGroups }]).descriptor.columns.a.rows,
    ).toBeUndefined()
  })

  it('a merge keeps a key’s rows while the merged count is at most INLINE_ROWS, like a build over the union', async () => {
    const parts = [lake(3, 3), lake(4, 1), lake(5, 2)]
    const store = memoryStore()
    const { built, merged, outputs } = await buildAndMerge(
      store,
      parts.map(p => p.inputs),
    )
    const read = storeReader(store)
    expect(new Set(segmentKeys(spec.prefix, merged))).toEqual(new Set(outputs.map(o => o.key)))
    for (const column of ['a', 'b'] as const) {
      const all = new Map<string, bigint[]>()
      for (const p of parts) for (const [v, ns] of p.rowsOf[column]) all.set(v, [...(all.get(v) ?? []), ...ns])
      const want = truth(all)
      expect(await inlineRows(store, merged, column)).toEqual(want)
      // some keys had rows in each input and lost them merged (over MAX together)
      const singles = parts.map(p => truth(p.rowsOf[column]))
      expect([...want].some(([k, x]) => x === 'none' && singles.every(s => (s.get(k) ?? '') !== 'none'))).toBe(true)
    }
    // the same merge over the builds without rows drops every row, keeps every posting
    const { rows: _, ...plain } = spec
    const bare = parts.map(p => buildSegment(plain, p.inputs))
    for (const b of bare) await put(store, b.objects)
    const mixed = await mergeSegments(
      spec,
      [segmentSource(read, spec.prefix, built[0].descriptor), segmentSource(read, spec.prefix, bare[1].descriptor)],
      o => store.put(o.key, o.bytes).then(() => {}),
    )
    const rows = await inlineRows(store, mixed, 'a')
    const onlyFirst = truth(parts[0].rowsOf.a)
    for (const [k, x] of rows) {
      if (
        parts[1].rowsOf.a.size &&
        [...parts[1].rowsOf.a.keys()].some(v => valueKey(Uint8Array.from(v.match(/../g)!.map(y => parseInt(y, 16)))) === k)
      )
        expect(x).toBe('none')
      else expect(x).toBe(onlyFirst.get(k))
    }
  })

  it('a merge refuses a damaged rows object, naming it', async () => {
    const parts = [lake(6, 2), lake(7, 1)]
    const store = memoryStore()
    const built = parts.map(p => buildSegment(spec, p.inputs))
    for (const b of built) await put(store, b.objects)
    const key = built[1].objects.find(o => o.key.endsWith('.rows') && o.bytes.length > 100)!.key
    const bytes = store.objects.get(key)!
    bytes[10] ^= 1
    const read = storeReader(store)
    await expect(
      mergeSegments(
        spec,
        built.map(b => segmentSource(read, spec.prefix, b.descriptor)),
        async () => {},
      ),
    ).rejects.toMatchObject({ name: 'IndexObjectError', key })
  })

  it('a merge keeps only postings for a key whose inputs hold rows of different values (a key collision)', async () => {
    // the second input's rows of `a` are other bytes than the values its postings were built from:
    // same keys, other values, as two values under one 52-bit key would be
    const first = lake(8, 1).inputs
    const second = lake(8, 1).inputs.map(p => {
      const entry = { ...p.entry, key: `${p.entry.key}-later`, from: p.entry.from + 1000, to: p.entry.to + 1000 }
      const a = (p.rows!.columns.a as (Uint8Array | null)[]).map(v => v && Uint8Array.from(v, x => x ^ 0xff))
      return { ...p, entry, rows: { ...p.rows!, columns: { ...p.rows!.columns, a } } }
    })
    const store = memoryStore()
    const { built, merged } = await buildAndMerge(store, [first, second])
    const single = await inlineRows(store, built[0].descriptor, 'a')
    const a = await inlineRows(store, merged, 'a')
    const b = await inlineRows(store, merged, 'b')
    const kept = [...single].filter(([, x]) => x !== 'none')
    expect(kept.length).toBeGreaterThan(10)
    // every key of `a` lost its rows, while `b` (same values in both) keeps those of at most MAX rows
    for (const [key] of kept) expect(a.get(key)).toBe('none')
    expect([...b.values()].filter(x => x !== 'none').length).toBeGreaterThan(0)
  })

  it('a slice over the byte cap is dropped (postings only), in a build and in a merge, the others kept as they were', async () => {
    const parts = [lake(9, 3), lake(10, 2)]
    const freeStore = memoryStore()
    const uncapped = await buildAndMerge(freeStore, [parts[0].inputs, parts[1].inputs], {
      ...spec,
      rows: { fields, max: MAX, maxBytes: Infinity },
    })
    const lengths = await sliceBytes(freeStore, uncapped.merged, 'a')
    const sorted = [...lengths.values()].sort((x, y) => x - y)
    const cap = sorted[sorted.length >> 1]
    const store = memoryStore()
    const capped = await buildAndMerge(store, [parts[0].inputs, parts[1].inputs], { ...spec, rows: { fields, max: MAX, maxBytes: cap } })
    // the caps name the merged segment: another cap, another id
    expect(capped.merged.columns.a.id).not.toBe(uncapped.merged.columns.a.id)
    const check = async (d: SegmentDescriptor, free: SegmentDescriptor) => {
      const want = await inlineRows(freeStore, free, 'a')
      const bytes = await sliceBytes(freeStore, free, 'a')
      const got = await inlineRows(store, d, 'a')
      let dropped = 0
      for (const [key, rows] of want) {
        const over = (bytes.get(key) ?? 0) > cap
        dropped += over ? 1 : 0
        expect(got.get(key)).toBe(over ? 'none' : rows)
      }
      expect(got.size).toBe(want.size)
      return dropped
    }
    // in the builds of each input, then in their merge: some dropped, some kept
    for (const [i, b] of capped.built.entries()) await check(b.descriptor, uncapped.built[i].descriptor)
    expect(await check(capped.merged, uncapped.merged)).toBeGreaterThan(0)
    expect([...(await inlineRows(store, capped.merged, 'a')).values()].filter(x => x !== 'none').length).toBeGreaterThan(10)
    // a merge drops a key whose inputs' slices each fit the cap but together do not
    const single = await Promise.all(capped.built.map(b => sliceBytes(store, b.descriptor, 'a')))
    const merged = await sliceBytes(store, capped.merged, 'a')
    expect([...lengths].some(([k, n]) => n > cap && single.every(s => s.has(k)) && !merged.has(k))).toBe(true)
  })
  it('a column with caps of its own keeps the rows of a value spread over more row groups than the hot cap, in a build and a merge', async () => {
    // 2 partitions × 50 row groups of 4 rows: value W is the first row of every group (100 rows,
    // 100 row groups, over hotCap(100) = 64) in both columns; `a` declares 128 rows, `b` has the default
    const W = address(7)
    const inputs: PartitionInput[] = [0, 1].map(p => {
      const entry = entryOf(1 + p * 100, 100 + p * 100, 50, 4, `w${p}`)
      const a = Array.from({ length: 200 }, (_, i) => (i % 4 === 0 ? W : address(1000 + p * 200 + i)))
      const ns = a.map((_, i) => BigInt(p * 200 + i))
      const rowGroups = Array.from({ length: 50 }, (_, g) => ({ a: a.slice(g * 4, g * 4 + 4), b: a.slice(g * 4, g * 4 + 4) }))
      const block = ns.map(n => BigInt(entry.from) + n / 4n - BigInt(p * 50))
      return { entry, rowGroups, rows: { length: 200, columns: { block, n: ns, a, b: a } } }
    })
    expect(hotCap(100)).toBeLessThan(100)
    const own: SegmentSpec = { ...spec, rows: { fields, max: MAX, columns: { a: { max: 128, maxBytes: 1 << 16 } } } }
    const want = Array.from({ length: 100 }, (_, i) => BigInt(i * 4)).join(',')
    const entryOfW = async (store: MemoryStore, d: SegmentDescriptor, column: string) => {
      const source = segmentSource(storeReader(store), spec.prefix, d)
      const e = await source.bucket(column, bucketOf(valueKey(W), log2(d.columns[column].buckets)))
      const at = e.keys.indexOf(valueKey(W))
      return { hot: e.hot[at], postings: e.start[at + 1] - e.start[at] }
    }
    const store = memoryStore()
    const built = buildSegment(own, inputs)
    await put(store, built.objects)
    expect(built.descriptor.rowGroups).toBe(100)
    const { merged } = await buildAndMerge(store, [[inputs[0]], [inputs[1]]], own)
    for (const d of [built.descriptor, merged]) {
      expect((await inlineRows(store, d, 'a')).get(valueKey(W))).toBe(want)
      expect(await entryOfW(store, d, 'a')).toEqual({ hot: 0, postings: 100 })
      // the default cap: hot, no rows, no postings
      expect((await inlineRows(store, d, 'b')).get(valueKey(W))).toBe('none')
      expect(await entryOfW(store, d, 'b')).toEqual({ hot: 1, postings: 0 })
    }
    // the caps name the merged column: another cap, another id
    const { merged: other } = await buildAndMerge(memoryStore(), [[inputs[0]], [inputs[1]]], {
      ...own,
      rows: { ...own.rows!, columns: { a: { max: 100, maxBytes: 1 << 16 } } },
    })
    expect(other.columns.a.id).not.toBe(merged.columns.a.id)
    expect(other.columns.b.id).toBe(merged.columns.b.id)
  })
})

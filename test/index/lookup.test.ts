import { beforeAll, describe, expect, it } from 'vitest'
import { buildSegment, type SegmentSpec } from '../../src/index/build.ts'
import { bucketOf, log2 } from '../../src/index/format.ts'
import { valueKey } from '../../src/index/hash.ts'
import { intersectCandidates, lookupValues, packPays, planLookup } from '../../src/index/lookup.ts'
import { IndexCache } from '../../src/index/read.ts'
import { maintainTiers } from '../../src/index/tiers.ts'
import type { Candidates, SegmentDescriptor, ValueIndex } from '../../src/index/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { address, candidateSet, hex, memoryStore, randomLake, type Lake, type MemoryStore } from './helpers.ts'

const spec: SegmentSpec = { prefix: 'evm-1/index/logs', columns: ['a', 'b'], bucketBytes: 1024 }
const bytesOf = (h: string) => Uint8Array.from(h.match(/../g)!.map(x => parseInt(x, 16)))

let store: MemoryStore
let lake: Lake
let index: ValueIndex

beforeAll(async () => {
  store = memoryStore()
  // values 0..1 of column a are in every row group: hot everywhere
  lake = randomLake(41, { partitions: 330, groups: 2, rows: 30, universe: 30_000, hot: 2 })
  let segments: SegmentDescriptor[] = []
  for (const input of lake.inputs) segments = (await maintainTiers(store, spec, segments, buildSegment(spec, [input]))).segments
  index = { prefix: spec.prefix, segments }
})

/** Values present in column b, rare and random. */
function someValues(seed: number, n: number): Uint8Array[] {
  const r = mulberry32(seed)
  const present = [...lake.truth.b.keys()]
  return Array.from({ length: n }, () => bytesOf(present[Math.floor(r() * present.length)]))
}

describe('a lookup over many segments', () => {
  it('is tiered into several segments, the big ones with their partition table apart and many buckets', () => {
    expect(index.segments.map(s => s.partitions)).toEqual([300, 24, 5, 1])
    expect(index.segments.filter(s => s.table).length).toBeGreaterThanOrEqual(1)
    expect(index.segments.some(s => !s.table)).toBe(true)
    expect(Math.max(...index.segments.map(s => s.columns.b.buckets))).toBeGreaterThanOrEqual(32)
  })

  it.each([1, 20])(
    'of %i values reads each (segment, distinct bucket) once, or its pack, and each table once, all in one round',
    async n => {
      const values = someValues(n, n)
      const keys = values.map(valueKey)
      const expected = index.segments.reduce((sum, s) => {
        const buckets = new Set(keys.map(k => bucketOf(k, log2(s.columns.b.buckets)))).size
        return sum + (packPays(s.columns.b, buckets) ? 1 : buckets) + (s.table ? 1 : 0)
      }, 0)
      const plan = planLookup(index, 'b', keys)
      expect(plan.length).toBe(expected)
      expect(plan.some(p => p.kind === 'pack')).toBe(n > 1)
      store.reset()
      const got = await lookupValues(store, index, 'b', values)
      expect(got.reads).toBe(expected)
      expect(store.gets.length).toBe(expected)
      expect(new Set(store.gets)).toEqual(new Set(plan.map(p => p.key)))
      expect(store.finishedBefore.every(f => f === 0)).toBe(true)
      expect(got.bytes).toBe(plan.reduce((sum, p) => sum + store.objects.get(p.key)!.length, 0))
      expect(candidateSet(got.partitions)).toEqual(new Set(values.flatMap(v => [...lake.truth.b.get(hex(v))!])))
    },
  )

  it('of many values reads a pack per segment where it pays, and finds what the buckets alone find', async () => {
    const values = [...someValues(7, 15), ...Array.from({ length: 5 }, (_, i) => address(9e6 + i))]
    const keys = values.map(valueKey)
    const unpacked: ValueIndex = {
      prefix: index.prefix,
      segments: index.segments.map(s => ({
        ...s,
        columns: Object.fromEntries(Object.entries(s.columns).map(([c, v]) => [c, { ...v, pack: undefined }])),
      })),
    }
    const packs = planLookup(index, 'b', keys).filter(p => p.kind === 'pack')
    // a pack pays only where it replaces several buckets; every multi-bucket segment here does
    expect(packs.length).toBe(index.segments.filter(s => s.columns.b.buckets > 1).length)
    expect(packs.every(p => p.buckets!.length > 1)).toBe(true)
    store.reset()
    const packed = await lookupValues(store, index, 'b', values)
    const packedReads = store.gets.length
    store.reset()
    const alone = await lookupValues(store, unpacked, 'b', values)
    expect(packed.partitions).toEqual(alone.partitions)
    expect(packed.reads).toBe(packedReads)
    expect(packedReads).toBe(planLookup(index, 'b', keys).length)
    expect(alone.reads).toBeGreaterThan(packedReads + packs.length)
    // a bucket wanted later comes from the pack the cache holds: no read
    const cache = new IndexCache()
    await lookupValues(store, index, 'b', values, { cache })
    store.reset()
    const [later] = someValues(99, 1)
    const one = await lookupValues(store, index, 'b', [later], { cache })
    expect(one.reads).toBe(0)
    expect(one.partitions).toEqual((await lookupValues(store, unpacked, 'b', [later])).partitions)
  })

  it('reads nothing warm, and two concurrent lookups (an AND) share their table reads in the one round', async () => {
    const cache = new IndexCache()
    const [va] = someValues(3, 1)
    const vb = bytesOf([...lake.truth.a.keys()][500])
    store.reset()
    const [a, b] = await Promise.all([lookupValues(store, index, 'a', [vb], { cache }), lookupValues(store, index, 'b', [va], { cache })])
    const tables = index.segments.filter(s => s.table).length
    expect(a.reads + b.reads).toBe(store.gets.length)
    expect(store.gets.length).toBe(2 * index.segments.length + tables)
    expect(store.finishedBefore.every(f => f === 0)).toBe(true)
    store.reset()
    const again = await lookupValues(store, index, 'b', [va], { cache })
    expect(again.reads).toBe(0)
    expect(store.gets).toEqual([])
    expect(again.partitions).toEqual(b.partitions)
  })

  it("shares what one scoped view read with the others, never a view's read in flight (a Worker cancels a request that waits on another's read)", async () => {
    const shared = new IndexCache()
    const [va] = someValues(3, 1)
    store.reset()
    const [a, b] = await Promise.all([
      lookupValues(store, index, 'b', [va], { cache: shared.scoped() }),
      lookupValues(store, index, 'b', [va], { cache: shared.scoped() }),
    ])
    expect(b.partitions).toEqual(a.partitions)
    expect(store.gets.length).toBe(a.reads + b.reads)
    expect(b.reads).toBe(a.reads)
    store.reset()
    for (const cache of [shared, shared.scoped()]) {
      const again = await lookupValues(store, index, 'b', [va], { cache })
      expect(again.reads).toBe(0)
      expect(again.partitions).toEqual(a.partitions)
    }
    expect(store.gets).toEqual([])
  })

  it('reads only the segments meeting a range and returns only partitions in it', async () => {
    const range: [number, number] = [10_000, 14_999]
    const values = someValues(5, 10)
    store.reset()
    const got = await lookupValues(store, index, 'b', values, { range })
    const meeting = index.segments.filter(s => s.from <= range[1] && s.to >= range[0])
    expect(meeting.length).toBeLessThan(index.segments.length)
    expect(new Set(planLookup(index, 'b', values.map(valueKey), range).map(p => p.segment)).size).toBe(meeting.length)
    expect(got.reads).toBe(store.gets.length)
    const inRange = new Set(
      [...candidateSet((await lookupValues(store, index, 'b', values)).partitions)].filter(w => {
        const from = Number(w.split('/')[2].slice(0, 12))
        return from >= range[0] && from <= range[1]
      }),
    )
    expect(candidateSet(got.partitions)).toEqual(inRange)
  })

  it('reports a value hot everywhere as ranges to scan, clipped to the range', async () => {
    const got = await lookupValues(store, index, 'a', [address(0), address(1)], { range: [500, 20_000] })
    expect(got.partitions).toEqual([])
    expect(got.hot.map(h => hex(h.value as Uint8Array))).toEqual([hex(address(0)), hex(address(1))])
    expect(got.scan).toEqual([[500, 20_000]])
  })
})

describe('intersectCandidates (an AND of two indexed columns)', () => {
  it('keeps the row groups both may hold, against the truth', async () => {
    // a rare a-value and the b-values of its row groups, plus unrelated ones
    const r = mulberry32(7)
    const aValues = [...lake.truth.a.keys()].filter(k => lake.truth.a.get(k)!.size >= 2).slice(0, 30)
    let nonEmpty = 0
    for (const ha of aValues) {
      const where = [...lake.truth.a.get(ha)!]
      const bs = [...lake.truth.b].filter(([, w]) => [...w].some(x => where.includes(x))).map(([h]) => h)
      const hb = r() < 0.7 && bs.length ? bs[Math.floor(r() * bs.length)] : [...lake.truth.b.keys()][Math.floor(r() * 1000)]
      const a = await lookupValues(store, index, 'a', [bytesOf(ha)])
      const b = await lookupValues(store, index, 'b', [bytesOf(hb)])
      const both = intersectCandidates(a, b)
      const truth = new Set([...lake.truth.a.get(ha)!].filter(w => lake.truth.b.get(hb)!.has(w)))
      expect(both.scan).toEqual([])
      expect(candidateSet(both.partitions)).toEqual(truth)
      if (truth.size) nonEmpty++
    }
    expect(nonEmpty).toBeGreaterThan(5)
  })

  it('uses the other side where one side is hot, and scans only where both are', () => {
    const entry = (from: number) => ({ key: `p${from}`, from, to: from + 9, rows: 1, bytes: 1, tailOffset: 0, rowGroupCount: 4 })
    const a: Candidates = {
      partitions: [
        { entry: entry(0), rowGroups: [0, 1, 3] },
        { entry: entry(30), rowGroups: [2] },
      ],
      scan: [[10, 29]],
    }
    const b: Candidates = {
      partitions: [
        { entry: entry(0), rowGroups: [1, 2, 3] },
        { entry: entry(10), rowGroups: [0] },
        { entry: entry(40), rowGroups: [1] },
      ],
      scan: [[20, 39]],
    }
    expect(intersectCandidates(a, b)).toEqual({
      partitions: [
        { entry: entry(0), rowGroups: [1, 3] },
        { entry: entry(10), rowGroups: [0] },
        { entry: entry(30), rowGroups: [2] },
      ],
      scan: [[20, 29]],
    })
  })
})

/**
 * Looking values up: which bucket objects (and partition tables) of which segments hold
 * their keys, planned without I/O, then read in one parallel round and turned into the
 * partitions and row groups that may hold the values. Composes with `intersectCandidates`
 * for an AND of two indexed predicates.
 */
import type { BlockRange } from '../manifest/types.ts'
import type { ObjectStore } from '../store/types.ts'
import {
  bucketKey,
  bucketOf,
  findKey,
  log2,
  packKey,
  rowsKey,
  tableKey,
  type Bucket,
  type ObjectKind,
  type PartitionTable,
} from './format.ts'
import { valueKey } from './hash.ts'
import { intersectRanges, meets, unionRanges } from './ranges.ts'
import { IndexCache, openBucket, readBucket, readPack, readTable, storeReader } from './read.ts'
import type {
  Candidate,
  Candidates,
  ColumnSegment,
  HotValue,
  IndexValue,
  InlineSegment,
  LookupResult,
  RowSlice,
  SegmentDescriptor,
  ValueIndex,
} from './types.ts'

/** One whole-object read of a lookup. */
export interface PlannedRead {
  key: string
  kind: ObjectKind
  /** Index of the segment in the index's list. */
  segment: number
  /** The bucket read (0 for a table or a pack). */
  bucket: number
  /** For a pack: the buckets the lookup opens from it. */
  buckets?: number[]
}

/**
 * What one read is worth in bytes: a lookup reads a column's pack instead of n of its buckets
 * when the pack is at most n times this. A read's first byte costs ~30 ms, in which one
 * connection moves ~256 KiB at ~8 MB/s; and n reads queue on a Worker's 6 connections.
 */
export const READ_BYTES = 256 * 1024

/** Whether reading `c`'s pack beats reading `n` of its buckets (see `READ_BYTES`). */
export const packPays = (c: ColumnSegment, n: number): boolean => c.pack !== undefined && n > 1 && c.pack <= n * READ_BYTES

/** The blocks `column` is indexed over: where a lookup answers; the planner scans the rest of a query's range. */
export function indexCoverage(segments: readonly SegmentDescriptor[], column: string): BlockRange[] {
  return unionRanges(segments.filter(s => s.columns[column]).flatMap(s => s.coverage))
}

const inRange = (s: { from: number; to: number }, range?: BlockRange) => !range || (s.from <= range[1] && s.to >= range[0])

/**
 * Every read a lookup of `keys` in `column` makes, cold: per segment meeting `range`, one per
 * distinct bucket of the keys (or the column's pack, when that pays), and its partition table
 * when kept apart. Pure, so a plan's reads are counted without I/O.
 */
export function planLookup(index: ValueIndex, column: string, keys: readonly number[], range?: BlockRange): PlannedRead[] {
  const reads: PlannedRead[] = []
  index.segments.forEach((s, segment) => {
    const c = s.columns[column]
    if (!c || !inRange(s, range)) return
    if (s.table) reads.push({ key: tableKey(index.prefix, s, s.table), kind: 'table', segment, bucket: 0 })
    const k = log2(c.buckets)
    const buckets = [...new Set(keys.map(key => bucketOf(key, k)))].sort((a, b) => a - b)
    if (packPays(c, buckets.length)) reads.push({ key: packKey(index.prefix, s, column), kind: 'pack', segment, bucket: 0, buckets })
    else for (const bucket of buckets) reads.push({ key: bucketKey(index.prefix, s, column, bucket), kind: 'bucket', segment, bucket })
  })
  return reads
}

/** Options of `lookupValues`. */
export interface LookupOptions {
  /** Only blocks in this range matter: other segments are not read, other partitions not returned. */
  range?: BlockRange
  /** Tables and buckets kept across lookups (and shared between concurrent ones). */
  cache?: IndexCache
  /**
   * The row codec (`rowCodecId`) the caller decodes: segments whose inline rows are in it and
   * answer every value are returned in `inline` instead of as candidates.
   */
  rows?: string
}

const entriesSize = (b: Bucket) =>
  b.entries.keys.byteLength * 2 +
  b.entries.ordinals.byteLength +
  (b.entries.rows ? b.entries.keys.length * 20 : 0) +
  (b.table ? tableSize(b.table) : 0)
const tableSize = (t: PartitionTable) => t.partitions.length * 160

/**
 * The partitions and row groups of `column` that may hold any of `values` (an `eq`/`in`),
 * from every segment, all reads in one parallel round. Never misses a row: a hash collision
 * only adds a candidate; a value hot in a segment yields that segment's coverage in `scan`.
 */
export async function lookupValues(
  store: ObjectStore,
  index: ValueIndex,
  column: string,
  values: readonly IndexValue[],
  options: LookupOptions = {},
): Promise<LookupResult> {
  const { range } = options
  const cache = options.cache ?? new IndexCache(Infinity)
  const counts = { reads: 0, bytes: 0 }
  const read = storeReader(store, undefined, counts)
  // one key per distinct value (values of one key share everything)
  const byKey = new Map<number, IndexValue>()
  for (const v of values) {
    const key = valueKey(v)
    if (!byKey.has(key)) byKey.set(key, v)
  }
  const keys = [...byKey.keys()]
  if (keys.length === 0) return { partitions: [], scan: [], hot: [], inline: [], reads: 0, bytes: 0 }
  const plan = planLookup(index, column, keys, range)
  const loaded = new Map<string, Bucket | PartitionTable>()
  // a column's pack, read at most once by this lookup however many of its buckets it opens
  const packs = new Map<string, Promise<Uint8Array[]>>()
  const packOf = (s: SegmentDescriptor) => {
    const key = packKey(index.prefix, s, column)
    let parts = packs.get(key)
    if (!parts) {
      parts = cache.get(key, async () => {
        const p = await readPack(read, index.prefix, s, column)
        return { value: p, size: p.reduce((n, x) => n + x.length, 0) }
      })
      packs.set(key, parts)
    }
    return parts
  }
  // a bucket from the cache, else from its column's pack when the cache holds it or the plan
  // reads it, else from its own object
  const bucketAt = (s: SegmentDescriptor, b: number, viaPack: boolean) => {
    const key = bucketKey(index.prefix, s, column, b)
    return cache.get(key, async () => {
      const held = s.columns[column].pack === undefined ? undefined : cache.peek<Uint8Array[]>(packKey(index.prefix, s, column))
      const parts = held ?? (viaPack ? await packOf(s) : undefined)
      const bucket = parts ? openBucket(key, parts[b], s, column, b) : await readBucket(read, index.prefix, s, column, b)
      return { value: bucket, size: entriesSize(bucket) }
    })
  }
  await Promise.all(
    plan.map(async r => {
      const s = index.segments[r.segment]
      if (r.kind === 'table') {
        const table = await cache.get(r.key, async () => {
          const t = await readTable(read, index.prefix, { ...s, table: s.table! })
          return { value: t, size: tableSize(t) }
        })
        loaded.set(r.key, table)
      } else {
        const pack = r.kind === 'pack'
        for (const b of pack ? r.buckets! : [r.bucket]) loaded.set(bucketKey(index.prefix, s, column, b), await bucketAt(s, b, pack))
      }
    }),
  )

  const found = new Map<string, { entry: Candidate['entry']; groups: Set<number> }>()
  const hot = new Map<number, BlockRange[]>()
  const inline: InlineSegment[] = []
  const clip = (ranges: BlockRange[]) => unionRanges(range ? intersectRanges(unionRanges(ranges), [range]) : ranges)
  index.segments.forEach((s, segment) => {
    const c = s.columns[column]
    if (!c || !inRange(s, range)) return
    const k = log2(c.buckets)
    const bucketOfKey = (key: number) => loaded.get(bucketKey(index.prefix, s, column, bucketOf(key, k))) as Bucket
    const answered =
      options.rows !== undefined && c.rows?.codec === options.rows ? inlineAnswer(index.prefix, s, column, keys, byKey, bucketOfKey) : null
    if (answered) {
      inline.push({ segment, ranges: clip(s.coverage), slices: answered, rows: answered.reduce((n, x) => n + x.count, 0) })
      return
    }
    const table = s.table ? (loaded.get(tableKey(index.prefix, s, s.table)) as PartitionTable) : bucketOfKey(keys[0]).table!
    for (const key of keys) {
      const { entries } = bucketOfKey(key)
      const at = findKey(entries.keys, key)
      if (at < 0) continue
      if (entries.hot[at]) {
        hot.set(key, [...(hot.get(key) ?? []), ...s.coverage])
        continue
      }
      let p = 0
      for (let j = entries.start[at]; j < entries.start[at + 1]; j++) {
        const o = entries.ordinals[j]
        while (table.base[p + 1] <= o) p++
        const entry = table.partitions[p]
        if (range && (entry.to < range[0] || entry.from > range[1])) continue
        const f = found.get(entry.key) ?? { entry, groups: new Set<number>() }
        f.groups.add(o - table.base[p])
        found.set(entry.key, f)
      }
    }
  })

  const hotValues: HotValue[] = keys.filter(key => hot.has(key)).map(key => ({ value: byKey.get(key)!, ranges: clip(hot.get(key)!) }))
  const scan = clip(hotValues.flatMap(h => h.ranges))
  const partitions = [...found.values()]
    .filter(f => !meets(scan, f.entry.from, f.entry.to))
    .sort((a, b) => a.entry.from - b.entry.from)
    .map(f => ({ entry: f.entry, rowGroups: [...f.groups].sort((a, b) => a - b) }))
  return { partitions, scan, hot: hotValues, inline, reads: counts.reads, bytes: counts.bytes }
}

/** The slices of `keys` in segment `s` when its inline rows answer all of them (each absent or with rows), else null. */
function inlineAnswer(
  prefix: string,
  s: SegmentDescriptor,
  column: string,
  keys: readonly number[],
  byKey: ReadonlyMap<number, IndexValue>,
  bucketOfKey: (key: number) => Bucket,
): RowSlice[] | null {
  const slices: RowSlice[] = []
  const k = log2(s.columns[column].buckets)
  for (const key of keys) {
    const { entries } = bucketOfKey(key)
    const at = findKey(entries.keys, key)
    if (at < 0) continue
    const rows = entries.rows
    if (!rows || rows.count[at] === 0) return null
    slices.push({
      key: rowsKey(prefix, s, column, bucketOf(key, k)),
      offset: rows.offset[at],
      length: rows.length[at],
      crc: rows.crc[at],
      count: rows.count[at],
      column,
      value: byKey.get(key)!,
    })
  }
  return slices
}

/**
 * Where rows matching both predicates may be (an AND of two indexed columns): row groups
 * candidate for both, or for one inside a range the other must scan; ranges both must scan
 * stay to scan. With one side hot everywhere this is the other side.
 */
export function intersectCandidates(a: Candidates, b: Candidates): Candidates {
  const scan = intersectRanges(a.scan, b.scan)
  const of = (c: Candidates) => new Map(c.partitions.map(p => [p.entry.key, p]))
  const inA = of(a)
  const inB = of(b)
  const partitions: Candidate[] = []
  for (const key of new Set([...inA.keys(), ...inB.keys()])) {
    const entry = (inA.get(key) ?? inB.get(key))!.entry
    const groups = (c: Candidates, m: Map<string, Candidate>) =>
      meets(c.scan, entry.from, entry.to) ? null : (m.get(key)?.rowGroups ?? [])
    const ga = groups(a, inA)
    const gb = groups(b, inB)
    const both = ga === null ? gb! : gb === null ? ga : common(ga, gb)
    if (both.length > 0) partitions.push({ entry, rowGroups: both })
  }
  return { partitions: partitions.sort((x, y) => x.entry.from - y.entry.from), scan }
}

/** The numbers in both ascending lists. */
function common(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = []
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) {
      out.push(a[i])
      i++
      j++
    } else if (a[i] < b[j]) i++
    else j++
  }
  return out
}

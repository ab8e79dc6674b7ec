/**
 * Builds a segment from plain values: every indexed column of a run of partitions, as
 * bucket objects plus (for segments of many partitions) one partition table object.
 * Pure and deterministic: the same partitions and values give the same bytes and keys,
 * so a rerun or a second writer stores nothing new.
 */
import type { ColumnBatch, PackedBatch } from '../columns/batch.ts'
import type { PartitionEntry } from '../manifest/types.ts'
import { crc32 } from '../store/crc32.ts'
import { ByteWriter } from './bytes.ts'
import {
  bucketKey,
  encodeBucket,
  encodeEntries,
  encodePack,
  encodeTable,
  KEY_BITS,
  log2,
  packKey,
  rowsKey,
  seal,
  tableKey,
} from './format.ts'
import { hashHex, valueKey, valueKeyAt } from './hash.ts'
import type { Vector } from '../columns/vector.ts'
import { unionRanges } from './ranges.ts'
import { rowCodecId, sliceColumns, sliceIds, sliceNumbers, sliceWriter, type RowField, type SliceRows } from './rows.ts'
import type { ColumnSegment, Entries, IndexedPartition, IndexObject, IndexValue, SegmentDescriptor } from './types.ts'

/** What to index and where: shared by builds, merges and tier maintenance of one dataset. */
export interface SegmentSpec {
  /** `<chain>/index/<dataset>` (see `indexPrefix`). */
  prefix: string
  /** Indexed columns; every segment carries all of them. */
  columns: readonly string[]
  /** Target bucket size: a column gets the most buckets that keep them at least this big (so 1–2× this). Default 16 KiB. */
  bucketBytes?: number
  /** Most bytes of buckets a column of several buckets may have and still get a pack. Default `PACK_BYTES`. */
  packBytes?: number
  /**
   * Store the rows of rare values beside the buckets (inline rows): every stored field of
   * the dataset, for each value in at most `max` (default `INLINE_ROWS`) rows of the segment
   * whose slice takes at most `maxBytes` (default `INLINE_BYTES`); `columns` overrides both
   * for the columns named (declared `index: { inlineRows, inlineBytes }`).
   */
  rows?: InlineSpec
}

/** What a segment stores inline (see `SegmentSpec.rows`). */
export interface InlineSpec {
  fields: readonly RowField[]
  max?: number
  maxBytes?: number
  columns?: Readonly<Record<string, InlineCaps>>
}

/** Most rows of one value a segment stores inline, and most bytes of their slice. */
export interface InlineCaps {
  max: number
  maxBytes: number
}

/** The caps of `column`'s inline rows. */
export const inlineCaps = (rows: InlineSpec, column: string): InlineCaps =>
  rows.columns?.[column] ?? { max: rows.max ?? INLINE_ROWS, maxBytes: rows.maxBytes ?? INLINE_BYTES }

/**
 * The hot cap of `column` in a segment of `rowGroups`: `hotCap`, but never below the column's
 * inline row cap, so a value whose rows the segment may store inline keeps its postings and
 * rows however many row groups it is spread over (at most that many: one row each).
 */
export const columnHotCap = (rowGroups: number, rows: InlineSpec | undefined, column: string): number =>
  Math.max(hotCap(rowGroups), rows ? inlineCaps(rows, column).max : 0)

/**
 * Most rows of one value in a segment that the index stores inline: a lookup of such a value
 * reads its slice and never opens a partition. 64 rows of a log are ~10 KB, one ranged read;
 * the storage cost (README "Cost") is every rare value's rows once per indexed column it is
 * rare in.
 */
export const INLINE_ROWS = 64

/**
 * Most bytes of one value's slice: a value whose rows encode to more keeps only its postings
 * (the reader opens its partitions, as for a value over `INLINE_ROWS`). A bucket's size, so a
 * slice read costs a lookup no more than the bucket read before it; it binds where rows are
 * large (a Move transaction with its JSON payload: ~1 KB a row), not on logs (a slice of 64
 * is at most ~9 KB). See README "A byte cap per slice".
 */
export const INLINE_BYTES = 16 * 1024

/** Default target bucket size: a whole-history lookup of one value reads a few 16–32 KB buckets. */
export const BUCKET_BYTES = 16 * 1024

/**
 * A column of several buckets and at most this many bytes of them also stores them all in one
 * object, its pack: a lookup of many values (an `__in`) reads it instead of a bucket each.
 * A lookup reads a pack for n buckets when it is at most n × `READ_BYTES` (256 KiB), so a
 * 4 MiB pack pays from 16 buckets up: lists of tens of contracts; a bigger one would pay only
 * for hundreds. Bounded, so packs cost at most this much a column of a segment; the big
 * columns of a real chain's large segments keep only their buckets (README "Packs").
 */
export const PACK_BYTES = 4 * 1024 * 1024

/** A value in more row groups than this (of a segment of `rowGroups`) is hot: the index keeps its key, not its postings. */
export const hotCap = (rowGroups: number): number => Math.max(64, Math.floor(rowGroups / 8))

/**
 * A partition and its values: per row group of the file (in order), per indexed column, the
 * values row by row (null: none); with inline rows, all its rows in file order (only those of
 * rare values are encoded).
 */
export interface PartitionInput {
  entry: PartitionEntry
  /** A packed column's row group is its vector (a byte or text kind): keyed from the bytes where they lie. */
  rowGroups: readonly Readonly<Record<string, Iterable<IndexValue | null> | Vector>>[]
  rows?: ColumnBatch | PackedBatch
}

/** A built segment: its descriptor and its objects, not stored yet (see `maintainTiers`). */
export interface BuiltSegment {
  descriptor: SegmentDescriptor
  objects: IndexObject[]
}

/** The partition-level fields the index keeps of a manifest entry. */
function indexedPartition(e: PartitionEntry): IndexedPartition {
  const p: IndexedPartition = {
    key: e.key,
    from: e.from,
    to: e.to,
    rows: e.rows,
    bytes: e.bytes,
    tailOffset: e.tailOffset,
    rowGroupCount: e.rowGroups.length,
  }
  if (e.indexCrc !== undefined) p.indexCrc = e.indexCrc
  if (e.footerCrc !== undefined) p.footerCrc = e.footerCrc
  if (e.lookup) p.lookup = e.lookup
  if (e.footerOffset !== undefined) {
    p.footerOffset = e.footerOffset
    p.bloomOffset = Math.min(e.footerOffset, ...Object.values(e.blooms ?? {}).map(b => b.offset))
  }
  return p
}

/**
 * Row-group postings of one column while values stream in, row group by row group: keys in an
 * open-addressing table and each key's ordinals a linked list, all in flat typed arrays (a
 * partition holds millions of keys; a Map of double keys costs ~1.3 µs an insert).
 */
class Postings {
  /** Slot + 1 of each table position (0: empty); at most half full. */
  private table = new Int32Array(4096)
  private keys = new Float64Array(1024)
  private last = new Int32Array(1024)
  private count = new Uint32Array(1024)
  private rowCount = new Uint32Array(1024)
  /** Entry index of each slot, once `entries` has sorted them. */
  private entry = new Int32Array(0)
  private head = new Int32Array(1024)
  private tail = new Int32Array(1024)
  private ord = new Uint32Array(4096)
  private next = new Int32Array(4096)
  private n = 0
  private postings = 0

  /** The table position of `key`, or of the empty one where it would go. Keys are hashes: their low 32 bits (`>>> 0`) place them. */
  private position(key: number): number {
    const mask = this.table.length - 1
    let i = (key >>> 0) & mask
    while (this.table[i] && this.keys[this.table[i] - 1] !== key) i = (i + 1) & mask
    return i
  }

  /** The slot of `key`, made when new. */
  private slot(key: number): number {
    const i = this.position(key)
    if (this.table[i]) return this.table[i] - 1
    if (this.n === this.keys.length) this.growSlots()
    const made = this.n++
    this.table[i] = made + 1
    this.keys[made] = key
    this.last[made] = -1
    this.head[made] = -1
    if (this.n * 2 > this.table.length) this.rehash()
    return made
  }

  private rehash(): void {
    this.table = new Int32Array(this.table.length * 2)
    const mask = this.table.length - 1
    for (let s = 0; s < this.n; s++) {
      let i = (this.keys[s] >>> 0) & mask
      while (this.table[i]) i = (i + 1) & mask
      this.table[i] = s + 1
    }
  }

  add(key: number, ordinal: number): void {
    const s = this.slot(key)
    this.rowCount[s]++
    if (this.last[s] === ordinal) return
    this.last[s] = ordinal
    this.count[s]++
    const p = this.postings++
    if (p === this.ord.length) {
      this.ord = grow(this.ord, this.ord.length * 2)
      this.next = grow(this.next, this.next.length * 2)
    }
    this.ord[p] = ordinal
    this.next[p] = -1
    if (this.head[s] < 0) this.head[s] = p
    else this.next[this.tail[s]] = p
    this.tail[s] = p
  }

  private growSlots(): void {
    const size = this.keys.length * 2
    this.keys = grow(this.keys, size)
    this.last = grow(this.last, size)
    this.count = grow(this.count, size)
    this.rowCount = grow(this.rowCount, size)
    this.head = grow(this.head, size)
    this.tail = grow(this.tail, size)
  }

  /** Entry index of `key` (a key added before `entries`). */
  entryOf(key: number): number {
    return this.entry[this.table[this.position(key)] - 1]
  }

  /** Rows (not row groups) holding each entry's key, by entry index. */
  rowsPerEntry(): Uint32Array {
    const out = new Uint32Array(this.n)
    for (let s = 0; s < this.n; s++) out[this.entry[s]] = this.rowCount[s]
    return out
  }

  /** Sorted entries; keys in more than `cap` row groups are hot. */
  entries(cap: number): Entries {
    const keys = this.keys.slice(0, this.n).sort()
    this.entry = new Int32Array(this.n)
    const order = new Uint32Array(this.n)
    const hot = new Uint8Array(this.n)
    const start = new Uint32Array(this.n + 1)
    let total = 0
    for (let i = 0; i < this.n; i++) {
      const s = this.table[this.position(keys[i])] - 1
      order[i] = s
      this.entry[s] = i
      if (this.count[s] > cap) hot[i] = 1
      else total += this.count[s]
      start[i + 1] = total
    }
    const ordinals = new Uint32Array(total)
    for (let i = 0; i < this.n; i++) {
      if (hot[i]) continue
      let at = start[i]
      for (let p = this.head[order[i]]; p >= 0; p = this.next[p]) ordinals[at++] = this.ord[p]
    }
    return { keys, hot, start, ordinals }
  }
}

function grow<T extends Float64Array | Int32Array | Uint32Array>(a: T, size: number): T {
  const out = new (a.constructor as new (n: number) => T)(size)
  out.set(a)
  return out
}

/** Buckets for a column of `bytes` entry bytes: the most (a power of two) that keep a bucket at least `target`. */
export const log2BucketsFor = (bytes: number, target: number): number => (bytes >= 2 * target ? Math.floor(Math.log2(bytes / target)) : 0)

/** Entry bytes of `e` as one bucket: what sizes its split. */
function entryBytes(e: Entries): number {
  const w = new ByteWriter(e.keys.length * 8 + 64)
  encodeEntries(w, e, 0, e.keys.length, 0)
  return w.length
}

/** Whether a segment's partition table goes in every bucket (small tables) or in its own object. */
export const inlineTable = (table: Uint8Array, spec: SegmentSpec): boolean => table.length <= (spec.bucketBytes ?? BUCKET_BYTES) / 8

/** A column's entries, with the slices of inline rows of its entries (see `EntryRows`). */
export interface ColumnEntries {
  entries: Entries
  slices?: Slices
}

/** Entry i's inline rows are bytes[start[i], start[i + 1]) (empty when it has none): the slices of a bucket are contiguous. */
export interface Slices {
  bytes: Uint8Array
  start: Float64Array
}

/** A bucket body and, for a column with inline rows, its rows object body (the slices of its entries in order). */
export interface BucketBodies {
  body: Uint8Array
  rows?: Uint8Array
}

/** The rows object body of entries [lo, hi). */
export const joinSlices = (slices: Slices, lo: number, hi: number): Uint8Array => slices.bytes.subarray(slices.start[lo], slices.start[hi])

/** The bucket bodies of `c` split into 2^log2Buckets by the keys' top bits, in bucket order. */
export function* splitBuckets(c: ColumnEntries, log2Buckets: number, table: Uint8Array | undefined): Generator<BucketBodies> {
  const e = c.entries
  const width = 2 ** (KEY_BITS - log2Buckets)
  let lo = 0
  for (let b = 0; b < 2 ** log2Buckets; b++) {
    let hi = lo
    while (hi < e.keys.length && e.keys[hi] < (b + 1) * width) hi++
    const body = encodeBucket(e, lo, hi, b, log2Buckets, table)
    yield c.slices ? { body, rows: joinSlices(c.slices, lo, hi) } : { body }
    lo = hi
  }
}

/**
 * Writes one column of a segment, bucket by bucket in order: each bucket's objects (the bucket,
 * and its rows where the column stores them) as it comes, then the column's pack when it gets
 * one (several buckets, at most `packBytes` of them). Fills in `c`: bytes, rows bytes, pack.
 */
export class ColumnWriter {
  /** The stored buckets so far, while they fit in a pack. */
  private parts: Uint8Array[] | null = []
  private size = 0
  private readonly spec: SegmentSpec
  private readonly d: SegmentDescriptor
  private readonly column: string
  private readonly c: ColumnSegment
  private readonly k: number
  private readonly maxPack: number

  constructor(spec: SegmentSpec, d: SegmentDescriptor, column: string, c: ColumnSegment) {
    this.spec = spec
    this.d = d
    this.column = column
    this.c = c
    this.k = log2(c.buckets)
    this.maxPack = spec.packBytes ?? PACK_BYTES
  }

  /** The objects of bucket `b` from its bodies. */
  bucket(b: number, bodies: BucketBodies): IndexObject[] {
    const { spec, d, column, c, k } = this
    const bytes = seal(bodies.body, { kind: 'bucket', id: c.id, bucket: b, log2Buckets: k })
    c.bytes += bytes.length
    if (this.parts) {
      this.size += bytes.length
      if (this.size > this.maxPack) this.parts = null
      else this.parts.push(bytes)
    }
    const out = [{ key: bucketKey(spec.prefix, d, column, b), bytes }]
    if (bodies.rows && c.rows) {
      const rows = seal(bodies.rows, { kind: 'rows', id: c.id, bucket: b, log2Buckets: k })
      c.rows.bytes += rows.length
      out.push({ key: rowsKey(spec.prefix, d, column, b), bytes: rows })
    }
    return out
  }

  /** After the last bucket: the column's pack, if it gets one. */
  finish(): IndexObject[] {
    const { spec, d, column, c, parts } = this
    if (!parts || c.buckets === 1) return []
    if (parts.length !== c.buckets) throw new RangeError(`column ${column}: ${parts.length} of ${c.buckets} buckets written`)
    const bytes = seal(encodePack(parts), { kind: 'pack', id: c.id, bucket: 0, log2Buckets: this.k })
    c.pack = bytes.length
    return [{ key: packKey(spec.prefix, d, column), bytes }]
  }
}

/** The content id of a column segment from what determines its bytes. */
export const columnId = (recipe: string): string => hashHex(new TextEncoder().encode(`vix1:${recipe}`))

/** Builds one segment over `partitions` (non-overlapping, any order) for every column of `spec`. */
export function buildSegment(spec: SegmentSpec, partitions: readonly PartitionInput[]): BuiltSegment {
  if (partitions.length === 0) throw new RangeError('a segment needs at least one partition')
  const sorted = [...partitions].sort((a, b) => a.entry.from - b.entry.from)
  for (const p of sorted) {
    if (p.rows && p.rows.length !== p.entry.rows)
      throw new RangeError(`partition ${p.entry.key}: ${p.rows.length} rows given, the entry has ${p.entry.rows}`)
    if (p.rowGroups.length !== p.entry.rowGroups.length) {
      throw new RangeError(
        `partition ${p.entry.key}: values for ${p.rowGroups.length} row groups, the entry has ${p.entry.rowGroups.length}`,
      )
    }
  }
  const records = sorted.map(p => indexedPartition(p.entry))
  const table = encodeTable(records)
  const rowGroups = records.reduce((n, p) => n + p.rowGroupCount, 0)
  const inline = inlineTable(table, spec)
  const tableId = hashHex(table)
  const descriptor: SegmentDescriptor = {
    from: records[0].from,
    to: records[records.length - 1].to,
    coverage: unionRanges(records.map(p => [p.from, p.to])),
    partitions: records.length,
    rowGroups,
    ...(inline ? {} : { table: tableId }),
    columns: {},
  }
  const objects: IndexObject[] = []
  if (!inline)
    objects.push({
      key: tableKey(spec.prefix, descriptor, tableId),
      bytes: seal(table, { kind: 'table', id: tableId, bucket: 0, log2Buckets: 0 }),
    })
  const rows = spec.rows && sorted.every(p => p.rows) ? spec.rows : undefined
  const codec = rows && rowCodecId(rows.fields)
  const batches = sorted.map(p => p.rows!)
  const source = rows && {
    columns: sliceColumns(rows.fields, batches),
    numbers: sliceNumbers(rows.fields, batches),
    ids: sliceIds(rows.fields, batches),
  }
  // one buffer for every column's slices, grown once: each column's objects are sealed (copied) before the next reuses it
  const slicesBuffer = new ByteWriter(1 << 16)
  for (const column of spec.columns) {
    const entries = collect(sorted, column, columnHotCap(rowGroups, rows, column), rows, source, slicesBuffer)
    const k = log2BucketsFor(entryBytes(entries.entries), spec.bucketBytes ?? BUCKET_BYTES)
    const bodies = [...splitBuckets(entries, k, inline ? table : undefined)]
    const id = columnId(
      `build:${column}:${k}:${inline ? 'inline' : tableId}:${codec ? `rows=${codec}:` : ''}${bodies.map(b => hashHex(b.body)).join(',')}`,
    )
    const c: ColumnSegment = { id, buckets: 2 ** k, bytes: 0, ...(codec ? { rows: { codec, bytes: 0 } } : {}) }
    descriptor.columns[column] = c
    const writer = new ColumnWriter(spec, descriptor, column, c)
    bodies.forEach((body, b) => objects.push(...writer.bucket(b, body)))
    objects.push(...writer.finish())
  }
  return { descriptor, objects }
}

/**
 * The postings of `column` over sorted partitions, ordinals counted through them in order;
 * with `keep`, also each row's key (NaN: null) through the partitions, for the inline rows' pass.
 */
function postingsOf(partitions: readonly PartitionInput[], column: string, keep: boolean): { postings: Postings; rowKeys: Float64Array } {
  const postings = new Postings()
  let rowKeys = new Float64Array(keep ? partitions.reduce((n, p) => n + p.entry.rows, 0) : 0)
  let row = 0
  let ordinal = 0
  for (const p of partitions) {
    for (const group of p.rowGroups) {
      const values = group[column]
      if (!values) throw new RangeError(`partition ${p.entry.key}: no values for indexed column ${column}`)
      const add = (key: number) => {
        if (key === key) postings.add(key, ordinal)
        if (keep) {
          if (row === rowKeys.length) rowKeys = grow(rowKeys, rowKeys.length * 2 + 1024)
          rowKeys[row++] = key
        }
      }
      if ('type' in values) {
        const v = values
        if (v.type !== 'fixed' && v.type !== 'binary') throw new RangeError(`indexed column ${column} is not of a byte or text kind`)
        for (let i = 0; i < v.length; i++) {
          if (v.valid !== null && v.valid[i] === 0) add(NaN)
          else if (v.type === 'fixed') add(valueKeyAt(v.bytes, i * v.width, (i + 1) * v.width))
          else add(valueKeyAt(v.bytes, v.offsets[i], v.offsets[i + 1]))
        }
      } else for (const v of values) add(v === null ? NaN : valueKey(v))
      ordinal++
    }
  }
  return { postings, rowKeys }
}

/** The rows of each inline entry: entry i's are refPart/refRow[first[i], first[i + 1]) (partition index, row in it), in order. */
interface InlineRefs {
  count: Uint32Array
  first: Uint32Array
  refPart: Uint32Array
  refRow: Uint32Array
}

/** Which rows hold the keys of `entries` in at most `max` rows (a second pass, over the rows' keys). */
function inlineRefs(
  partitions: readonly PartitionInput[],
  column: string,
  postings: Postings,
  rowKeys: Float64Array,
  entries: Entries,
  max: number,
): InlineRefs {
  const n = entries.keys.length
  const perEntry = postings.rowsPerEntry()
  const count = new Uint32Array(n)
  const first = new Uint32Array(n + 1)
  for (let i = 0; i < n; i++) {
    if (!entries.hot[i] && perEntry[i] <= max) count[i] = perEntry[i]
    first[i + 1] = first[i] + count[i]
  }
  const refPart = new Uint32Array(first[n])
  const refRow = new Uint32Array(first[n])
  const fill = first.slice(0, n)
  let at = 0
  partitions.forEach((p, pi) => {
    if (at + p.entry.rows > rowKeys.length)
      throw new RangeError(`partition ${p.entry.key}: fewer values of ${column} than its ${p.entry.rows} rows`)
    for (let row = 0; row < p.entry.rows; row++) {
      const key = rowKeys[at++]
      if (key !== key) continue
      const i = postings.entryOf(key)
      if (count[i]) {
        refPart[fill[i]] = pi
        refRow[fill[i]++] = row
      }
    }
  })
  if (at !== rowKeys.length) throw new RangeError(`${rowKeys.length} values of ${column}, the partitions have ${at} rows`)
  return { count, first, refPart, refRow }
}

/**
 * The rows of each partition (by index in `partitions`, sorted by block) that a build with
 * `spec.rows` may store inline: what a writer without the rows in memory (`reindex`) must read.
 * By row count only: the build then drops the slices over `maxBytes`, as it does with every row.
 */
export function inlineRowsNeeded(spec: SegmentSpec, partitions: readonly PartitionInput[]): Set<number>[] {
  const sorted = [...partitions].sort((a, b) => a.entry.from - b.entry.from)
  const needed = partitions.map(() => new Set<number>())
  if (!spec.rows) return needed
  const at = sorted.map(p => partitions.indexOf(p))
  const rowGroups = sorted.reduce((n, p) => n + p.entry.rowGroups.length, 0)
  for (const column of spec.columns) {
    const { postings, rowKeys } = postingsOf(sorted, column, true)
    const entries = postings.entries(columnHotCap(rowGroups, spec.rows, column))
    const refs = inlineRefs(sorted, column, postings, rowKeys, entries, inlineCaps(spec.rows, column).max)
    for (let j = 0; j < refs.refPart.length; j++) needed[at[refs.refPart[j]]].add(refs.refRow[j])
  }
  return needed
}

/**
 * The entries of `column` over sorted partitions; with `rows`, the slice of each key in at
 * most `max` rows, its rows in the partitions' order, then the file's: the dataset's order.
 * A slice over `maxBytes` is taken back (the key keeps its postings only).
 */
function collect(
  partitions: readonly PartitionInput[],
  column: string,
  cap: number,
  rows: SegmentSpec['rows'] | undefined,
  source: Pick<SliceRows, 'columns' | 'numbers' | 'ids'> | undefined,
  w: ByteWriter,
): ColumnEntries {
  const { postings, rowKeys } = postingsOf(partitions, column, rows !== undefined)
  const entries = postings.entries(cap)
  if (!rows || !source) return { entries }
  const n = entries.keys.length
  const { max, maxBytes } = inlineCaps(rows, column)
  const { count, first, refPart, refRow } = inlineRefs(partitions, column, postings, rowKeys, entries, max)
  const start = new Float64Array(n + 1)
  const length = new Uint32Array(n)
  const crc = new Uint32Array(n)
  w.length = 0
  const write = sliceWriter(rows.fields, column)
  const slice: SliceRows = { ...source, part: refPart, row: refRow, lo: 0, hi: 0 }
  for (let i = 0; i < n; i++) {
    start[i] = w.length
    if (!count[i]) continue
    slice.lo = first[i]
    slice.hi = first[i + 1]
    write(slice, w)
    if (w.length - start[i] > maxBytes) {
      w.length = start[i]
      count[i] = 0
    } else length[i] = w.length - start[i]
  }
  start[n] = w.length
  // a view, not a copy: valid until the buffer is reused for the next column, after this one's objects are sealed
  const bytes = w.view()
  for (let i = 0; i < n; i++) if (count[i]) crc[i] = crc32(bytes.subarray(start[i], start[i + 1]))
  return { entries: { ...entries, rows: { count, offset: new Float64Array(n), length, crc } }, slices: { bytes, start } }
}

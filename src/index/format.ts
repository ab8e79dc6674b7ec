/**
 * The stored form of the value index. Every object is a body and a 26-byte trailer:
 *
 *   body | checksum (64-bit hash of body, 8) | id (8) | bucket (u32) | log2 buckets (1) | kind (1) | 'VIX1'
 *
 * so a reader verifies each object where it reads it and knows it got the object it asked
 * for (id and bucket match the descriptor). Kinds: a bucket of one column of a segment, or a
 * segment's partition table. Big-endian fixed fields; everything else LEB128 varints.
 *
 * Partition table body: count, then per partition (sorted by `from`) its key front- and
 * back-coded against the previous key, from - (previous to + 1), to - from, rows, row groups,
 * bytes, bytes - tailOffset, footer and bloom offsets as bytes - offset + 1 (0: absent),
 * CRC-32s of the page indexes and footer + 1 (0: absent). Then, when some partition has a
 * lookup copy: the copy's column (length, UTF-8) and per partition the copy's bytes + 1
 * (0: none), then its key front- and back-coded against the partition's key, bytes -
 * tailOffset and its tail's CRC-32 + 1 (tables written before copies end after the partitions).
 *
 * Bucket body: flags (1: the partition table follows, length-prefixed; 2: entries carry inline
 * rows), entry count, then per entry: key - previous key (the first: from the bucket's lowest
 * key), a tag (1: hot; else 2 × row-group count) and the row-group ordinals as runs: (gap from
 * the previous run's end) × 2 + (run longer than 1), then length - 2 when longer; with flag 2,
 * then its row count (0: none stored) and, when some, the byte length and CRC-32 of its slice
 * of the bucket's rows object (slices follow each other in entry order: offsets are implicit).
 *
 * Rows object (kind `rows`, beside a bucket of a column that stores rows): the entries'
 * slices one after the other, each the rows of that key in the segment in the dataset's order
 * (`rows.ts`). Read whole by a merge (trailer checked) or a slice at a time by a lookup (its
 * CRC-32 checked against the verified bucket).
 */
import { CorruptObjectError } from '../store/types.ts'
import { ByteReader, ByteWriter, IndexFormatError } from './bytes.ts'
import { hashHex } from './hash.ts'
import type { LookupEntry } from '../manifest/types.ts'
import type { Entries, EntryRows, IndexedPartition, SegmentDescriptor } from './types.ts'

/** Bits of a key; bucket b of 2^k holds the keys whose top k bits are b. */
export const KEY_BITS = 52
const MAGIC = [0x56, 0x49, 0x58, 0x31] // 'VIX1'
const TRAILER = 26
const INLINE_TABLE = 1
const HAS_ROWS = 2

/**
 * A bucket of one column of a segment, a segment's partition table, the inline rows beside a
 * bucket, or a column's pack (every bucket of a small column in one object).
 */
export type ObjectKind = 'bucket' | 'table' | 'rows' | 'pack'
const KIND_CODE: Record<ObjectKind, number> = { bucket: 1, table: 2, rows: 3, pack: 4 }

/** What an object must be: checked against its trailer. */
export interface ObjectIdentity {
  kind: ObjectKind
  id: string
  bucket: number
  log2Buckets: number
}

/** An index object that is missing or fails verification (checksum, trailer, identity, parse), named by key. */
export class IndexObjectError extends CorruptObjectError {
  constructor(key: string, reason: string) {
    super(key, reason)
    this.message = `index object ${key} ${reason}`
    this.name = 'IndexObjectError'
  }
}

/** `<chain>/index/<dataset>`: where a dataset's index objects live (`chain` as in manifest keys, e.g. `evm-1`). */
export const indexPrefix = (chain: string, dataset: string): string => `${chain}/index/${dataset}`

const pad = (n: number) => String(n).padStart(12, '0')
const span = (d: SegmentDescriptor) => `${pad(d.from)}-${pad(d.to)}`

/** Key of a segment's partition table object (one per segment, shared by its columns). */
export const tableKey = (prefix: string, d: SegmentDescriptor, table: string): string => `${prefix}/_partitions/${span(d)}-${table}.idx`

/** Key of bucket `b` of `column` in segment `d`: one object when the column has one bucket, else one per bucket under a folder. */
export function bucketKey(prefix: string, d: SegmentDescriptor, column: string, b: number): string {
  const c = d.columns[column]
  const base = `${prefix}/${column}/${span(d)}-${c.id}`
  return c.buckets === 1 ? `${base}.idx` : `${base}/${b.toString(16).padStart((c.buckets - 1).toString(16).length, '0')}.idx`
}

/** Key of the rows object beside bucket `b` of `column` in segment `d` (columns that store rows). */
export const rowsKey = (prefix: string, d: SegmentDescriptor, column: string, b: number): string =>
  bucketKey(prefix, d, column, b).replace(/\.idx$/, '.rows')

/** Key of the pack of `column` in segment `d` (columns with `pack` set): its buckets, sealed as stored, in one object. */
export const packKey = (prefix: string, d: SegmentDescriptor, column: string): string =>
  `${prefix}/${column}/${span(d)}-${d.columns[column].id}.pack`

/** A pack body: the count of the stored bucket objects, their lengths, then their bytes in bucket order. */
export function encodePack(buckets: readonly Uint8Array[]): Uint8Array {
  const w = new ByteWriter(buckets.reduce((n, b) => n + b.length + 5, 8))
  w.uint(buckets.length)
  for (const b of buckets) w.uint(b.length)
  for (const b of buckets) w.bytes(b)
  return w.finish()
}

/** The stored bucket objects in a pack body (views into it), still sealed: each is verified as its own object when opened. */
export function decodePack(body: Uint8Array): Uint8Array[] {
  const r = new ByteReader(body)
  const count = r.uint()
  if (count > body.length) throw new IndexFormatError(`${count} buckets in ${body.length} bytes`)
  const lengths = Array.from({ length: count }, () => r.uint())
  const parts = lengths.map(n => r.bytes(n))
  if (r.at !== body.length) throw new IndexFormatError(`${body.length - r.at} bytes after the last bucket`)
  return parts
}

/** Bucket of `key` among 2^log2Buckets. */
export const bucketOf = (key: number, log2Buckets: number): number => Math.floor(key / 2 ** (KEY_BITS - log2Buckets))

/** log2 of a power of two. */
export const log2 = (n: number): number => Math.round(Math.log2(n))

/** `body` followed by its trailer. */
export function seal(body: Uint8Array, who: ObjectIdentity): Uint8Array {
  const out = new Uint8Array(body.length + TRAILER)
  out.set(body)
  const view = new DataView(out.buffer, body.length)
  writeHex(view, 0, hashHex(body))
  writeHex(view, 8, who.id)
  view.setUint32(16, who.bucket)
  view.setUint8(20, who.log2Buckets)
  view.setUint8(21, KIND_CODE[who.kind])
  MAGIC.forEach((b, i) => view.setUint8(22 + i, b))
  return out
}

function writeHex(view: DataView, at: number, hex: string): void {
  if (!/^[0-9a-f]{16}$/.test(hex)) throw new RangeError(`not a 16-digit id: ${hex}`)
  view.setUint32(at, parseInt(hex.slice(0, 8), 16))
  view.setUint32(at + 4, parseInt(hex.slice(8), 16))
}

const readHex = (view: DataView, at: number) =>
  view.getUint32(at).toString(16).padStart(8, '0') +
  view
    .getUint32(at + 4)
    .toString(16)
    .padStart(8, '0')

/** The body of the object read under `key`, after checking its trailer, identity and checksum. */
export function unseal(key: string, bytes: Uint8Array, who: ObjectIdentity): Uint8Array {
  if (bytes.length < TRAILER) throw new IndexObjectError(key, `is damaged: ${bytes.length} bytes, shorter than its trailer`)
  const body = bytes.subarray(0, bytes.length - TRAILER)
  const view = new DataView(bytes.buffer, bytes.byteOffset + body.length, TRAILER)
  if (!MAGIC.every((b, i) => view.getUint8(22 + i) === b))
    throw new IndexObjectError(key, 'is damaged: no VIX1 trailer (truncated or not an index object)')
  const found = { kind: view.getUint8(21), id: readHex(view, 8), bucket: view.getUint32(16), log2Buckets: view.getUint8(20) }
  if (found.kind !== KIND_CODE[who.kind] || found.id !== who.id || found.bucket !== who.bucket || found.log2Buckets !== who.log2Buckets) {
    throw new IndexObjectError(
      key,
      `is damaged: its trailer names ${JSON.stringify(found)}, expected ${JSON.stringify({ ...who, kind: KIND_CODE[who.kind] })}`,
    )
  }
  const sum = hashHex(body)
  if (sum !== readHex(view, 0)) throw new IndexObjectError(key, `is damaged: checksum ${sum} does not match the stored ${readHex(view, 0)}`)
  return body
}

/** Runs `parse` over verified bytes, naming the object if they still do not parse. */
export function parsing<T>(key: string, parse: () => T): T {
  try {
    return parse()
  } catch (e) {
    if (e instanceof IndexFormatError) throw new IndexObjectError(key, `does not parse: ${e.message}`)
    throw e
  }
}

const utf8 = new TextEncoder()
const text = new TextDecoder()

function shared(a: Uint8Array, b: Uint8Array, fromEnd: boolean, limit: number): number {
  let n = 0
  while (n < limit && (fromEnd ? a[a.length - 1 - n] === b[b.length - 1 - n] : a[n] === b[n])) n++
  return n
}

const offsetFromEnd = (bytes: number, offset: number | undefined) => (offset === undefined ? 0 : bytes - offset + 1)

/** The partition table body (see the file comment). */
export function encodeTable(partitions: readonly IndexedPartition[]): Uint8Array {
  const w = new ByteWriter()
  w.uint(partitions.length)
  let prevKey: Uint8Array = new Uint8Array(0)
  let prevTo = -1
  for (const p of partitions) {
    if (p.from <= prevTo || p.to < p.from)
      throw new RangeError(`partition ${p.key} [${p.from}, ${p.to}] overlaps or precedes the one before`)
    const key = utf8.encode(p.key)
    writeKey(w, key, prevKey)
    w.uint(p.from - prevTo - 1)
    w.uint(p.to - p.from)
    w.uint(p.rows)
    w.uint(p.rowGroupCount)
    w.uint(p.bytes)
    w.uint(p.bytes - p.tailOffset)
    w.uint(offsetFromEnd(p.bytes, p.footerOffset))
    w.uint(offsetFromEnd(p.bytes, p.bloomOffset))
    w.uint(p.indexCrc === undefined ? 0 : p.indexCrc + 1)
    w.uint(p.footerCrc === undefined ? 0 : p.footerCrc + 1)
    prevKey = key
    prevTo = p.to
  }
  encodeLookups(w, partitions)
  return w.finish()
}

/** `key` front- and back-coded against `against`: the bytes they share at each end, then the rest. */
function writeKey(w: ByteWriter, key: Uint8Array, against: Uint8Array): void {
  const head = shared(key, against, false, Math.min(key.length, against.length))
  const tail = shared(key, against, true, Math.min(key.length, against.length) - head)
  w.uint(head)
  w.uint(tail)
  w.uint(key.length - head - tail)
  w.bytes(key.subarray(head, key.length - tail))
}

/** A key `writeKey` wrote against `against`. */
function readKey(r: ByteReader, against: Uint8Array): Uint8Array {
  const head = r.uint()
  const tail = r.uint()
  const middle = r.bytes(r.uint())
  if (head + tail > against.length) throw new IndexFormatError('key shares more than the key it is coded against has')
  const key = new Uint8Array(head + middle.length + tail)
  key.set(against.subarray(0, head))
  key.set(middle, head)
  key.set(against.subarray(against.length - tail), head + middle.length)
  return key
}

/** The lookup-copy section of a table (see the file comment); nothing when no partition has a copy. */
function encodeLookups(w: ByteWriter, partitions: readonly IndexedPartition[]): void {
  const column = partitions.find(p => p.lookup)?.lookup!.column
  if (column === undefined) return
  const name = utf8.encode(column)
  w.uint(name.length)
  w.bytes(name)
  for (const p of partitions) {
    const l = p.lookup
    if (!l) {
      w.uint(0)
      continue
    }
    if (l.column !== column) throw new RangeError(`partition ${p.key}: lookup copy by ${l.column}, the table's by ${column}`)
    w.uint(l.bytes + 1)
    writeKey(w, utf8.encode(l.key), utf8.encode(p.key))
    w.uint(l.bytes - l.tailOffset)
    w.uint(l.tailCrc === undefined ? 0 : l.tailCrc + 1)
  }
}

/** Reads the lookup-copy section into `partitions`, when the table has one. */
function decodeLookups(r: ByteReader, end: number, partitions: IndexedPartition[]): void {
  if (r.at === end) return
  const column = text.decode(r.bytes(r.uint()))
  for (const p of partitions) {
    const size = r.uint()
    if (size === 0) continue
    const key = readKey(r, utf8.encode(p.key))
    const bytes = size - 1
    const lookup: LookupEntry = { column, key: text.decode(key), bytes, tailOffset: bytes - r.uint() }
    const crc = r.uint()
    if (crc) lookup.tailCrc = crc - 1
    p.lookup = lookup
  }
}

/** A decoded partition table, with where each partition's ordinals start (base[p], base[count] = all row groups). */
export interface PartitionTable {
  partitions: IndexedPartition[]
  base: Uint32Array
}

export function decodeTable(body: Uint8Array): PartitionTable {
  const r = new ByteReader(body)
  const n = r.uint()
  const partitions: IndexedPartition[] = []
  const base = new Uint32Array(n + 1)
  let prevKey: Uint8Array = new Uint8Array(0)
  let prevTo = -1
  for (let i = 0; i < n; i++) {
    const key = readKey(r, prevKey)
    const from = prevTo + 1 + r.uint()
    const to = from + r.uint()
    const rows = r.uint()
    const rowGroupCount = r.uint()
    const bytes = r.uint()
    const p: IndexedPartition = { key: text.decode(key), from, to, rows, bytes, tailOffset: bytes - r.uint(), rowGroupCount }
    const footer = r.uint()
    const bloom = r.uint()
    if (footer) p.footerOffset = bytes - footer + 1
    if (bloom) p.bloomOffset = bytes - bloom + 1
    const indexCrc = r.uint()
    const footerCrc = r.uint()
    if (indexCrc) p.indexCrc = indexCrc - 1
    if (footerCrc) p.footerCrc = footerCrc - 1
    partitions.push(p)
    base[i + 1] = base[i] + rowGroupCount
    prevKey = key
    prevTo = to
  }
  decodeLookups(r, body.length, partitions)
  if (r.at !== body.length) throw new IndexFormatError('bytes after the partition table')
  return { partitions, base }
}

/** The bytes of entries [lo, hi) of `e` (without the flags and count), keys delta-coded from `floor`. */
export function encodeEntries(w: ByteWriter, e: Entries, lo: number, hi: number, floor: number): void {
  let prev = floor
  for (let i = lo; i < hi; i++) {
    w.uint(e.keys[i] - prev)
    prev = e.keys[i]
    if (e.hot[i]) {
      w.uint(1)
      if (e.rows) w.uint(0)
      continue
    }
    const s = e.start[i]
    const end = e.start[i + 1]
    w.uint((end - s) * 2)
    let prevEnd = 0
    for (let j = s; j < end;) {
      const first = e.ordinals[j]
      let k = j + 1
      while (k < end && e.ordinals[k] === e.ordinals[k - 1] + 1) k++
      const run = k - j
      w.uint((first - prevEnd) * 2 + (run > 1 ? 1 : 0))
      if (run > 1) w.uint(run - 2)
      prevEnd = first + run
      j = k
    }
    if (e.rows) writeEntryRows(w, e.rows, i)
  }
}

function writeEntryRows(w: ByteWriter, rows: EntryRows, i: number): void {
  w.uint(rows.count[i])
  if (rows.count[i] === 0) return
  w.uint(rows.length[i])
  w.uint(rows.crc[i])
}

/** A bucket body: entries [lo, hi) of `e`, all of bucket `b` of 2^log2Buckets, with the partition table when inline. */
export function encodeBucket(e: Entries, lo: number, hi: number, b: number, log2Buckets: number, table?: Uint8Array): Uint8Array {
  const w = new ByteWriter(64 + (table?.length ?? 0) + (hi - lo) * 12)
  w.byte((table ? INLINE_TABLE : 0) | (e.rows ? HAS_ROWS : 0))
  if (table) {
    w.uint(table.length)
    w.bytes(table)
  }
  w.uint(hi - lo)
  encodeEntries(w, e, lo, hi, b * 2 ** (KEY_BITS - log2Buckets))
  return w.finish()
}

/** A decoded bucket: its entries, and the partition table when it carries it. */
export interface Bucket {
  entries: Entries
  table?: PartitionTable
}

/** Decodes a bucket body; its keys must all fall in bucket `b`. */
export function decodeBucket(body: Uint8Array, b: number, log2Buckets: number): Bucket {
  const r = new ByteReader(body)
  const flags = r.byte()
  const table = flags & INLINE_TABLE ? decodeTable(r.bytes(r.uint())) : undefined
  const n = r.uint()
  const keys = new Float64Array(n)
  const hot = new Uint8Array(n)
  const start = new Uint32Array(n + 1)
  const rows: EntryRows | undefined =
    flags & HAS_ROWS
      ? { count: new Uint32Array(n), offset: new Float64Array(n), length: new Uint32Array(n), crc: new Uint32Array(n) }
      : undefined
  let rowBytes = 0
  let ordinals = new Uint32Array(Math.max(16, n * 2))
  let count = 0
  const width = 2 ** (KEY_BITS - log2Buckets)
  let key = b * width
  for (let i = 0; i < n; i++) {
    const delta = r.uint()
    if (i > 0 && delta === 0) throw new IndexFormatError('keys out of order')
    key += delta
    keys[i] = key
    const tag = r.uint()
    if (tag & 1) hot[i] = 1
    else {
      const total = tag / 2
      if (count + total > ordinals.length) {
        const grown = new Uint32Array(Math.max(ordinals.length * 2, count + total))
        grown.set(ordinals.subarray(0, count))
        ordinals = grown
      }
      let prevEnd = 0
      for (let got = 0; got < total;) {
        const head = r.uint()
        const run = head & 1 ? r.uint() + 2 : 1
        const first = prevEnd + Math.floor(head / 2)
        if (got + run > total) throw new IndexFormatError('runs longer than their count')
        for (let j = 0; j < run; j++) ordinals[count++] = first + j
        got += run
        prevEnd = first + run
      }
    }
    start[i + 1] = count
    if (rows) {
      rows.offset[i] = rowBytes
      rows.count[i] = r.uint()
      if (rows.count[i] > 0) {
        if (hot[i]) throw new IndexFormatError('a hot entry with rows')
        rows.length[i] = r.uint()
        const crc = r.uint()
        if (crc > 0xffffffff) throw new IndexFormatError('a CRC-32 above 32 bits')
        rows.crc[i] = crc
        rowBytes += rows.length[i]
      }
    }
  }
  if (key >= (b + 1) * width) throw new IndexFormatError(`a key beyond bucket ${b}`)
  if (r.at !== body.length) throw new IndexFormatError('bytes after the last entry')
  return { entries: { keys, hot, start, ordinals: ordinals.subarray(0, count), ...(rows ? { rows } : {}) }, ...(table ? { table } : {}) }
}

/** Index of `key` in sorted `keys`, or -1. */
export function findKey(keys: Float64Array, key: number): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid] < key) lo = mid + 1
    else hi = mid
  }
  return lo < keys.length && keys[lo] === key ? lo : -1
}

/**
 * The slice codec of the index's inline rows (rows of rare values stored next to their
 * postings, see README "Inline rows"): the rows of one key of one column ↔ bytes, derived
 * from the declaration's stored fields and their kinds. A slice is read by one ranged read,
 * so it is compressed on its own:
 *
 *   flags (1: the body is snappy-compressed; 2: the looked-up column is stored) | body
 *
 * Body: without flag 2, the CRC-32 of the looked-up value's bytes (text: UTF-8; 4 bytes,
 * big-endian), since every row of the slice holds that value and the reader restores it;
 * then column by column (declaration order, the looked-up column left out unless flag 2),
 * one entry per row:
 *
 *   - u64 kinds: a varint, 0 for null, else zigzag(value − previous non-null value) + 1
 *     (block numbers and indexes ascend: a byte or two);
 *   - bool: a byte, 0 false, 1 true, 2 null;
 *   - every other kind: a varint tag, 0 null, 1 a new value follows, t ≥ 2 the same as the
 *     column's (t − 2)-th new value in this slice (a wallet's Transfers share the contract,
 *     topic0, often the block and transaction); a new value of a fixed width is its length
 *     without leading zero bytes then those bytes (quantities, topics holding addresses),
 *     variable bytes and text length first.
 *
 * The body is snappy-compressed when that is shorter (ABI words in `data`, repeats the tags
 * do not catch). The looked-up value's check binds the slice to its value: under a key two
 * values share (a 52-bit hash collision), a reader of the other value gets no rows, never
 * these; a build that meets such a collision inside a slice stores the column (flag 2).
 */
import { snappyUncompress } from 'hyparquet'
import { snappyCompress } from 'hyparquet-writer/src/snappy.js'
import type { ColumnBatch, ColumnValues } from '../columns/batch.ts'
import { isStored, columnOf, type DatasetDecl } from '../schema/dataset.ts'
import { KINDS, type Kind, type StoredValue } from '../schema/kinds.ts'
import { crc32 } from '../store/crc32.ts'
import { ByteReader, ByteWriter, IndexFormatError } from './bytes.ts'
import { hashHex } from './hash.ts'

/** A stored column as the codec writes it. */
export interface RowField {
  column: string
  kind: Kind
}

/** The stored columns of a dataset, each once, in declaration order: what an inline row holds. */
export const rowFieldsOf = (d: DatasetDecl): RowField[] => {
  const seen = new Set<string>()
  const out: RowField[] = []
  for (const f of d.fields) {
    if (!isStored(f) || seen.has(columnOf(f))) continue
    seen.add(columnOf(f))
    out.push({ column: columnOf(f), kind: f.kind })
  }
  return out
}

type Wire = 'u64' | 'bool' | 'text' | 'bytes' | 'fixed'

/** How a kind is written: kinds stored alike are written alike (u64hex and u64int, hash and u256hex). */
function wireOf(kind: Kind): Wire {
  if (kind === 'u64hex' || kind === 'u64int') return 'u64'
  if (kind === 'bool') return 'bool'
  if (kind === 'string' || kind === 'json') return 'text'
  return KINDS[kind].width === undefined ? 'bytes' : 'fixed'
}

const wireName = (kind: Kind) => (wireOf(kind) === 'fixed' ? `fixed${KINDS[kind].width}` : wireOf(kind))

/**
 * Id of the slice layout of a field list: segments carry it, so rows are decoded only with the
 * layout that wrote them. It names columns and how each is written, not the declaration's
 * kinds: two declarations of one storage (Move `transactions` and `transactions/decoded`,
 * integers in one and hex in the other) read each other's rows.
 */
export const rowCodecId = (fields: readonly RowField[]): string =>
  hashHex(new TextEncoder().encode(`rows2:${fields.map(f => `${f.column}:${wireName(f.kind)}`).join(',')}`))

const utf8 = new TextEncoder()
const text = new TextDecoder('utf-8', { fatal: true })
const COMPRESSED = 1
const COLUMN_KEPT = 2
const BIG = 2n ** 52n

/** The bytes of an indexed value, as its key and its check hash them. */
export const valueBytes = (v: Uint8Array | string): Uint8Array => (typeof v === 'string' ? utf8.encode(v) : v)

/** The check a slice carries of its looked-up value. */
export const valueCheck = (v: Uint8Array | string): number => crc32(valueBytes(v))

function writeBig(w: ByteWriter, n: bigint): void {
  while (n >= 0x80n) {
    w.byte(Number(n & 0x7fn) | 0x80)
    n >>= 7n
  }
  w.byte(Number(n))
}

/** A varint of up to 70 bits (a zigzag u64 delta + 1): a number up to 7 bytes (49 bits, exact), else a bigint. */
function readVarint(r: ByteReader): number | bigint {
  let n = 0
  let scale = 1
  const start = r.at
  for (;;) {
    const b = r.byte()
    n += (b & 0x7f) * scale
    if (b < 0x80) break
    scale *= 0x80
    if (scale > 2 ** 42) {
      r.at = start
      return readBigVarint(r)
    }
  }
  return n
}

function readBigVarint(r: ByteReader): bigint {
  let n = 0n
  for (let shift = 0n; ; shift += 7n) {
    if (shift > 70n) throw new IndexFormatError('varint too long')
    const b = r.byte()
    n |= BigInt(b & 0x7f) << shift
    if (b < 0x80) return n
  }
}

const bad = (column: string, kind: Kind, v: StoredValue) => new RangeError(`column ${column} (${kind}): cannot encode ${String(v)}`)

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The rows of one slice: row j (lo ≤ j < hi) is row `row[j]` of batch `part[j]`; `columns[p][f]`
 * is batch p's column of field f (undefined: all null).
 */
export interface SliceRows {
  columns: readonly (readonly (ColumnValues | undefined)[])[]
  part: ArrayLike<number>
  row: ArrayLike<number>
  lo: number
  hi: number
}

/** Per batch, its column of each field: what `SliceRows.columns` wants. */
export const sliceColumns = (fields: readonly RowField[], batches: readonly ColumnBatch[]): (ColumnValues | undefined)[][] =>
  batches.map(b => fields.map(f => b.columns[f.column]))

/**
 * Appends the slice of `rows` (all holding one value of `column`) to `out`. `check`: the
 * looked-up value's check when the column is left out (the build passes `undefined` to have
 * it worked out from the rows, a merge the inputs' check), or `null` to store the column.
 * `scratch` is reused between calls.
 */
export function encodeSlice(
  fields: readonly RowField[],
  column: string,
  rows: SliceRows,
  out: ByteWriter,
  scratch: ByteWriter,
  check?: number | null,
): void {
  const lookup = fields.findIndex(f => f.column === column)
  if (check === undefined) check = lookup < 0 ? null : commonCheck(rows, lookup)
  const w = scratch
  w.length = 0
  if (check !== null) w.u32(check)
  const { columns, part, row, lo, hi } = rows
  const distinct: StoredValue[] = []
  for (let f = 0; f < fields.length; f++) {
    if (f === lookup && check !== null) continue
    const { kind, column: name } = fields[f]
    const wire = wireOf(kind)
    const width = KINDS[kind].width ?? 0
    let prev = 0n
    let prevNumber = 0
    distinct.length = 0
    for (let j = lo; j < hi; j++) {
      const v = columns[part[j]][f]?.[row[j]] ?? null
      if (v === null) {
        w.byte(wire === 'bool' ? 2 : 0)
        continue
      }
      if (wire === 'u64') {
        if (typeof v !== 'bigint' || v < 0n || v >= 1n << 64n) throw bad(name, kind, v)
        if (v < BIG && prev < BIG) {
          const n = Number(v)
          const d = n - prevNumber
          w.uint((d >= 0 ? d * 2 : -d * 2 - 1) + 1)
          prevNumber = n
        } else {
          const d = v - prev
          writeBig(w, (d >= 0n ? d * 2n : -d * 2n - 1n) + 1n)
          prevNumber = Number(v)
        }
        prev = v
        continue
      }
      if (wire === 'bool') {
        if (typeof v !== 'boolean') throw bad(name, kind, v)
        w.byte(v ? 1 : 0)
        continue
      }
      if (wire === 'text' ? typeof v !== 'string' : !(v instanceof Uint8Array) || (wire === 'fixed' && v.length !== width))
        throw bad(name, kind, v)
      const seen = wire === 'text' ? distinct.indexOf(v) : distinct.findIndex(d => sameBytes(d as Uint8Array, v as Uint8Array))
      if (seen >= 0) {
        w.uint(seen + 2)
        continue
      }
      distinct.push(v)
      w.byte(1)
      if (wire === 'text') {
        const b = utf8.encode(v as string)
        w.uint(b.length)
        w.bytes(b)
      } else if (wire === 'bytes') {
        w.uint((v as Uint8Array).length)
        w.bytesOf(v as Uint8Array, 0, (v as Uint8Array).length)
      } else {
        const b = v as Uint8Array
        let i = 0
        while (i < width && b[i] === 0) i++
        w.byte(width - i)
        w.bytesOf(b, i, width)
      }
    }
  }
  const body = w.view()
  const packed = body.length > 16 ? snappyCompress(body) : undefined
  const flags = check === null ? COLUMN_KEPT : 0
  if (packed && packed.length < body.length) {
    out.byte(flags | COMPRESSED)
    out.bytes(packed)
  } else {
    out.byte(flags)
    out.bytes(body)
  }
}

/** The check of the looked-up value when every row holds the same one, else null (a key collision: the column is stored). */
function commonCheck(rows: SliceRows, lookup: number): number | null {
  const { columns, part, row, lo, hi } = rows
  const first = columns[part[lo]][lookup]?.[row[lo]] ?? null
  if (!(first instanceof Uint8Array) && typeof first !== 'string') return null
  for (let j = lo + 1; j < hi; j++) {
    const v = columns[part[j]][lookup]?.[row[j]] ?? null
    if (typeof first === 'string' ? v !== first : !(v instanceof Uint8Array) || !sameBytes(v, first)) return null
  }
  return valueCheck(first)
}

/** A decoded slice: its rows, the looked-up column among them only when stored, and the value's check when left out. */
export interface DecodedSlice {
  batch: ColumnBatch
  check: number | null
}

/** The `count` rows of slice `bytes` of `column`, without filling the looked-up column in (merges re-encode them). */
export function decodeSlice(fields: readonly RowField[], column: string, bytes: Uint8Array, count: number): DecodedSlice {
  if (bytes.length === 0) throw new IndexFormatError('an empty slice')
  const flags = bytes[0]
  if (flags > 3) throw new IndexFormatError(`slice flags ${flags}`)
  const r = new ByteReader(flags & COMPRESSED ? uncompress(bytes.subarray(1)) : bytes.subarray(1))
  const lookup = fields.findIndex(f => f.column === column)
  const check = flags & COLUMN_KEPT || lookup < 0 ? null : r.u32()
  const columns: Record<string, ColumnValues> = {}
  for (let f = 0; f < fields.length; f++) {
    if (f === lookup && check !== null) continue
    const { kind, column: name } = fields[f]
    const wire = wireOf(kind)
    const width = KINDS[kind].width ?? 0
    const values: ColumnValues = new Array(count)
    const distinct: StoredValue[] = []
    let prev = 0n
    for (let i = 0; i < count; i++) {
      if (wire === 'bool') {
        const b = r.byte()
        if (b > 2) throw new IndexFormatError(`a bool of ${b}`)
        values[i] = b === 2 ? null : b === 1
        continue
      }
      const tag = readVarint(r)
      if (tag === 0) {
        values[i] = null
        continue
      }
      if (wire === 'u64') {
        const z = BigInt(tag) - 1n
        prev += z & 1n ? -((z + 1n) >> 1n) : z >> 1n
        if (prev < 0n || prev >= 1n << 64n) throw new IndexFormatError(`a u64 of ${prev}`)
        values[i] = prev
        continue
      }
      if (typeof tag !== 'number') throw new IndexFormatError('a tag too large')
      if (tag >= 2) {
        if (tag - 2 >= distinct.length) throw new IndexFormatError(`a repeat of value ${tag - 2} of ${distinct.length}`)
        values[i] = distinct[tag - 2]
        continue
      }
      let v: StoredValue
      if (wire === 'text') {
        try {
          v = text.decode(r.bytes(r.uint()))
        } catch (e) {
          if (e instanceof IndexFormatError) throw e
          throw new IndexFormatError(`column ${name}: not UTF-8`)
        }
      } else if (wire === 'bytes') v = r.bytes(r.uint()).slice()
      else {
        const n = r.byte()
        if (n > width) throw new IndexFormatError(`a ${kind} of ${n} bytes`)
        v = new Uint8Array(width)
        v.set(r.bytes(n), width - n)
      }
      distinct.push(v)
      values[i] = v
    }
    columns[fields[f].column] = values
  }
  if (r.at !== r.buf.length) throw new IndexFormatError(`bytes after ${count} rows`)
  return { batch: { length: count, columns }, check }
}

/**
 * The `count` rows of slice `bytes`, read for `value` of `column`: its rows with `column`
 * restored, or none when the slice holds another value under the same key.
 */
export function decodeRows(
  fields: readonly RowField[],
  column: string,
  value: Uint8Array | string,
  bytes: Uint8Array,
  count: number,
): ColumnBatch {
  const { batch, check } = decodeSlice(fields, column, bytes, count)
  if (check === null) return batch
  if (check !== valueCheck(value)) return { length: 0, columns: Object.fromEntries(fields.map(f => [f.column, []])) }
  return { length: count, columns: { ...batch.columns, [column]: new Array(count).fill(value) } }
}

/** Snappy bytes (their length first) uncompressed; a malformed stream is an IndexFormatError. */
function uncompress(input: Uint8Array): Uint8Array {
  const r = new ByteReader(input)
  const length = r.uint()
  if (length > 2 ** 31) throw new IndexFormatError(`a slice of ${length} bytes`)
  const out = new Uint8Array(length)
  try {
    snappyUncompress(input, out)
  } catch (e) {
    throw new IndexFormatError(`slice does not uncompress: ${(e as Error).message}`)
  }
  return out
}

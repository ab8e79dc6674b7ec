/**
 * The row codec of the index's inline rows (rows of rare values stored next to their
 * postings, see README "Inline rows"): a list of records of a dataset ↔ bytes, derived from
 * the declaration's stored fields and their kinds. Row by row, so the slices of two
 * segments concatenate into the slice of their merge. Per row: a null bitmap over the fields
 * (⌈fields / 8⌉ bytes), then each non-null value: u64 kinds as a varint (LEB128 over
 * bigint); 256-bit quantities without their leading zero bytes, length first; other
 * fixed-width bytes as they are; variable bytes, strings and JSON length first; a bool as a byte.
 */
import type { ColumnBatch, ColumnValues } from '../columns/batch.ts'
import { isStored, columnOf, type DatasetDecl } from '../schema/dataset.ts'
import { KINDS, type Kind, type StoredValue } from '../schema/kinds.ts'
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

/** Id of a field list: segments carry it, so rows are decoded only by the declaration that wrote them. */
export const rowCodecId = (fields: readonly RowField[]): string =>
  hashHex(new TextEncoder().encode(`rows1:${fields.map(f => `${f.column}:${f.kind}`).join(',')}`))

const utf8 = new TextEncoder()
const text = new TextDecoder()
const TRIMMED: ReadonlySet<Kind> = new Set(['u256hex', 'u256pad'])

function writeBig(w: ByteWriter, n: bigint): void {
  if (n >= 0n && n <= 0x1fffffffffffffn) return w.uint(Number(n))
  if (n < 0n) throw new RangeError(`not an unsigned 64-bit value: ${n}`)
  while (n >= 0x80n) {
    w.byte(Number(n & 0x7fn) | 0x80)
    n >>= 7n
  }
  w.byte(Number(n))
}

function readBig(r: ByteReader): bigint {
  let n = 0n
  for (let shift = 0n; ; shift += 7n) {
    if (shift > 63n) throw new IndexFormatError('u64 varint too long')
    const b = r.byte()
    n |= BigInt(b & 0x7f) << shift
    if (b < 0x80) return n
  }
}

const bad = (column: string, kind: Kind, v: StoredValue) => new RangeError(`column ${column} (${kind}): cannot encode ${String(v)}`)

type ValueWriter = (w: ByteWriter, v: StoredValue) => void

/** The writer of one column's values, chosen once per kind (a build writes millions of values). */
function valueWriter(kind: Kind, column: string): ValueWriter {
  const fail = (v: StoredValue) => {
    throw bad(column, kind, v)
  }
  const width = KINDS[kind].width
  switch (kind) {
    case 'u64hex':
    case 'u64int':
      return (w, v) => (typeof v === 'bigint' ? writeBig(w, v) : fail(v))
    case 'bool':
      return (w, v) => (typeof v === 'boolean' ? w.byte(v ? 1 : 0) : fail(v))
    case 'string':
    case 'json':
      return (w, v) => {
        if (typeof v !== 'string') return fail(v)
        const b = utf8.encode(v)
        w.uint(b.length)
        w.bytes(b)
      }
    default:
      if (width === undefined)
        return (w, v) => {
          if (!(v instanceof Uint8Array)) return fail(v)
          w.uint(v.length)
          w.bytesOf(v, 0, v.length)
        }
      if (!TRIMMED.has(kind)) return (w, v) => (v instanceof Uint8Array && v.length === width ? w.bytesOf(v, 0, width) : fail(v))
      return (w, v) => {
        if (!(v instanceof Uint8Array) || v.length !== width) return fail(v)
        let i = 0
        while (i < width && v[i] === 0) i++
        w.byte(width - i)
        w.bytesOf(v, i, width)
      }
  }
}

function readValue(r: ByteReader, kind: Kind): StoredValue {
  switch (kind) {
    case 'u64hex':
    case 'u64int':
      return readBig(r)
    case 'bool':
      return r.byte() === 1
    case 'string':
    case 'json':
      return text.decode(r.bytes(r.uint()))
    default: {
      const width = KINDS[kind].width
      if (width === undefined) return r.bytes(r.uint()).slice()
      if (!TRIMMED.has(kind)) return r.bytes(width).slice()
      const n = r.byte()
      if (n > width) throw new IndexFormatError(`a ${kind} of ${n} bytes`)
      const out = new Uint8Array(width)
      out.set(r.bytes(n), width - n)
      return out
    }
  }
}

/** Rows `rows` of `batch` (indexes, in the order given) as bytes; a column the batch lacks is null. */
export function encodeRows(fields: readonly RowField[], batch: ColumnBatch, rows: Iterable<number>): Uint8Array {
  const w = new ByteWriter()
  const write = rowWriter(fields, batch)
  for (const i of rows) write(i, w)
  return w.finish()
}

/**
 * A writer of single rows of `batch` (a build encodes millions, a few per key): the columns
 * and kinds are resolved once, not per row.
 */
export function rowWriter(fields: readonly RowField[], batch: ColumnBatch): (row: number, w: ByteWriter) => void {
  const columns = fields.map(f => batch.columns[f.column])
  const writers = fields.map(f => valueWriter(f.kind, f.column))
  const bitmap = new Uint8Array((fields.length + 7) >> 3)
  const n = fields.length
  return (i, w) => {
    bitmap.fill(0)
    for (let j = 0; j < n; j++) if ((columns[j]?.[i] ?? null) === null) bitmap[j >> 3] |= 1 << (j & 7)
    w.bytes(bitmap)
    for (let j = 0; j < n; j++) {
      const v = columns[j]?.[i] ?? null
      if (v !== null) writers[j](w, v)
    }
  }
}

/** The `count` rows `bytes` hold, as plain columns keyed by stored column. */
export function decodeRows(fields: readonly RowField[], bytes: Uint8Array, count: number): ColumnBatch {
  const r = new ByteReader(bytes)
  const columns: Record<string, ColumnValues> = Object.fromEntries(fields.map(f => [f.column, new Array(count)]))
  const width = (fields.length + 7) >> 3
  for (let i = 0; i < count; i++) {
    const bitmap = r.bytes(width)
    fields.forEach((f, j) => {
      columns[f.column][i] = bitmap[j >> 3] & (1 << (j & 7)) ? null : readValue(r, f.kind)
    })
  }
  if (r.at !== bytes.length) throw new IndexFormatError(`bytes after ${count} rows`)
  return { length: count, columns }
}

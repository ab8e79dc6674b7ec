/**
 * The slice codec of the index's inline rows (rows of rare values stored next to their
 * postings, see README "Inline rows"): the rows of one key of one column ↔ bytes, derived
 * from the declaration's stored fields and their kinds. A slice is read by one ranged read
 * and decoded on its own:
 *
 *   flags (1: the looked-up column is stored) | body
 *
 * Body: without flag 1, the CRC-32 of the looked-up value's bytes (text: UTF-8; 4 bytes,
 * big-endian), since every row of the slice holds that value and the reader restores it;
 * then column by column (declaration order, the looked-up column left out unless flag 1),
 * one entry per row:
 *
 *   - u64 kinds: a varint, 0 for null, else zigzag(value − previous non-null value) + 1
 *     (block numbers and indexes ascend: a byte or two);
 *   - bool: a byte, 0 false, 1 true, 2 null;
 *   - every other kind: a varint tag, 0 null, 1 a new value follows, t ≥ 2 the same as the
 *     column's (t − 2)-th new value in this slice (a wallet's Transfers share the contract,
 *     topic0, often the block and transaction). A new value of a fixed width is its length
 *     without leading zero bytes then those bytes (quantities, topics holding addresses);
 *     variable bytes their length, then, when it is a multiple of 32 (ABI words: a log's
 *     `data`, calldata arguments), each word so trimmed, else the bytes; text length first.
 *     A signed integer (`int`, offset binary) is written in two's complement without its
 *     sign-extension bytes (`ByteWriter.signedTrimmed`): a DEX amount is ~9 bytes, not 33.
 *
 * On recorded mainnet logs that is half the row-by-row form (130 against 259 bytes a row),
 * as small as snappy over the same columns, which costs an allocation or three a slice.
 * The looked-up value's check binds the slice to its value: under a key two values share (a
 * 52-bit hash collision), a reader of the other value gets no rows, never these; a build
 * that meets such a collision inside a slice stores the column (flag 1).
 */
import { isVectorColumn, type ColumnBatch, type ColumnValues, type PackedBatch } from '../columns/batch.ts'
import { valueAt, type Vector } from '../columns/vector.ts'
import { rangesEqual } from '../columns/compare.ts'
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

/** The stored columns of a dataset, each once, in declaration order, but those declared `inline: false`: what an inline row holds. */
export const rowFieldsOf = (d: DatasetDecl): RowField[] => {
  const seen = new Set<string>()
  const out: RowField[] = []
  for (const f of d.fields) {
    if (!isStored(f) || f.inline === false || seen.has(columnOf(f))) continue
    seen.add(columnOf(f))
    out.push({ column: columnOf(f), kind: f.kind })
  }
  return out
}

type Wire = 'u64' | 'bool' | 'text' | 'bytes' | 'fixed' | 'signed'

/** How a kind is written: kinds stored alike are written alike (u64hex and u64int, hash and u256hex). */
function wireOf(kind: Kind): Wire {
  if (kind === 'u64hex' || kind === 'u64int') return 'u64'
  if (kind === 'bool') return 'bool'
  if (kind === 'string' || kind === 'json') return 'text'
  if (kind === 'int') return 'signed'
  return KINDS[kind].width === undefined ? 'bytes' : 'fixed'
}

const wireName = (kind: Kind) => {
  const wire = wireOf(kind)
  return wire === 'fixed' || wire === 'signed' ? `${wire}${KINDS[kind].width}` : wire
}

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
const COLUMN_KEPT = 1

/** The bytes of an indexed value, as its key and its check hash them. */
const valueBytes = (v: Uint8Array | string): Uint8Array => (typeof v === 'string' ? utf8.encode(v) : v)

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

/** Equal bytes; the same array first (the ingester's rows share one per repeated hash and address, `hexInterner`). */
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => sameRanges(a, 0, a.length, b, 0, b.length)

/** Equal `a[as, ae)` and `b[bs, be)`; the same bytes first. */
function sameRanges(a: Uint8Array, as: number, ae: number, b: Uint8Array, bs: number, be: number): boolean {
  if (a === b && as === bs) return ae === be
  return ae - as === be - bs && rangesEqual(a, as, b, bs, ae - as)
}

/**
 * A column of the rows a build or merge reads: plain values, or a packed vector (the ingester's
 * rows), whose byte values are written from where they lie without a view of each.
 */
export type RowColumn = ColumnValues | Vector

/** The value of row `i` of a column (null for a null row). */
const cell = (c: RowColumn | undefined, i: number): StoredValue | null =>
  c === undefined ? null : isVectorColumn(c) ? valueAt(c, i) : (c[i] ?? null)

/**
 * The rows of one slice: row j (lo ≤ j < hi) is row `row[j]` of batch `part[j]`; `columns[p][f]`
 * is batch p's column of field f (undefined: all null).
 */
export interface SliceRows {
  columns: readonly (readonly (RowColumn | undefined)[])[]
  /** Optional, per batch, its u64 columns as numbers (see `sliceNumbers`): a build converts each row once, not once a copy. */
  numbers?: readonly (readonly (Float64Array | undefined)[])[]
  /** Optional, the build's value ids of its byte and text columns (see `sliceIds`). */
  ids?: SliceIds
  part: ArrayLike<number>
  row: ArrayLike<number>
  lo: number
  hi: number
}

/** Per batch, its column of each field: what `SliceRows.columns` wants. */
export const sliceColumns = (fields: readonly RowField[], batches: readonly (ColumnBatch | PackedBatch)[]): (RowColumn | undefined)[][] =>
  batches.map(b => fields.map((f): RowColumn | undefined => b.columns[f.column]))

const U64_END = 1n << 64n
const WIRE_CODE: Record<Wire, number> = { u64: 0, bool: 1, text: 2, bytes: 3, fixed: 4, signed: 5 }

/**
 * Per batch, its u64 columns (undefined for the others) as numbers: the value when below 2^52,
 * -1 for null, NaN for anything else (a larger value, written from the bigint, or an invalid one). Converting a bigint costs
 * more than writing it, and a build writes a rare row once per column it is rare in.
 */
export const sliceNumbers = (
  fields: readonly RowField[],
  batches: readonly (ColumnBatch | PackedBatch)[],
): (Float64Array | undefined)[][] =>
  batches.map(b =>
    fields.map(f => {
      const values: RowColumn | undefined = b.columns[f.column]
      if (wireOf(f.kind) !== 'u64' || !values) return undefined
      const out = new Float64Array(b.length)
      if (isVectorColumn(values)) {
        if (values.type !== 'u64') return undefined
        const { words, valid } = values
        for (let i = 0; i < b.length; i++) {
          const high = words[2 * i + 1]
          out[i] = valid !== null && valid[i] === 0 ? -1 : high < 2 ** 20 ? words[2 * i] + high * 2 ** 32 : NaN
        }
        return out
      }
      for (let i = 0; i < b.length; i++) {
        const v = values[i] ?? null
        const n = typeof v === 'bigint' ? Number(v) : NaN
        out[i] = v === null ? -1 : n >= 0 && n < 2 ** 52 ? n : NaN
      }
      return out
    }),
  )

/**
 * Per field of the byte and text kinds, an id per row of every batch, equal for equal values
 * across the batches (-1 null, -2 a value of the wrong type or width, left to the writer to
 * refuse), and the number of ids. A build writes a rare row once per column it is rare in, so
 * its slices find a repeated value by its id instead of reading the value object again, which
 * costs a cache miss a value (objects scattered through the heap) and a byte compare.
 */
export interface SliceIds {
  /**
   * Per batch, row by row, the id of each field: `of[p][row * stride + f]` (-1 where the field
   * has none). Row by row because a slice writes its rows' fields one after another: a row's ids
   * then share a cache line, where a column each cost a cache miss a field.
   */
  of: readonly Int32Array[]
  stride: number
  counts: readonly number[]
}

export function sliceIds(fields: readonly RowField[], batches: readonly (ColumnBatch | PackedBatch)[]): SliceIds {
  const stride = fields.length
  const of = batches.map(b => new Int32Array(b.length * stride).fill(-1))
  const counts = fields.map((field, f) => {
    const wire = wireOf(field.kind)
    if (wire === 'u64' || wire === 'bool') return 0
    const width = wire === 'bytes' ? undefined : KINDS[field.kind].width
    const text = wire === 'text' ? textIds() : undefined
    const bytes = text ? undefined : byteIds(batches.reduce((n, b) => n + b.length, 0))
    batches.forEach((b, p) => {
      const values: RowColumn | undefined = b.columns[field.column]
      if (!values) return
      const out = of[p]
      if (bytes && isVectorColumn(values) && (values.type === 'fixed' || (values.type === 'binary' && !values.text))) {
        // byte values read where they lie: no view of each
        const { valid } = values
        for (let i = 0, at = f; i < b.length; i++, at += stride) {
          if (valid !== null && valid[i] === 0) out[at] = -1
          else if (values.type === 'fixed') out[at] = width === values.width ? bytes.idAt(values.bytes, i * width, (i + 1) * width) : -2
          else out[at] = bytes.idAt(values.bytes, values.offsets[i], values.offsets[i + 1], width)
        }
      } else {
        for (let i = 0, at = f; i < b.length; i++, at += stride) {
          const v = cell(values, i)
          out[at] = v === null ? -1 : text ? text.id(v) : bytes!.id(v, width)
        }
      }
    })
    return (text ?? bytes)!.count()
  })
  return { of, stride, counts }
}

/** Ids of text values, by a map. */
function textIds() {
  const seen = new Map<string, number>()
  return {
    id: (v: StoredValue): number => {
      if (typeof v !== 'string') return -2
      let id = seen.get(v)
      if (id === undefined) seen.set(v, (id = seen.size))
      return id
    },
    count: () => seen.size,
  }
}

/**
 * Ids of byte values (of `width` bytes when given), by an open-addressing table of at least twice
 * `rows` slots: `id` of a value, `idAt` of `bytes[start, end)` (a packed column's row).
 */
function byteIds(rows: number) {
  const shift = tableShift(rows)
  const mask = (1 << (32 - shift)) - 1
  const slots = new Int32Array(mask + 1)
  const tails: number[] = []
  // each id's value: bytes[start, end) of its source
  const sources: Uint8Array[] = []
  const starts: number[] = []
  const ends: number[] = []
  const idAt = (bytes: Uint8Array, start: number, end: number, width?: number): number => {
    if (width !== undefined && end - start !== width) return -2
    const tail = tailAt(bytes, start, end)
    let at = Math.imul(tail, 0x9e3779b1) >>> shift
    for (let d = slots[at] - 1; d >= 0; d = slots[at] - 1) {
      if (tails[d] === tail && sameRanges(sources[d], starts[d], ends[d], bytes, start, end)) return d
      at = (at + 1) & mask
    }
    slots[at] = sources.length + 1
    tails.push(tail)
    starts.push(start)
    ends.push(end)
    return sources.push(bytes) - 1
  }
  return {
    id: (v: StoredValue, width: number | undefined): number => (v instanceof Uint8Array ? idAt(v, 0, v.length, width) : -2),
    idAt,
    count: () => sources.length,
  }
}

/** The shift that takes a hash's top bits to a slot of a table of at least twice `entries` slots (8 at least): `Math.imul(hash, 0x9e3779b1) >>> shift`. */
function tableShift(entries: number): number {
  let shift = 29
  while (1 << (32 - shift) < 2 * entries) shift--
  return shift
}

/** A value's last four bytes and its length, in one int: compared before the bytes, and hashed for a table slot. */
const tailOf = (v: Uint8Array): number => tailAt(v, 0, v.length)

/** `tailOf` of `bytes[start, end)`. */
const tailAt = (b: Uint8Array, start: number, end: number): number => {
  const n = end - start
  return n >= 4 ? (b[end - 1] | (b[end - 2] << 8) | (b[end - 3] << 16) | (b[end - 4] << 24)) ^ n : -n - 1
}

/**
 * A writer of the slices of `column` (a build writes hundreds of thousands): the fields' wire
 * codes and widths resolved once. `write` appends the slice of `rows` (all holding one value
 * of `column`) to `out`; `check` is the looked-up value's check when the column is left out
 * (a build passes `undefined` to have it worked out from the rows, a merge its inputs'), or
 * `null` to store the column.
 */
export function sliceWriter(
  fields: readonly RowField[],
  column: string,
): (rows: SliceRows, out: ByteWriter, check?: number | null) => void {
  const lookup = fields.findIndex(f => f.column === column)
  const wires = fields.map(f => WIRE_CODE[wireOf(f.kind)])
  const widths = fields.map(f => KINDS[f.kind].width ?? 0)
  const distinct = new Map<string, number>()
  const fail = (f: number, v: StoredValue): never => {
    throw bad(fields[f].column, fields[f].kind, v)
  }
  const u64s = (w: ByteWriter, rows: SliceRows, f: number) => {
    const { columns, numbers, part, row, lo, hi } = rows
    // the previous value: a number when below 2^52, else (prevBig) the bigint
    let prevNumber = 0
    let prevBig: bigint | null = null
    for (let j = lo; j < hi; j++) {
      const known = numbers?.[part[j]][f]
      let n = known ? known[row[j]] : NaN
      let v: StoredValue | null = null
      if (n !== n) {
        v = cell(columns[part[j]][f], row[j])
        if (v === null) {
          w.byte(0)
          continue
        }
        if (typeof v !== 'bigint') return fail(f, v)
        n = Number(v)
      } else if (n === -1) {
        w.byte(0)
        continue
      }
      if (n >= 0 && n < 2 ** 52 && prevBig === null) {
        const d = n - prevNumber
        w.uint((d >= 0 ? d * 2 : -d * 2 - 1) + 1)
        prevNumber = n
        continue
      }
      const big = v ?? (cell(columns[part[j]][f], row[j]) as bigint)
      if (typeof big !== 'bigint' || big < 0n || big >= U64_END) return fail(f, big)
      const d = big - (prevBig ?? BigInt(prevNumber))
      writeBig(w, (d >= 0n ? d * 2n : -d * 2n - 1n) + 1n)
      prevNumber = n
      prevBig = n >= 0 && n < 2 ** 52 ? null : big
    }
  }
  const bools = (w: ByteWriter, rows: SliceRows, f: number) => {
    const { columns, part, row, lo, hi } = rows
    for (let j = lo; j < hi; j++) {
      const v = cell(columns[part[j]][f], row[j])
      if (v === null) w.byte(2)
      else if (typeof v === 'boolean') w.byte(v ? 1 : 0)
      else fail(f, v)
    }
  }
  const texts = (w: ByteWriter, rows: SliceRows, f: number) => {
    const { columns, part, row, lo, hi } = rows
    distinct.clear()
    for (let j = lo; j < hi; j++) {
      const v = cell(columns[part[j]][f], row[j])
      if (v === null) {
        w.byte(0)
        continue
      }
      if (typeof v !== 'string') return fail(f, v)
      const seen = distinct.get(v)
      if (seen !== undefined) {
        w.uint(seen + 2)
        continue
      }
      distinct.set(v, distinct.size)
      newText(w, v)
    }
  }
  const newText = (w: ByteWriter, v: string) => {
    w.byte(1)
    const b = utf8.encode(v)
    w.uint(b.length)
    w.bytes(b)
  }
  // a binary column's values new in this slice, `seen` of them, each with a hash of its
  // last four bytes and length (compared first), found through an open-addressing table of
  // their positions + 1: a slice of 1,024 distinct values costs 1,024 probes, not 500,000
  let values: Uint8Array[] = []
  let tails = new Int32Array(64)
  let slots = new Int32Array(128)
  const binary = (w: ByteWriter, rows: SliceRows, f: number, wire: number) => {
    const fixed = wire !== WIRE_CODE.bytes
    const { columns, part, row, lo, hi } = rows
    const width = widths[f]
    if (hi - lo > tails.length) {
      tails = new Int32Array(hi - lo)
      values = []
    }
    const shift = tableShift(hi - lo)
    const size = 1 << (32 - shift)
    if (size > slots.length) slots = new Int32Array(size)
    else slots.fill(0, 0, size)
    const mask = size - 1
    let seen = 0
    for (let j = lo; j < hi; j++) {
      const v = cell(columns[part[j]][f], row[j])
      if (v === null) {
        w.byte(0)
        continue
      }
      if (!(v instanceof Uint8Array) || (fixed && v.length !== width)) return fail(f, v)
      const tail = tailOf(v)
      let at = Math.imul(tail, 0x9e3779b1) >>> shift
      let d = slots[at] - 1
      while (d >= 0 && (tails[d] !== tail || !sameBytes(values[d], v))) {
        at = (at + 1) & mask
        d = slots[at] - 1
      }
      if (d >= 0) {
        w.uint(d + 2)
        continue
      }
      slots[at] = seen + 1
      tails[seen] = tail
      values[seen++] = v
      newBytes(w, v, wire, width)
    }
  }
  const newBytes = (w: ByteWriter, v: Uint8Array, wire: number, width: number) => newBytesAt(w, v, 0, v.length, wire, width)
  /** A new value's bytes, `b[start, end)`. */
  const newBytesAt = (w: ByteWriter, b: Uint8Array, start: number, end: number, wire: number, width: number) => {
    w.byte(1)
    if (wire === WIRE_CODE.signed) w.signedTrimmed(b, start, start + width)
    else if (wire !== WIRE_CODE.bytes) w.trimmed(b, start, start + width)
    else {
      const n = end - start
      w.uint(n)
      if (n % 32) w.bytesOf(b, start, end)
      else for (let at = start; at < end; at += 32) w.trimmed(b, at, at + 32)
    }
  }
  /** A new text value from its UTF-8 bytes, `b[start, end)`: what `newText` writes of the string. */
  const newTextAt = (w: ByteWriter, b: Uint8Array, start: number, end: number) => {
    w.byte(1)
    w.uint(end - start)
    w.bytesOf(b, start, end)
  }
  // with the build's ids (`sliceIds`): per field and id, side by side (one cache line), the slice
  // (`serial`) the id was last new in and its place among that slice's new values
  let serial = 0
  const stamps: Int32Array[] = []
  const byIds = (w: ByteWriter, rows: SliceRows, ids: SliceIds, f: number, wire: number) => {
    const { columns, part, row, lo, hi } = rows
    let stamp = stamps[f]
    if (!stamp || stamp.length < 2 * ids.counts[f]) stamp = stamps[f] = new Int32Array(2 * ids.counts[f])
    serial++
    let seen = 0
    for (let j = lo; j < hi; j++) {
      const id = ids.of[part[j]][row[j] * ids.stride + f]
      if (id === -1) {
        w.byte(0)
        continue
      }
      const column = columns[part[j]][f]!
      const r = row[j]
      if (id < 0) return fail(f, cell(column, r)!)
      if (stamp[2 * id] === serial) {
        w.uint(stamp[2 * id + 1] + 2)
        continue
      }
      stamp[2 * id] = serial
      stamp[2 * id + 1] = seen++
      if (isVectorColumn(column)) {
        // written from where the value lies (a packed column's ids are only ever of its kind)
        if (column.type === 'fixed') newBytesAt(w, column.bytes, r * column.width, (r + 1) * column.width, wire, widths[f])
        else if (column.type === 'binary') {
          const start = column.offsets[r]
          const end = column.offsets[r + 1]
          if (wire === WIRE_CODE.text) newTextAt(w, column.bytes, start, end)
          else newBytesAt(w, column.bytes, start, end, wire, widths[f])
        } else return fail(f, valueAt(column, r)!)
        continue
      }
      const v = column[r]!
      if (wire === WIRE_CODE.text) newText(w, v as string)
      else newBytes(w, v as Uint8Array, wire, widths[f])
    }
  }
  return (rows, w, check) => {
    if (check === undefined) check = lookup < 0 ? null : commonCheck(rows, lookup)
    w.byte(check === null ? COLUMN_KEPT : 0)
    if (check !== null) w.u32(check)
    for (let f = 0; f < fields.length; f++) {
      if (f === lookup && check !== null) continue
      switch (wires[f]) {
        case 0:
          u64s(w, rows, f)
          break
        case 1:
          bools(w, rows, f)
          break
        case 2:
          if (rows.ids) byIds(w, rows, rows.ids, f, wires[f])
          else texts(w, rows, f)
          break
        default:
          if (rows.ids) byIds(w, rows, rows.ids, f, wires[f])
          else binary(w, rows, f, wires[f])
      }
    }
  }
}

/** Reads what `ByteWriter.trimmed` wrote for `width` bytes into `out` at `at`. */
function untrim(r: ByteReader, out: Uint8Array, at: number, width: number): void {
  const n = r.byte()
  if (n > width) throw new IndexFormatError(`${n} bytes of a ${width}-byte value`)
  out.set(r.bytes(n), at + width - n)
}

/** Reads what `ByteWriter.signedTrimmed` wrote for `width` bytes into `out`. */
function unsign(r: ByteReader, out: Uint8Array, width: number): void {
  const t = r.byte()
  const n = t >> 1
  if (n > width) throw new IndexFormatError(`${n} bytes of a ${width}-byte integer`)
  out.fill(t & 1 ? 0xff : 0, 0, width - n)
  out.set(r.bytes(n), width - n)
  out[0] ^= 0x80
}

/** The check of the looked-up value when every row holds the same one, else null (a key collision: the column is stored). */
function commonCheck(rows: SliceRows, lookup: number): number | null {
  const { columns, ids, part, row, lo, hi } = rows
  const first = cell(columns[part[lo]][lookup], row[lo])
  if (!(first instanceof Uint8Array) && typeof first !== 'string') return null
  const id = ids ? ids.of[part[lo]][row[lo] * ids.stride + lookup] : -1
  if (id >= 0) {
    for (let j = lo + 1; j < hi; j++) if (ids!.of[part[j]][row[j] * ids!.stride + lookup] !== id) return null
    return valueCheck(first)
  }
  for (let j = lo + 1; j < hi; j++) {
    const v = cell(columns[part[j]][lookup], row[j])
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
  if (flags > COLUMN_KEPT) throw new IndexFormatError(`slice flags ${flags}`)
  const r = new ByteReader(bytes.subarray(1))
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
      } else if (wire === 'bytes') {
        const length = r.uint()
        if (length % 32) v = r.bytes(length).slice()
        else {
          if (length > r.buf.length * 32) throw new IndexFormatError(`${length} bytes in a slice of ${r.buf.length}`)
          v = new Uint8Array(length)
          for (let at = 0; at < length; at += 32) untrim(r, v, at, 32)
        }
      } else {
        v = new Uint8Array(width)
        if (wire === 'signed') unsign(r, v, width)
        else untrim(r, v, 0, width)
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

/**
 * One record's text, for the JSON and CSV encoders: each field is a prefix (a key, a
 * separator) and its value, and the record an ending. Text responses are mostly this
 * loop, so a record reserves room for everything it writes at once and its values are
 * written at positions (text.ts's placed writers) without a bounds check each; prefixes
 * and endings go in as 8-byte words. A value that needs escaping (string, json) is written
 * through the sink by its format, and the rest of the record reserves again after it.
 * The encoders write a batch through `rowsWriter`: the same bytes, a block of records a
 * column at a time where every value is placed (with hex-kernel.ts where they are given it).
 */
import type { BinaryVector, FixedVector, Vector } from '../columns/vector.ts'
import { KERNEL_ROWS, KERNEL_TEXT, OUT, type HexKernel } from './hex-kernel.ts'
import { requiredNull, type ByteSink } from './sink.ts'
import type { PlacedValue } from './text.ts'

/** Writes row i of a string or json vector through the sink (escaping is the format's). */
export type SinkWriter = (sink: ByteSink, v: Vector, i: number) => void

export interface FieldText {
  name: string
  /** Bytes before the value: a key, a separator. */
  prefix: string
  value: PlacedValue | SinkWriter
  /** A null's text; undefined where the field is never null (a null then fails the batch). */
  nullText?: string
}

/** Writes row `row` of a batch's columns, taken in field order. */
export type RecordWriter = (sink: ByteSink, columns: readonly Vector[], row: number) => void

/**
 * ASCII text as 8-byte words, to be stored a word at a time: half the stores of 32-bit
 * words. A word goes in as the double with its bits (little-endian); printable ASCII never
 * makes one a NaN (that needs an exponent of all ones: a top byte of 0x7f or above), so
 * every bit is kept.
 */
interface Words {
  words: Float64Array
  length: number
}

function wordsOf(text: string): Words {
  const bytes = new Uint8Array(Math.ceil(text.length / 8) * 8)
  for (let k = 0; k < text.length; k++) bytes[k] = text.charCodeAt(k)
  return { words: new Float64Array(bytes.buffer), length: text.length }
}

/** Stores `w` at p and returns its end; the last word may write up to seven bytes past it, within the room counted for it. */
function put(view: DataView, p: number, w: Words): number {
  const words = w.words
  for (let k = 0; k < words.length; k++) view.setFloat64(p + 8 * k, words[k], true)
  return p + w.length
}

/** What both writers need of a field list: its texts as words and each record's room. */
interface Layout {
  prefixes: Words[]
  nulls: (Words | null)[]
  /** Each field's placed writer, null for a value written through the sink. */
  placed: (PlacedValue | null)[]
  through: (SinkWriter | null)[]
  ending: Words
  /** Room from field j to the record's end, but for binary values' bytes and sink-written values. */
  rest: Int32Array
  /** The fields of binary values, whose bytes add two digits each to a record's room. */
  binaries: number[]
}

function layoutOf(fields: readonly FieldText[], end: string): Layout {
  for (const f of [...fields.map(f => f.prefix + (f.nullText ?? '')), end])
    if (!/^[\x20-\x7e\n]*$/.test(f)) throw new Error(`record text must be printable ASCII: ${JSON.stringify(f)}`)
  const n = fields.length
  const prefixes = fields.map(f => wordsOf(f.prefix))
  const nulls = fields.map(f => (f.nullText === undefined ? null : wordsOf(f.nullText)))
  const placed = fields.map(f => ('write' in f.value ? f.value : null))
  const through = fields.map(f => ('write' in f.value ? null : f.value))
  const ending = wordsOf(end)
  const rest = new Int32Array(n + 1)
  rest[n] = 8 * ending.words.length
  for (let j = n - 1; j >= 0; j--) {
    const value = placed[j]?.room ?? 0
    rest[j] = rest[j + 1] + 8 * prefixes[j].words.length + Math.max(value, 8 * (nulls[j]?.words.length ?? 0))
  }
  const binaries = placed.flatMap((p, j) => (p?.binary ? [j] : []))
  return { prefixes, nulls, placed, through, ending, rest, binaries }
}

/** Two digits a byte of row i's binary values: what its record needs beyond `rest`. */
function binaryRoom(binaries: readonly number[], cols: readonly Vector[], i: number): number {
  let extra = 0
  for (const j of binaries) {
    const offsets = (cols[j] as BinaryVector).offsets
    extra += 2 * (offsets[i + 1] - offsets[i])
  }
  return extra
}

/** The record writer of fields laid out as `fields` say, each record ended by `end`. */
export function recordWriter(fields: readonly FieldText[], end: string): RecordWriter {
  return recordWriterOf(fields, layoutOf(fields, end))
}

function recordWriterOf(fields: readonly FieldText[], layout: Layout): RecordWriter {
  const { prefixes, nulls, placed, through, ending, rest, binaries } = layout
  const n = fields.length
  return (sink, cols, i) => {
    const extra = binaryRoom(binaries, cols, i)
    sink.reserve(rest[0] + extra)
    let out = sink.buf
    let view = sink.view
    let p = sink.pos
    for (let j = 0; j < n; j++) {
      p = put(view, p, prefixes[j])
      const v = cols[j]
      if (v.valid !== null && v.valid[i] === 0) {
        const text = nulls[j]
        if (text === null) throw requiredNull(fields[j].name)
        p = put(view, p, text)
        continue
      }
      const value = placed[j]
      if (value !== null) {
        p = value.write(out, view, p, v, i)
        continue
      }
      sink.pos = p
      through[j]!(sink, v, i)
      sink.reserve(rest[j + 1] + extra)
      out = sink.buf
      view = sink.view
      p = sink.pos
    }
    sink.pos = put(view, p, ending)
  }
}

/** Writes rows [from, to) of a batch's columns, taken in field order. */
export type RowsWriter = (sink: ByteSink, columns: readonly Vector[], from: number, to: number) => void

/** Rows written together at most: a block's slots (~700 bytes a log) stay in the core's cache. */
const BLOCK = KERNEL_ROWS

/**
 * The rows writer of fields laid out as `fields` say. Records of placed values only are
 * written a block of rows at a time and a column at a time, each record in a slot of its
 * room, then moved together: a column's values are then one loop over one vector with
 * one writer, where a record at a time turns through every column and writer per row
 * (about 0.8x the time of `recordWriter`'s loop for logs' JSON lines). With a `kernel`,
 * the block is written in its memory, the prefixes, endings and hex values by the kernel
 * (hex-kernel.ts), and copied into the sink once. Records with a value written through
 * the sink (string, json) go a record at a time.
 */
export function rowsWriter(fields: readonly FieldText[], end: string, kernel?: HexKernel): RowsWriter {
  const layout = layoutOf(fields, end)
  if (layout.through.some(t => t !== null)) {
    const one = recordWriterOf(fields, layout)
    return (sink, cols, from, to) => {
      for (let i = from; i < to; i++) one(sink, cols, i)
    }
  }
  const { prefixes, nulls, ending, rest, binaries } = layout
  const placed = layout.placed as PlacedValue[]
  const texts = [...prefixes, ending].map(w => new Uint8Array(w.words.buffer, 0, w.length))
  // A text longer than the kernel takes leaves the whole writer to the table writers.
  if (texts.some(t => t.length > KERNEL_TEXT)) kernel = undefined
  const prefixText = texts.slice(0, -1)
  const endingText = texts[texts.length - 1]
  const hexes = placed.map(p => p.hex)
  const n = fields.length
  const start = new Int32Array(BLOCK)
  const pos = new Int32Array(BLOCK)
  const roomOf = (cols: readonly Vector[], i: number): number => rest[0] + binaryRoom(binaries, cols, i)

  /** Rows [b, b + rows) in their slots from the sink's position, then moved together there. */
  function here(sink: ByteSink, cols: readonly Vector[], b: number, rows: number): void {
    const out = sink.buf
    const view = sink.view
    const base = sink.pos
    for (let r = 0; r < rows; r++) pos[r] = base + start[r]
    for (let j = 0; j < n; j++) {
      const v = cols[j]
      const prefix = prefixes[j]
      const write = placed[j].write
      const valid = v.valid
      if (valid === null) {
        for (let r = 0; r < rows; r++) pos[r] = write(out, view, put(view, pos[r], prefix), v, b + r)
        continue
      }
      const text = nulls[j]
      for (let r = 0; r < rows; r++) {
        const p = put(view, pos[r], prefix)
        if (valid[b + r] === 1) pos[r] = write(out, view, p, v, b + r)
        else if (text === null) throw requiredNull(fields[j].name)
        else pos[r] = put(view, p, text)
      }
    }
    let w = base
    for (let r = 0; r < rows; r++) {
      const s = base + start[r]
      const e = put(view, pos[r], ending)
      if (s !== w) out.copyWithin(w, s, e)
      w += e - s
    }
    sink.pos = w
  }

  /** The same in the kernel's memory: prefixes, endings and hex values by the kernel, other values and nulls between its calls; then copied to the sink. */
  function inKernel(k: HexKernel, sink: ByteSink, cols: readonly Vector[], b: number, rows: number, total: number): void {
    k.reserve(OUT + total + 8)
    for (let r = 0; r < rows; r++) k.pos[r] = OUT + start[r]
    k.starts.set(k.pos.subarray(0, rows))
    for (let j = 0; j < n; j++) {
      const v = cols[j]
      k.text(rows, prefixText[j])
      const hex = hexes[j]
      if (hex?.layout === 'fixed') k.fixed(v as FixedVector, b, rows, OUT + total, hex.quoted)
      else if (hex?.layout === 'binary') k.binary(v as BinaryVector, b, rows, OUT + total, hex.quoted)
      // The kernel's views are new if its memory grew.
      const { bytes: out, view, pos } = k
      const valid = v.valid
      const text = nulls[j]
      const write = hex === undefined ? placed[j].write : null
      if (valid === null) {
        if (write !== null) for (let r = 0; r < rows; r++) pos[r] = write(out, view, pos[r], v, b + r)
        continue
      }
      for (let r = 0; r < rows; r++) {
        if (valid[b + r] === 1) {
          if (write !== null) pos[r] = write(out, view, pos[r], v, b + r)
        } else if (text === null) throw requiredNull(fields[j].name)
        else pos[r] = put(view, pos[r], text)
      }
    }
    k.text(rows, endingText)
    const e = k.compact(rows)
    sink.buf.set(k.bytes.subarray(OUT, e), sink.pos)
    sink.pos += e - OUT
  }

  return (sink, cols, from, to) => {
    for (let b = from; b < to;) {
      const first = roomOf(cols, b)
      if (sink.pos + first > sink.buf.length) sink.reserve(first)
      // As many rows as the buffer holds (at least the first), so a block never makes a chunk of its own.
      const avail = sink.buf.length - sink.pos
      let rows = 0
      let total = 0
      while (rows < BLOCK && b + rows < to) {
        const r = rows === 0 ? first : roomOf(cols, b + rows)
        if (rows > 0 && total + r > avail) break
        start[rows++] = total
        total += r
      }
      if (kernel === undefined) here(sink, cols, b, rows)
      else inKernel(kernel, sink, cols, b, rows, total)
      b += rows
    }
  }
}

/**
 * One record's text, for the JSON and CSV encoders: each field is a prefix (a key, a
 * separator) and its value, and the record an ending. Text responses are mostly this
 * loop, so a record reserves room for everything it writes at once and its values are
 * written at positions (text.ts's placed writers) without a bounds check each; prefixes
 * and endings go in as 8-byte words. A value that needs escaping (string, json) is written
 * through the sink by its format, and the rest of the record reserves again after it.
 */
import type { BinaryVector, Vector } from '../columns/vector.ts'
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

/** The record writer of fields laid out as `fields` say, each record ended by `end`. */
export function recordWriter(fields: readonly FieldText[], end: string): RecordWriter {
  for (const f of [...fields.map(f => f.prefix + (f.nullText ?? '')), end])
    if (!/^[\x20-\x7e\n]*$/.test(f)) throw new Error(`record text must be printable ASCII: ${JSON.stringify(f)}`)
  const n = fields.length
  const prefixes = fields.map(f => wordsOf(f.prefix))
  const nulls = fields.map(f => (f.nullText === undefined ? null : wordsOf(f.nullText)))
  const placed = fields.map(f => ('write' in f.value ? f.value : null))
  const through = fields.map(f => ('write' in f.value ? null : f.value))
  const ending = wordsOf(end)
  /** Room from field j to the record's end, but for binary values' bytes and sink-written values. */
  const rest = new Int32Array(n + 1)
  rest[n] = 8 * ending.words.length
  for (let j = n - 1; j >= 0; j--) {
    const value = placed[j]?.room ?? 0
    rest[j] = rest[j + 1] + 8 * prefixes[j].words.length + Math.max(value, 8 * (nulls[j]?.words.length ?? 0))
  }
  const binaries = placed.flatMap((p, j) => (p?.binary ? [j] : []))
  return (sink, cols, i) => {
    let extra = 0
    for (const j of binaries) {
      const offsets = (cols[j] as BinaryVector).offsets
      extra += 2 * (offsets[i + 1] - offsets[i])
    }
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

/**
 * JSON output: one array of record objects, keys in field order. Values are those
 * of `KINDS[kind].toJson`, written as bytes without building objects; a `json`
 * field is embedded as a JSON value. u64 numbers are written with all their
 * digits, which parse to the same doubles `toJson` gives.
 */
import type { BinaryVector } from '../columns/vector.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import type { Kind } from '../schema/kinds.ts'
import type { HexKernel } from './hex-kernel.ts'
import { recordWriter, rowsWriter, type FieldText, type RecordWriter, type RowsWriter, type SinkWriter } from './record.ts'
import { type BatchEncoder, ByteSink, CHUNK_SIZE, fieldColumns, type TextOptions } from './sink.ts'
import { copyPlain, JSON_VALUES, plainAscii, textAt, type PlacedValue } from './text.ts'

const QUOTE = 34
const OPEN = 91
const CLOSE = 93

const LINE_BREAK = /[\r\n]/

/** ASCII that JSON.stringify escapes: controls, `"` and `\`. */
const JSON_PLAIN = plainAscii(String.fromCharCode(...Array.from({ length: 32 }, (_, c) => c)) + '"\\')

/** A string as JSON.stringify writes it; text with nothing to escape is copied without decoding. */
function writeJsonString(sink: ByteSink, v: BinaryVector, i: number): void {
  const n = v.offsets[i + 1] - v.offsets[i]
  sink.reserve(n + 2)
  const at = sink.pos
  if (copyPlain(sink, v, i, at + 1, JSON_PLAIN)) {
    sink.buf[at] = QUOTE
    sink.buf[at + n + 1] = QUOTE
    sink.pos = at + n + 2
  } else {
    sink.utf8(JSON.stringify(textAt(v, i)))
  }
}

/**
 * Stored JSON text as it goes into a record: checked to parse, kept verbatim (so
 * numbers beyond double precision stay exact) unless it spans lines, which would
 * split a json_stream record; then it is re-serialised.
 */
function embeddedJson(text: string): string {
  const value: unknown = JSON.parse(text)
  return LINE_BREAK.test(text) ? JSON.stringify(value) : text
}

/** Every kind's JSON token writer: a new kind does not compile until it has one. */
const JSON_WRITERS: Record<Kind, PlacedValue | SinkWriter> = {
  ...JSON_VALUES,
  string: writeJsonString as SinkWriter,
  json: (sink, v, i) => sink.utf8(embeddedJson(textAt(v as BinaryVector, i))),
}

/**
 * The record writer of a field list, a record ended by `end`; shared by the array and
 * the line formats. Records are JSON objects, keys in field order, from a batch's
 * columns each laid out as its field's kind wants (see `fieldColumns`).
 */
export function jsonRecordWriter(fields: readonly FieldDecl[], end: string): RecordWriter {
  return recordWriter(jsonFields(fields, ''), end)
}

/** The rows writer of a field list (see `rowsWriter`), each record after `lead` and ended by `end`. */
export function jsonRowsWriter(fields: readonly FieldDecl[], end: string, lead = '', hex?: HexKernel): RowsWriter {
  return rowsWriter(jsonFields(fields, lead), end, hex)
}

/** The JSON texts of a field list for the record writers, a record's first key after `lead`. */
export const jsonFields = (fields: readonly FieldDecl[], lead: string): FieldText[] =>
  fields.map((f, j) => ({
    name: f.name,
    prefix: (j === 0 ? lead + '{' : ',') + JSON.stringify(f.name) + ':',
    value: JSON_WRITERS[f.kind],
    ...(f.nullable ? { nullText: 'null' } : {}),
  }))

/** Encoder of the `json` format: `[`, records separated by commas, `]`. */
export function jsonEncoder(fields: readonly FieldDecl[], { chunks, continues, hex }: TextOptions = {}): BatchEncoder {
  const sink = new ByteSink(CHUNK_SIZE, chunks)
  const writeFirst = jsonRecordWriter(fields, '}')
  // Every record after the array's first follows a comma.
  const writeRest = jsonRowsWriter(fields, '}', ',', hex)
  let first = !continues
  return {
    open: () => {
      if (continues !== undefined) return []
      sink.byte(OPEN)
      return sink.take()
    },
    batch: batch => {
      const cols = fieldColumns(batch, fields)
      let from = 0
      if (first && batch.length > 0) {
        first = false
        writeFirst(sink, cols, 0)
        from = 1
      }
      writeRest(sink, cols, from, batch.length)
      return sink.flush()
    },
    close: () => {
      sink.byte(CLOSE)
      return sink.flush()
    },
  }
}

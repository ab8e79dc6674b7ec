/**
 * JSON output: one array of record objects, keys in field order. Values are those
 * of `KINDS[kind].toJson`, written as bytes without building objects; a `json`
 * field is embedded as a JSON value. u64 numbers are written with all their
 * digits, which parse to the same doubles `toJson` gives.
 */
import type { FieldDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { ByteSink, columnOfBatch, requiredNull, type BatchEncoder } from './sink.ts'
import { BARE_TEXT, type TextWriter } from './text.ts'

const QUOTE = 34
const COMMA = 44
const OPEN = 91
const CLOSE = 93
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125

const LINE_BREAK = /[\r\n]/

const utf8 = new TextEncoder()

function quoted(write: TextWriter): TextWriter {
  return (sink, v) => {
    sink.byte(QUOTE)
    write(sink, v)
    sink.byte(QUOTE)
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

/** The JSON token writer of a field's kind. */
function jsonValueWriter(field: FieldDecl): TextWriter {
  if (field.kind === 'string') return (sink, v) => sink.utf8(JSON.stringify(v as string))
  if (field.kind === 'json') return (sink, v) => sink.utf8(embeddedJson(v as string))
  const bare = BARE_TEXT[field.kind]
  if (!bare) throw new Error(`no JSON writer for kind ${field.kind}`)
  return bare.quotedInJson ? quoted(bare.write) : bare.write
}

/** Writes one record of a batch's columns (taken in field order) as a JSON object. */
export type JsonRecordWriter = (sink: ByteSink, columns: (StoredValue | null)[][], row: number) => void

/** The record writer of a field list; shared by the array and the line formats. */
export function jsonRecordWriter(fields: readonly FieldDecl[]): JsonRecordWriter {
  const keys = fields.map((f, j) => utf8.encode((j === 0 ? '' : ',') + JSON.stringify(f.name) + ':'))
  const writers = fields.map(jsonValueWriter)
  const nullable = fields.map(f => f.nullable === true)
  return (sink, cols, i) => {
    sink.byte(OPEN_OBJECT)
    for (let j = 0; j < cols.length; j++) {
      sink.bytes(keys[j])
      const v = cols[j][i]
      if (v !== null) writers[j](sink, v)
      else if (nullable[j]) sink.ascii('null')
      else throw requiredNull(fields[j].name)
    }
    sink.byte(CLOSE_OBJECT)
  }
}

/** Encoder of the `json` format: `[`, records separated by commas, `]`. */
export function jsonEncoder(fields: readonly FieldDecl[]): BatchEncoder {
  const sink = new ByteSink()
  const writeRecord = jsonRecordWriter(fields)
  let first = true
  return {
    open: () => {
      sink.byte(OPEN)
      return sink.take()
    },
    batch: batch => {
      const cols = fields.map(f => columnOfBatch(batch, f.name))
      for (let i = 0; i < batch.length; i++) {
        if (first) first = false
        else sink.byte(COMMA)
        writeRecord(sink, cols, i)
      }
      return sink.flush()
    },
    close: () => {
      sink.byte(CLOSE)
      return sink.flush()
    },
  }
}

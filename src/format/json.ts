/**
 * JSON output: one array of record objects, keys in field order. Values are those
 * of `KINDS[kind].toJson`, written as bytes without building objects; a `json`
 * field is embedded as a JSON value. u64 numbers are written with all their
 * digits, which parse to the same doubles `toJson` gives.
 */
import type { BinaryVector, Vector } from '../columns/vector.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import type { Kind } from '../schema/kinds.ts'
import { ByteSink, fieldColumns, requiredNull, type BatchEncoder } from './sink.ts'
import { BARE_WRITERS, copyPlain, plainAscii, textAt, type FieldWriter } from './text.ts'

const QUOTE = 34
const COMMA = 44
const OPEN = 91
const CLOSE = 93
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125

const LINE_BREAK = /[\r\n]/

/** ASCII that JSON.stringify escapes: controls, `"` and `\`. */
const JSON_PLAIN = plainAscii(String.fromCharCode(...Array.from({ length: 32 }, (_, c) => c)) + '"\\')

const utf8 = new TextEncoder()

function quoted(write: FieldWriter): FieldWriter {
  return (sink, v, i) => {
    sink.byte(QUOTE)
    write(sink, v, i)
    sink.byte(QUOTE)
  }
}

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
const JSON_WRITERS: Record<Kind, FieldWriter> = {
  u64hex: quoted(BARE_WRITERS.u64hex),
  u64int: BARE_WRITERS.u64int,
  u256hex: quoted(BARE_WRITERS.u256hex),
  u256pad: quoted(BARE_WRITERS.u256pad),
  int: quoted(BARE_WRITERS.int),
  hash: quoted(BARE_WRITERS.hash),
  address: quoted(BARE_WRITERS.address),
  address32: quoted(BARE_WRITERS.address32),
  bytes: quoted(BARE_WRITERS.bytes),
  bool: BARE_WRITERS.bool,
  string: writeJsonString as FieldWriter,
  json: (sink, v, i) => sink.utf8(embeddedJson(textAt(v as BinaryVector, i))),
}

/** The JSON token writer of a field's kind. */
const jsonValueWriter = (field: FieldDecl): FieldWriter => JSON_WRITERS[field.kind]

/**
 * Writes one record as a JSON object from a batch's columns taken in field order,
 * each laid out as its field's kind wants (see `fieldColumns`).
 */
export type JsonRecordWriter = (sink: ByteSink, columns: readonly Vector[], row: number) => void

/** The record writer of a field list; shared by the array and the line formats. */
export function jsonRecordWriter(fields: readonly FieldDecl[]): JsonRecordWriter {
  const keys = fields.map((f, j) => utf8.encode((j === 0 ? '' : ',') + JSON.stringify(f.name) + ':'))
  const writers = fields.map(jsonValueWriter)
  const nullable = fields.map(f => f.nullable === true)
  return (sink, cols, i) => {
    sink.byte(OPEN_OBJECT)
    for (let j = 0; j < cols.length; j++) {
      sink.bytes(keys[j])
      const v = cols[j]
      if (v.valid === null || v.valid[i] !== 0) writers[j](sink, v, i)
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
      const cols = fieldColumns(batch, fields)
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

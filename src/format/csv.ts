/**
 * CSV output (RFC 4180): a header row of field names, then one row per record.
 * Lines end with `\n` rather than RFC 4180's CRLF: every CSV reader accepts it
 * and it is what Unix tools expect. A null is an empty cell; an empty string is
 * written `""` so the two stay apart (as PostgreSQL's COPY does). Cells holding a
 * comma, a quote, CR or LF are quoted, quotes doubled. `json` fields are their
 * JSON text.
 */
import type { BinaryVector } from '../columns/vector.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import type { Kind } from '../schema/kinds.ts'
import { rowsWriter, type SinkWriter } from './record.ts'
import { type BatchEncoder, ByteSink, CHUNK_SIZE, fieldColumns, type TextOptions } from './sink.ts'
import { BARE_VALUES, copyPlain, plainAscii, textAt, type PlacedValue } from './text.ts'

const NEWLINE = 10
const NEEDS_QUOTES = /[",\r\n]/
const CSV_PLAIN = plainAscii('",\r\n')

/** A cell as RFC 4180 wants it: quoted when it holds a separator, a quote or a line break. */
export function csvCell(text: string): string {
  if (text === '') return '""'
  return NEEDS_QUOTES.test(text) ? '"' + text.replaceAll('"', '""') + '"' : text
}

/** A string or json cell as csvCell gives it; plain ASCII text is copied without decoding. */
function writeTextCell(sink: ByteSink, v: BinaryVector, i: number): void {
  const n = v.offsets[i + 1] - v.offsets[i]
  sink.reserve(n)
  if (n > 0 && copyPlain(sink, v, i, sink.pos, CSV_PLAIN)) sink.pos += n
  else sink.utf8(csvCell(textAt(v, i)))
}

/** Every kind's CSV cell writer: a new kind does not compile until it has one. */
const CSV_WRITERS: Record<Kind, PlacedValue | SinkWriter> = {
  ...BARE_VALUES,
  string: writeTextCell as SinkWriter,
  json: writeTextCell as SinkWriter,
}

/** Encoder of the `csv` format. */
export function csvEncoder(fields: readonly FieldDecl[], { chunks, continues, hex }: TextOptions = {}): BatchEncoder {
  const sink = new ByteSink(CHUNK_SIZE, chunks)
  const writeRows = rowsWriter(
    fields.map((f, j) => ({
      name: f.name,
      prefix: j === 0 ? '' : ',',
      value: CSV_WRITERS[f.kind],
      ...(f.nullable ? { nullText: '' } : {}),
    })),
    '\n',
    hex,
  )
  return {
    open: () => {
      if (continues !== undefined) return []
      sink.utf8(fields.map(f => csvCell(f.name)).join(','))
      sink.byte(NEWLINE)
      return sink.take()
    },
    batch: batch => {
      const cols = fieldColumns(batch, fields)
      writeRows(sink, cols, 0, batch.length)
      return sink.flush()
    },
    close: () => sink.flush(),
  }
}

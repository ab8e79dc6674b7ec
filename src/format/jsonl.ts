/**
 * JSON lines output (the `json_stream` format): one JSON record per line, each
 * ended by `\n`, so an empty result is an empty body.
 */
import type { FieldDecl } from '../schema/dataset.ts'
import { type BatchEncoder, ByteSink, CHUNK_SIZE, fieldColumns, type TextOptions } from './sink.ts'
import { jsonRowsWriter } from './json.ts'

/** Encoder of the `json_stream` format. */
export function jsonlEncoder(fields: readonly FieldDecl[], { chunks, hex }: TextOptions = {}): BatchEncoder {
  const sink = new ByteSink(CHUNK_SIZE, chunks)
  const writeRows = jsonRowsWriter(fields, '}\n', '', hex)
  return {
    open: () => [],
    batch: batch => {
      const cols = fieldColumns(batch, fields)
      writeRows(sink, cols, 0, batch.length)
      return sink.flush()
    },
    close: () => sink.flush(),
  }
}

/**
 * JSON lines output (the `json_stream` format): one JSON record per line, each
 * ended by `\n`, so an empty result is an empty body.
 */
import type { FieldDecl } from '../schema/dataset.ts'
import { type BatchEncoder, ByteSink, CHUNK_SIZE, type ChunkSource, fieldColumns } from './sink.ts'
import { jsonRecordWriter } from './json.ts'

/** Encoder of the `json_stream` format. */
export function jsonlEncoder(fields: readonly FieldDecl[], chunks?: ChunkSource): BatchEncoder {
  const sink = new ByteSink(CHUNK_SIZE, chunks)
  const writeRecord = jsonRecordWriter(fields, '}\n')
  return {
    open: () => [],
    batch: batch => {
      const cols = fieldColumns(batch, fields)
      for (let i = 0; i < batch.length; i++) writeRecord(sink, cols, i)
      return sink.flush()
    },
    close: () => sink.flush(),
  }
}

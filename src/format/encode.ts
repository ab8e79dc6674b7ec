/**
 * The one entry from query results to response bytes: picks the format's
 * encoder and turns the engine's batches into a byte stream that reads a batch
 * only when the consumer wants more, and fails instead of ending when the batches
 * fail, so a broken response can never look complete.
 */
import type { FieldDecl } from '../schema/dataset.ts'
import { arrowEncoder } from './arrow.ts'
import { csvEncoder } from './csv.ts'
import { jsonEncoder } from './json.ts'
import { jsonlEncoder } from './jsonl.ts'
import type { BatchEncoder } from './sink.ts'
import type { RowBatch } from '../columns/batch.ts'

/** The spec's `format` values. */
export type Format = 'json' | 'json_stream' | 'csv' | 'arrow'

/** Every format, for validating a `format` parameter. */
export const FORMATS: readonly Format[] = ['json', 'json_stream', 'csv', 'arrow']

const CONTENT_TYPES: Record<Format, string> = {
  json: 'application/json',
  json_stream: 'application/jsonstream',
  csv: 'text/csv',
  arrow: 'application/vnd.apache.arrow.stream',
}

/** Content-Type of a format: the spec's Accept value for it. */
export function contentTypeOf(format: Format): string {
  return CONTENT_TYPES[format]
}

const ENCODERS: Record<Format, (fields: readonly FieldDecl[]) => BatchEncoder> = {
  json: jsonEncoder,
  json_stream: jsonlEncoder,
  csv: csvEncoder,
  arrow: arrowEncoder,
}

/**
 * Encodes batches in a format as a pull-driven stream (high-water mark 0: nothing
 * is read before the first read). Chunks are about 64 KiB, and one batch is
 * encoded at a time. An error from the batches or the encoder errors the stream
 * and the closing bytes (`]`, the Arrow end marker) are never written; cancelling
 * the stream returns the batch iterator so its source is released.
 */
export function encodeRows(format: Format, fields: readonly FieldDecl[], batches: AsyncIterable<RowBatch>): ReadableStream<Uint8Array> {
  const encoder = ENCODERS[format](fields)
  let iterator: AsyncIterator<RowBatch> | undefined
  let pending: Uint8Array[] = []
  let next = 0
  let closed = false

  /** The next chunk, encoding batches until one yields bytes; undefined at the end. */
  async function nextChunk(): Promise<Uint8Array | undefined> {
    while (next >= pending.length) {
      if (closed) return undefined
      next = 0
      if (iterator === undefined) {
        iterator = batches[Symbol.asyncIterator]()
        pending = encoder.open()
        continue
      }
      const r = await iterator.next()
      if (r.done) {
        closed = true
        pending = encoder.close()
      } else {
        pending = encoder.batch(r.value)
      }
    }
    const chunk = pending[next]
    pending[next++] = EMPTY
    return chunk
  }

  /** Ends the batch iterator early (cancel or encoder error); its own failure no longer matters. */
  async function release(): Promise<void> {
    closed = true
    try {
      await iterator?.return?.()
    } catch {
      // the stream has already ended or failed with the error that counts
    }
  }

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await nextChunk()
          if (chunk === undefined) controller.close()
          else controller.enqueue(chunk)
        } catch (err) {
          controller.error(err)
          await release()
        }
      },
      cancel: release,
    },
    { highWaterMark: 0 },
  )
}

const EMPTY = new Uint8Array(0)

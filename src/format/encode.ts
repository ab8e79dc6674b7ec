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
import type { BatchEncoder, TextOptions } from './sink.ts'
import type { HexKernel } from './hex-kernel.ts'
import type { RowBatch } from '../columns/batch.ts'
import type { Vector } from '../columns/vector.ts'

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

const ENCODERS: Record<Format, (fields: readonly FieldDecl[], options?: TextOptions) => BatchEncoder> = {
  json: jsonEncoder,
  json_stream: jsonlEncoder,
  csv: csvEncoder,
  arrow: arrowEncoder,
}

/**
 * A response's encoder as `encodeRows` drives it: a format's `BatchEncoder`, or one
 * whose batches are encoded elsewhere (the Node server's encoding thread,
 * src/node/encode-threads.ts) and answer later, in order. Same bytes either way.
 */
export interface StreamEncoder {
  open(): Uint8Array[] | Promise<Uint8Array[]>
  batch(batch: RowBatch): Uint8Array[] | Promise<Uint8Array[]>
  close(): Uint8Array[] | Promise<Uint8Array[]>
  /** Batches read while an earlier one is still being encoded (default 0: one at a time); asked before each read. */
  readonly ahead?: number
  /** The stream ended early (cancelled or failed): drop any state kept elsewhere. */
  release?(): void
}

/** Makes the encoder of one response. */
export type EncoderFactory = (format: Format, fields: readonly FieldDecl[]) => StreamEncoder

/** The format's own encoder, in this thread (text formats as `options` say). */
export const formatEncoder = (format: Format, fields: readonly FieldDecl[], options?: TextOptions): BatchEncoder =>
  ENCODERS[format](fields, options)

/** formatEncoder as an EncoderFactory writing hex through `hex` (the Worker's, the Node server's without a thread). */
export const hexEncoders =
  (hex: HexKernel): EncoderFactory =>
  (format, fields) =>
    formatEncoder(format, fields, { hex })

/** Arrow's body is the batches' own buffers (arrow.ts): its columns stay readable until the body is written, so they are not copied to another thread, and come back only once written. */
export const handsOutColumns = (format: Format): boolean => format === 'arrow'

/** Where the columns of encoded batches go back (the Node server's ColumnBuffers). */
export interface ColumnReturn {
  /** Nothing reads `column` any more. */
  recycle(column: Vector): void
  /** `columns` are read by those of `chunks` that view their memory until each is written out (the list is read during the call: the stream empties it later). */
  handOut(columns: Iterable<Vector>, chunks: readonly Uint8Array[]): void
}

/**
 * `encoders` handing each batch's columns (each once) back to `columns` as soon as its
 * encoder has taken the batch: a text batch's are recycled then (the format encoders have
 * written it out, and the Node server's encoding thread has its own copy, so nothing reads
 * the columns again and the scan's memory may lend them out anew, src/query/column-buffers.ts);
 * an Arrow batch's are handed out with its chunks, its body being their memory.
 */
export function recyclingEncoders(encoders: EncoderFactory, columns: ColumnReturn): EncoderFactory {
  return (format, fields) => {
    const encoder = encoders(format, fields)
    const out = handsOutColumns(format)
    const taken = (b: RowBatch) => new Set(fields.flatMap(f => b.columns[f.name] ?? []))
    return {
      get ahead() {
        return encoder.ahead
      },
      open: () => encoder.open(),
      batch(b: RowBatch) {
        const chunks = encoder.batch(b)
        if (!out) {
          for (const column of taken(b)) columns.recycle(column)
          return chunks
        }
        if (!Array.isArray(chunks))
          return chunks.then(c => {
            columns.handOut(taken(b), c)
            return c
          })
        columns.handOut(taken(b), chunks)
        return chunks
      },
      close: () => encoder.close(),
      release: () => encoder.release?.(),
    }
  }
}

/** One batch's bytes, and whether they were the closing ones. */
interface Encoded {
  chunks: Uint8Array[]
  last: boolean
}

/**
 * Encodes batches in a format as a pull-driven stream (high-water mark 0: nothing
 * is read before the first read). Chunks are about 64 KiB. One batch is encoded at
 * a time, or, with an encoder that encodes elsewhere, up to `ahead` more are read
 * meanwhile. An error from the batches or the encoder errors the stream and the
 * closing bytes (`]`, the Arrow end marker) are never handed out; cancelling the
 * stream returns the batch iterator so its source is released.
 */
export function encodeRows(
  format: Format,
  fields: readonly FieldDecl[],
  batches: AsyncIterable<RowBatch>,
  encoders: EncoderFactory = formatEncoder,
): ReadableStream<Uint8Array> {
  const encoder = encoders(format, fields)
  let iterator: AsyncIterator<RowBatch> | undefined
  let pending: Uint8Array[] = []
  let next = 0
  let closed = false
  /** The batches read and handed to the encoder, oldest first. */
  const queue: Promise<Encoded>[] = []
  /** Settles once the newest read has handed its batch to the encoder, so they reach it in order. */
  let handed: Promise<void> = Promise.resolve()
  /** The iterator has ended or failed: nothing more is read, and close is asked for once. */
  let exhausted = false

  /** Reads the next batch after the previous one was handed over, and encodes it (the closing bytes at the end). */
  function read(it: AsyncIterator<RowBatch>): Promise<Encoded> {
    const before = handed
    let done!: () => void
    handed = new Promise<void>(resolve => (done = resolve))
    const encoded = (async (): Promise<Encoded> => {
      try {
        await before
        if (exhausted) return { chunks: [], last: true }
        const r = await it.next()
        if (r.done) {
          exhausted = true
          const closing = encoder.close()
          done()
          return { chunks: await closing, last: true }
        }
        const chunks = encoder.batch(r.value)
        done()
        return { chunks: await chunks, last: false }
      } catch (err) {
        exhausted = true
        done()
        throw err
      }
    })()
    // A read ahead of one that failed is never awaited; its own failure does not matter.
    encoded.catch(() => {})
    return encoded
  }

  /** The next chunk, encoding batches until one yields bytes; undefined at the end. */
  async function nextChunk(): Promise<Uint8Array | undefined> {
    while (next >= pending.length) {
      if (closed) return undefined
      next = 0
      if (iterator === undefined) {
        iterator = batches[Symbol.asyncIterator]()
        pending = await encoder.open()
        continue
      }
      while (queue.length <= (encoder.ahead ?? 0) && !exhausted) queue.push(read(iterator))
      const r = await queue.shift()!
      pending = r.chunks
      if (r.last) closed = true
    }
    const chunk = pending[next]
    pending[next++] = EMPTY
    return chunk
  }

  /** Ends the batch iterator early (cancel or encoder error); its own failure no longer matters. */
  async function release(): Promise<void> {
    closed = true
    encoder.release?.()
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

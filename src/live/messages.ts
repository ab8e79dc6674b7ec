/**
 * Server messages as JSON text. Records inside `rows` messages are written by the
 * HTTP JSON format's record writer, so a row looks the same over both transports.
 * Block numbers of the protocol itself (cursor, fork point, gap bounds) are plain
 * integers, because `from_block` takes them back as they are.
 */
import { jsonRecordWriter, jsonRowsWriter } from '../format/json.ts'
import type { HexKernel } from '../format/hex-kernel.ts'
import { ByteSink, CHUNK_SIZE, fieldColumns } from '../format/sink.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import { concatBytes } from '../schema/hex.ts'
import type { RowBatch } from '../columns/batch.ts'

/**
 * A server message: JSON text, or that text as UTF-8 bytes, sent as a text frame all the
 * same. `rows` messages are written as bytes and stay bytes where the runtime can send
 * them so (the Node server): decoding a replay's text into strings, only for the socket to
 * encode it again, cost more than writing it.
 */
export type Message = string | Uint8Array

/** First message of a subscription: what it will deliver. */
export interface SubscribedInfo {
  subscription: string
  chain: string
  chain_id: number
  dataset: string
  fields: string[]
  /** First block delivered. */
  from_block: number
  /** Last block delivered, or null for a live subscription. */
  to_block: number | null
  /** Highest block known now (stored or followed), null when none. */
  head: number | null
}

/** A progress marker: every row of blocks up to `cursor` has been sent. */
export interface ProgressInfo {
  cursor: number
  /** Hash of block `cursor` when the server knows it (blocks of the unfinalized window). */
  hash?: string
  head: number | null
  /** True once the subscription follows the head. */
  live: boolean
}

export interface DroppedBlock {
  block_number: number
  hash: string
}

const json = JSON.stringify

export const subscribedMessage = (info: SubscribedInfo): string => json({ type: 'subscribed', ...info })

export const progressMessage = (p: ProgressInfo): string =>
  json({ type: 'progress', cursor: p.cursor, ...(p.hash === undefined ? {} : { hash: p.hash }), head: p.head, live: p.live })

/** Blocks `from`..`to` are neither stored nor followed: nothing can be sent for them. */
export const gapMessage = (from: number, to: number): string => json({ type: 'gap', from_block: from, to_block: to })

/** Blocks above `forkPoint` that the client was sent are no longer canonical; the cursor moves back to it. */
export const reorgMessage = (forkPoint: number, dropped: readonly DroppedBlock[]): string =>
  json({ type: 'reorg', fork_point: forkPoint, dropped, cursor: forkPoint })

export const errorMessage = (code: string, message: string, extra: Record<string, unknown> = {}): string =>
  json({ type: 'error', code, message, ...extra })

/** The last block of a bounded subscription was sent; a normal close follows. */
export const endMessage = (cursor: number): string => json({ type: 'end', cursor })

export const pongMessage = (id?: string | number): string => json(id === undefined ? { type: 'pong' } : { type: 'pong', id })

const OPEN_ROWS = '{"type":"rows","rows":['
const OPEN_REMOVED = '{"type":"rows","removed":true,"rows":['
const COMMA = 44

/**
 * A `rows` message ends after the record that takes it past this many bytes: a
 * client on a slow link is seen reading (the server's stall check counts whole
 * frames sent), and no client has to hold a frame of tens of megabytes.
 */
export const MESSAGE_BYTES = 1024 * 1024

/** How `rowsMessages` cuts and writes a batch's messages. */
export interface RowsMessageOptions {
  /** The messages are of blocks a reorg dropped, and say so. */
  removed?: boolean
  /** About the bytes of a message (default `MESSAGE_BYTES`). */
  maxBytes?: number
  /** Writes hex values in WebAssembly (the Node server's kernel). */
  hex?: HexKernel
}

/**
 * The `rows` messages of a batch as UTF-8 JSON, at most `maxRows` records and about
 * `maxBytes` bytes each, in the batch's order.
 *
 * A message's records after its first are written together, as the HTTP JSON format
 * writes them (a block of rows a column at a time), where the records so far say they stay
 * under 3/4 of the cap; a message that passes the cap all the same is written again a record at a
 * time, so that it ends after the record that takes it past the cap. Each message is one
 * buffer, sized by the records so far so that it is rarely joined from pieces.
 */
export function rowsMessages(
  fields: readonly FieldDecl[],
  batch: RowBatch,
  maxRows: number,
  { removed = false, maxBytes = MESSAGE_BYTES, hex }: RowsMessageOptions = {},
): Uint8Array[] {
  const writeRecord = jsonRecordWriter(fields, '}')
  const writeRest = jsonRowsWriter(fields, '}', ',', hex)
  const columns = fieldColumns(batch, fields)
  const out: Uint8Array[] = []
  /** Bytes a record, in the messages so far (0 before the first). */
  let perRecord = 0
  const open = (start: number, end: number) => {
    // Room for the records expected, the one past the cap, and some.
    const expected = perRecord && Math.min(maxBytes, perRecord * (end - start)) + 2 * perRecord + 1024
    const sink = new ByteSink(Math.max(CHUNK_SIZE, Math.ceil(expected)))
    sink.ascii(removed ? OPEN_REMOVED : OPEN_ROWS)
    writeRecord(sink, columns, start)
    return sink
  }
  for (let start = 0; start < batch.length;) {
    const end = Math.min(batch.length, start + maxRows)
    let sink: ByteSink | undefined
    let i = end
    if (perRecord * (end - start) < 0.75 * maxBytes) {
      sink = open(start, end)
      writeRest(sink, columns, start + 1, end)
      // Still under the cap, every record began under it: one at a time would have written them all.
      if (sink.size >= maxBytes) sink = undefined
    }
    if (!sink) {
      sink = open(start, end)
      i = start + 1
      while (i < end && sink.size < maxBytes) {
        sink.byte(COMMA)
        writeRecord(sink, columns, i++)
      }
    }
    perRecord = sink.size / (i - start)
    start = i
    sink.ascii(']}')
    const chunks = sink.flush()
    out.push(chunks.length === 1 ? chunks[0] : concatBytes(chunks))
  }
  return out
}

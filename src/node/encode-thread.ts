/**
 * The encoding thread of encode-threads.ts: one format encoder per stream, made at the
 * stream's first batch (its opening bytes go out with that batch), dropped at close
 * or release. Requests are answered in the order they come. Chunk buffers the main
 * thread hands back are kept (up to SPARE_BUFFERS) and written again; a batch's own
 * memory goes back with its answer, for the main thread's next copies.
 */
import { parentPort } from 'node:worker_threads'
import { formatEncoder } from '../format/encode.ts'
import { hexModuleFromFile, HexKernel } from '../format/hex-kernel.ts'
import type { BatchEncoder } from '../format/sink.ts'
import {
  chunkBuffers,
  packedBuffers,
  SPARE_BUFFERS,
  THREAD_CHUNK_SIZE,
  unpackVector,
  type EncodeReply,
  type EncodeRequest,
  type PackedVector,
} from './encode-threads.ts'

const port = parentPort!
/** One kernel for every stream: a batch is encoded at a time. Messages wait in the port until the handler below is set. */
const hex = new HexKernel(await hexModuleFromFile())
const encoders = new Map<number, BatchEncoder>()
/** Chunk buffers the main thread has written out and handed back, for the next chunks. */
const spare: ArrayBuffer[] = []
const chunks = () => {
  const buffer = spare.pop()
  return buffer ? new Uint8Array(buffer) : new Uint8Array(THREAD_CHUNK_SIZE)
}

/** Encodes, and answers with the chunks and the memory of the batch's columns (`spent`), which nothing here reads any more. */
function answer(seq: number, work: () => Uint8Array[], columns?: Record<string, PackedVector>): void {
  let reply: EncodeReply
  try {
    const chunks = work()
    const out = chunkBuffers(chunks)
    const spent = columns ? packedBuffers(columns).filter(b => !out.includes(b)) : []
    port.postMessage({ seq, chunks, spent } satisfies EncodeReply, [...out, ...spent])
    return
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err))
    reply = { seq, error: { name: e.name === 'Error' ? e.constructor.name : e.name, message: e.message } }
  }
  port.postMessage(reply)
}

port.on('message', (m: EncodeRequest) => {
  switch (m.op) {
    case 'batch':
      return answer(
        m.seq,
        () => {
          let encoder = encoders.get(m.stream)
          let opening: Uint8Array[] = []
          if (!encoder) {
            encoder = formatEncoder(m.format, m.fields, { chunks, continues: m.continues, hex })
            encoders.set(m.stream, encoder)
            opening = encoder.open()
          }
          const columns = Object.fromEntries(Object.entries(m.columns).map(([name, v]) => [name, unpackVector(v)]))
          return [...opening, ...encoder.batch({ length: m.length, columns })]
        },
        m.columns,
      )
    case 'close':
      return answer(m.seq, () => {
        const encoder = encoders.get(m.stream)
        encoders.delete(m.stream)
        if (!encoder) throw new Error(`no stream ${m.stream} to close`)
        return encoder.close()
      })
    case 'release':
      encoders.delete(m.stream)
      return
    case 'recycle':
      for (const buffer of m.buffers) if (buffer.byteLength === THREAD_CHUNK_SIZE && spare.length < SPARE_BUFFERS) spare.push(buffer)
  }
})

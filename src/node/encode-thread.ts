/**
 * The encoding thread of encode-threads.ts: one format encoder per stream, made at the
 * stream's first batch (its opening bytes go out with that batch), dropped at close
 * or release. Requests are answered in the order they come.
 */
import { parentPort } from 'node:worker_threads'
import { formatEncoder } from '../format/encode.ts'
import type { BatchEncoder } from '../format/sink.ts'
import { chunkBuffers, unpackVector, type EncodeReply, type EncodeRequest } from './encode-threads.ts'

const port = parentPort!
const encoders = new Map<number, BatchEncoder>()

function answer(seq: number, work: () => Uint8Array[]): void {
  let reply: EncodeReply
  try {
    const chunks = work()
    port.postMessage({ seq, chunks } satisfies EncodeReply, chunkBuffers(chunks))
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
      return answer(m.seq, () => {
        let encoder = encoders.get(m.stream)
        let opening: Uint8Array[] = []
        if (!encoder) {
          encoder = formatEncoder(m.format, m.fields)
          encoders.set(m.stream, encoder)
          opening = encoder.open()
        }
        const columns = Object.fromEntries(Object.entries(m.columns).map(([name, v]) => [name, unpackVector(v)]))
        return [...opening, ...encoder.batch({ length: m.length, columns })]
      })
    case 'close':
      return answer(m.seq, () => {
        const encoder = encoders.get(m.stream)
        encoders.delete(m.stream)
        if (!encoder) throw new Error(`no stream ${m.stream} to close`)
        return encoder.close()
      })
    case 'release':
      encoders.delete(m.stream)
  }
})

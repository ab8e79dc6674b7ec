/**
 * Text encoding in a thread of its own, for the Node server. A large text response
 * (JSON, JSON lines, CSV: Transfer everywhere is 341 MB of JSON) spends about a third
 * of its CPU writing text; here the main thread decodes batch n + 1 while this thread
 * writes batch n, so the two cores share the work as DuckDB's two threads do. Bytes
 * are the format encoder's own (the thread runs it); only the place changes.
 *
 * A stream's batches below `minRows` are encoded in the main thread (a small answer pays
 * no hop, and keeps to the fair shares); from its first larger batch on, the stream is the
 * thread's, which takes over after the rows written here (`continues`): a range that
 * starts near a row group's end has a small first batch and large ones after. Arrow
 * always stays (it hands out the vectors' own buffers). Batches cross as copies of the
 * fields' columns (transferred), made in memory the thread returned with earlier
 * answers, so the originals may go back to the scan's memory at once
 * (`recyclingEncoders`). Chunks come back transferred, and once the socket has taken one
 * (`written`), its buffer goes back to the thread to be written again. So the main
 * thread allocates, and collects, little of a large answer: fresh memory there made V8
 * run a full collection every request or two (BENCHMARKS.md, "Column memory lent
 * again"). If the thread dies, its streams fail (a broken response, never a short one)
 * and the next stream starts a new thread. Node only (node:worker_threads); workerd
 * encodes in place.
 */
import { Worker } from 'node:worker_threads'
import type { RowBatch } from '../columns/batch.ts'
import { fixedVector, u64Vector, type Vector } from '../columns/vector.ts'
import type { HexKernel } from '../format/hex-kernel.ts'
import { formatEncoder, handsOutColumns, type EncoderFactory, type Format, type StreamEncoder } from '../format/encode.ts'
import { BatchShapeError, type BatchEncoder } from '../format/sink.ts'
import { BufferPool } from '../query/column-buffers.ts'
import type { FieldDecl } from '../schema/dataset.ts'

/** Rows of a batch from which a text stream is encoded in the thread (with every later batch). */
export const THREAD_MIN_ROWS = 2048

/**
 * The size of the thread's chunk buffers. Each chunk is a write of the socket, a system
 * call: 100 blocks' 24 MB of JSON in 64 KiB chunks cost the main thread ~18 ms of writes
 * (BENCHMARKS.md "Text records a column at a time").
 */
export const THREAD_CHUNK_SIZE = 256 * 1024

/** Written chunk buffers the thread keeps for reuse (4 MiB). */
export const SPARE_BUFFERS = (4 * 1024 * 1024) / THREAD_CHUNK_SIZE

/** Written chunk buffers handed back to the thread together (1 MiB). */
const RECYCLE_BATCH = (1024 * 1024) / THREAD_CHUNK_SIZE

/** Idle memory kept for copies of batches, which the thread returns once it has encoded them (32 MiB). */
const PACK_MEMORY = 32 * 1024 * 1024

/** A column as it crosses threads: its buffers copied out of whatever they view, so they can be transferred. */
export type PackedVector =
  | { type: 'u64'; length: number; valid: Uint8Array | null; values: BigUint64Array }
  | { type: 'fixed'; length: number; valid: Uint8Array | null; width: number; bytes: Uint8Array }
  | { type: 'binary'; length: number; valid: Uint8Array | null; text: boolean; offsets: Int32Array; bytes: Uint8Array }
  | { type: 'bool'; length: number; valid: Uint8Array | null; values: Uint8Array }

/** What the main thread asks of the encoding thread. */
export type EncodeRequest =
  | {
      seq: number
      stream: number
      op: 'batch'
      format: Format
      fields: FieldDecl[]
      length: number
      columns: Record<string, PackedVector>
      /** The stream's first batch in the thread after this many rows encoded in place (formatEncoder's `continues`). */
      continues?: number
    }
  | { seq: number; stream: number; op: 'close' }
  | { stream: number; op: 'release' }
  | { op: 'recycle'; buffers: ArrayBuffer[] }

/**
 * Its answer, by request: the chunks and the memory of the batch's columns, done with
 * (both transferred), or the error.
 */
export type EncodeReply =
  { seq: number; chunks: Uint8Array[]; spent: ArrayBuffer[] } | { seq: number; error: { name: string; message: string } }

/** Memory for a packed copy of `bytes` bytes (a buffer the thread handed back), or undefined for a fresh one. */
export type PackMemory = (bytes: number) => ArrayBuffer | undefined

type Packable = Uint8Array | Int32Array | BigUint64Array

/** A copy of `a` in memory of its own (so transferring it leaves the original alone): from `memory` when it lends some. */
function own<T extends Packable>(a: T, transfer: ArrayBuffer[], memory?: PackMemory): T {
  const buffer = memory?.(a.byteLength)
  if (!buffer) {
    const copy = a.slice() as T
    transfer.push(copy.buffer as ArrayBuffer)
    return copy
  }
  const copy = new (a.constructor as new (buffer: ArrayBuffer, offset: number, length: number) => T)(buffer, 0, a.length)
  copy.set(a as never)
  transfer.push(buffer)
  return copy
}

/** The vector's first `length` rows as buffers of their own (from `memory` when it lends them), listed in `transfer`. */
export function packVector(v: Vector, length: number, transfer: ArrayBuffer[], memory?: PackMemory): PackedVector {
  const valid = v.valid === null ? null : own(v.valid.subarray(0, length), transfer, memory)
  switch (v.type) {
    case 'u64':
      return { type: 'u64', length, valid, values: own(v.values.subarray(0, length), transfer, memory) }
    case 'bool':
      return { type: 'bool', length, valid, values: own(v.values.subarray(0, length), transfer, memory) }
    case 'fixed':
      return { type: 'fixed', length, valid, width: v.width, bytes: own(v.bytes.subarray(0, length * v.width), transfer, memory) }
    case 'binary': {
      const offsets = v.offsets.subarray(0, length + 1)
      const bytes = v.bytes.subarray(offsets[0], offsets[length])
      const shifted = own(offsets, transfer, memory)
      if (offsets[0] !== 0) for (let i = 0; i <= length; i++) shifted[i] -= offsets[0]
      return { type: 'binary', length, valid, text: v.text, offsets: shifted, bytes: own(bytes, transfer, memory) }
    }
  }
}

/** The buffers under a packed batch's columns. */
export function packedBuffers(columns: Record<string, PackedVector>): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>()
  for (const p of Object.values(columns)) {
    if (p.valid) out.add(p.valid.buffer as ArrayBuffer)
    out.add((p.type === 'u64' || p.type === 'bool' ? p.values : p.type === 'fixed' ? p.bytes : p.offsets).buffer as ArrayBuffer)
    if (p.type === 'binary') out.add(p.bytes.buffer as ArrayBuffer)
  }
  return [...out]
}

/** The vector a packed column stands for. */
export function unpackVector(p: PackedVector): Vector {
  if (p.type === 'u64') return u64Vector(p.values, p.valid)
  if (p.type === 'fixed') return fixedVector(p.width, p.bytes, p.valid, p.length)
  return p
}

/** The distinct buffers under `chunks`, to transfer them. */
export function chunkBuffers(chunks: readonly Uint8Array[]): ArrayBuffer[] {
  return [...new Set(chunks.map(c => c.buffer as ArrayBuffer))]
}

/** An error that crossed from the thread: an encoder's shape error stays one. */
function rebuilt(e: { name: string; message: string }): Error {
  return e.name === 'BatchShapeError' ? new BatchShapeError(e.message) : new Error(e.message)
}

export interface ThreadEncoders {
  /** The EncoderFactory to give the app (createApp's `encoders`). */
  encoders: EncoderFactory
  /**
   * Tells that a chunk of a response has been written out (the socket's write callback):
   * a chunk buffer the thread made is handed back to it for reuse. Only a buffer that backs
   * that chunk alone, at the thread's chunk size, is; nothing may read the chunk afterwards.
   */
  written(chunk: Uint8Array): void
  /** Chunk buffers handed back so far. */
  readonly recycled: number
  /** Batches encoded in the thread so far. */
  readonly threadBatches: number
  /** Bytes of batch memory the thread has returned, idle for the next batches' copies. */
  readonly packMemory: number
  /** Stops the thread; streams still encoding there fail. */
  close(): Promise<void>
}

/**
 * An encoding thread and the factory that sends it the large text streams. A batch is
 * copied for the thread before `batch` returns: the caller may recycle its columns then
 * (format/encode.ts `recyclingEncoders`).
 */
export function threadEncoders(options: { minRows?: number; workerUrl?: URL; hex?: HexKernel } = {}): ThreadEncoders {
  const minRows = options.minRows ?? THREAD_MIN_ROWS
  let worker: Worker | undefined
  let seq = 0
  let streams = 0
  let threadBatches = 0
  let recycled = 0
  /** Chunk buffers from the thread not yet written out, by the thread that made them. */
  const made = new WeakMap<ArrayBuffer, Worker>()
  /** Written buffers waiting to go back to `worker` together. */
  let back: ArrayBuffer[] = []
  /** Memory of the batches the thread has encoded, for the next batches' copies. */
  const packs = new BufferPool({ maxBytes: PACK_MEMORY })
  const packMemory: PackMemory = bytes => packs.take(bytes)?.buffer as ArrayBuffer | undefined
  const waiting = new Map<number, { w: Worker; resolve(chunks: Uint8Array[]): void; reject(err: Error): void }>()
  /** Threads that exited: a message to one is dropped without a word, so nothing is asked of them. */
  const gone = new WeakMap<Worker, Error>()

  /** Fails what was asked of `w` (and only of it: a newer thread may be at work already). */
  function failAsked(w: Worker, err: Error): void {
    for (const [seq, entry] of waiting) {
      if (entry.w !== w) continue
      waiting.delete(seq)
      entry.reject(err)
    }
  }

  function thread(): Worker {
    if (worker) return worker
    const w = new Worker(options.workerUrl ?? new URL('./encode-thread.ts', import.meta.url))
    // The server's own handles keep the process; an idle encoding thread never does.
    w.unref()
    w.on('message', (m: EncodeReply) => {
      const entry = waiting.get(m.seq)
      if (!entry) return
      waiting.delete(m.seq)
      if ('error' in m) return entry.reject(rebuilt(m.error))
      packs.give(m.spent.map(buffer => new Uint8Array(buffer)))
      const users = new Map<ArrayBuffer, number>()
      for (const c of m.chunks) users.set(c.buffer as ArrayBuffer, (users.get(c.buffer as ArrayBuffer) ?? 0) + 1)
      for (const [buffer, n] of users) if (n === 1 && buffer.byteLength === THREAD_CHUNK_SIZE) made.set(buffer, w)
      entry.resolve(m.chunks)
    })
    const end = (err: Error) => {
      if (worker === w) worker = undefined
      if (!gone.has(w)) gone.set(w, err)
      failAsked(w, err)
    }
    w.on('error', end)
    w.on('exit', code => end(new Error(`the encoding thread exited (code ${code})`)))
    worker = w
    return w
  }

  function ask(w: Worker, request: Extract<EncodeRequest, { seq: number }>, transfer: ArrayBuffer[] = []): Promise<Uint8Array[]> {
    const ended = gone.get(w)
    if (ended) return Promise.reject(ended)
    return new Promise((resolve, reject) => {
      waiting.set(request.seq, { w, resolve, reject })
      w.postMessage(request, transfer)
    })
  }

  const encoders: EncoderFactory = (format, fields) => {
    if (handsOutColumns(format)) return formatEncoder(format, fields)
    const stream = ++streams
    const plain = fields.map(f => ({ name: f.name, kind: f.kind, ...(f.nullable ? { nullable: true } : {}) }))
    /** The encoder in this thread, while the stream's batches are small. */
    let local: BatchEncoder | undefined
    /** Rows `local` has written. */
    let localRows = 0
    /** The thread this stream's batches went to; only it holds the stream's encoder. */
    let remote: Worker | undefined
    /** The stream starts in this thread: its encoder, opened (the opening bytes come first). */
    const stayHere = (): [BatchEncoder, Uint8Array[]] => {
      local = formatEncoder(format, fields, { hex: options.hex })
      return [local, local.open()]
    }
    const encoder: StreamEncoder = {
      // Read one batch ahead only once batches go to the thread: in place, one at a time as before.
      get ahead() {
        return remote ? 1 : 0
      },
      // The opening bytes travel with the first batch, from wherever it is encoded.
      open: () => [],
      batch(batch: RowBatch) {
        if (!remote && batch.length < minRows) {
          localRows += batch.length
          if (local) return local.batch(batch)
          const [here, opening] = stayHere()
          return [...opening, ...here.batch(batch)]
        }
        // The thread takes over after what was written here; nothing is left in `local`'s sink (batch flushes it).
        const continues = !remote && local ? localRows : undefined
        remote ??= thread()
        threadBatches++
        const transfer: ArrayBuffer[] = []
        const columns: Record<string, PackedVector> = {}
        for (const f of fields) {
          const col = batch.columns[f.name]
          if (col !== undefined) columns[f.name] = packVector(col, Math.min(batch.length, col.length), transfer, packMemory)
        }
        const request: EncodeRequest = { seq: ++seq, stream, op: 'batch', format, fields: plain, length: batch.length, columns }
        if (continues !== undefined) request.continues = continues
        return ask(remote, request, transfer)
      },
      close() {
        if (remote) return ask(remote, { seq: ++seq, stream, op: 'close' })
        if (local) return local.close()
        const [here, opening] = stayHere()
        return [...opening, ...here.close()]
      },
      release() {
        if (remote && remote === worker) remote.postMessage({ stream, op: 'release' } satisfies EncodeRequest)
      },
    }
    return encoder
  }

  function written(chunk: Uint8Array): void {
    const buffer = chunk.buffer as ArrayBuffer
    const w = made.get(buffer)
    if (!w) return
    made.delete(buffer)
    if (w !== worker || gone.has(w)) return
    back.push(buffer)
    recycled++
    if (back.length < RECYCLE_BATCH) return
    const buffers = back
    back = []
    w.postMessage({ op: 'recycle', buffers } satisfies EncodeRequest, buffers)
  }

  return {
    encoders,
    written,
    get threadBatches() {
      return threadBatches
    },
    get packMemory() {
      return packs.size
    },
    get recycled() {
      return recycled
    },
    async close() {
      const w = worker
      worker = undefined
      if (w) await w.terminate()
    },
  }
}

/**
 * Memory of decoded columns, handed out again instead of freed (the Node server's). In
 * fresh memory, every answer's columns are new backing stores (12 MB for 100 blocks of
 * logs), and V8 meets that stream of external memory with a full garbage collection
 * every request or two: marking the server's heap then cost about as much CPU as the
 * answer's text (BENCHMARKS.md, "Column memory lent again").
 *
 * The scan's data pages and row copies go into buffers from here (`VectorMemory`,
 * src/columns/vector.ts): an idle one that fits, else fresh memory of the exact size; the
 * vector built in them is their owner. Whoever consumes a vector last hands it back with
 * `recycle`: the text encoders (`recyclingEncoders`, src/format/encode.ts), once a batch is
 * written or copied for the encoding thread, and the scan for the columns it only selected
 * with. An Arrow answer's body is its columns' own memory (format/arrow.ts): `handOut`
 * takes it back once the socket has written every chunk that views it (`wrote`), or at
 * once where the encoder copied it. A vector never handed back (a WebSocket message, a
 * filter column dropped, an Arrow body compressed or cut off) leaves its memory to the
 * garbage collector, as before. Recycling a vector something still reads would lend its
 * bytes to another scan, so only a batch's last reader may do it.
 */
import type { Vector, VectorMemory } from '../columns/vector.ts'

/** Idle buffers, by the power of two at or below their size. */
type Buckets = Map<number, Uint8Array[]>

const bucketOf = (bytes: number) => Math.floor(Math.log2(bytes))

/**
 * Buffers handed out again instead of freed: `take` gives an idle one that fits or fresh
 * memory of the exact size, `give` takes back buffers nothing reads any more (up to
 * `maxBytes` idle). The Node server's encoding thread also returns the memory of the
 * batches it was sent in one (src/node/encode-threads.ts).
 */
export class BufferPool {
  readonly maxBytes: number
  readonly minBytes: number
  private readonly idle: Buckets = new Map()
  private idleBytes = 0

  /** At most `maxBytes` kept idle (default 64 MiB); requests below `minBytes` are left to the allocator (default 8 KiB). */
  constructor(options: { maxBytes?: number; minBytes?: number } = {}) {
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024
    this.minBytes = options.minBytes ?? 8 * 1024
  }

  /** Bytes kept for reuse now. */
  get size(): number {
    return this.idleBytes
  }

  /**
   * A buffer of at least `length` bytes and less than four times as many: an idle one (stale
   * contents) or a fresh one of exactly `length`; undefined below the pooled size.
   */
  take(length: number): Uint8Array | undefined {
    if (length < this.minBytes) return undefined
    const first = bucketOf(length)
    for (let b = first; b <= first + 1; b++) {
      const list = this.idle.get(b)
      if (!list) continue
      const i = list.findIndex(buffer => buffer.length >= length)
      if (i < 0) continue
      const [buffer] = list.splice(i, 1)
      this.idleBytes -= buffer.length
      return buffer
    }
    return new Uint8Array(length)
  }

  /** Takes back buffers nothing reads any more; those below the pooled size are left to the garbage collector. */
  give(buffers: Iterable<Uint8Array>): void {
    for (const buffer of buffers) {
      if (buffer.length < this.minBytes || this.idleBytes + buffer.length > this.maxBytes) continue
      const b = bucketOf(buffer.length)
      const list = this.idle.get(b) ?? []
      list.push(buffer)
      this.idle.set(b, list)
      this.idleBytes += buffer.length
    }
  }
}

/** A BufferPool whose buffers belong to the vectors built in them until they are recycled. */
export class ColumnBuffers extends BufferPool implements VectorMemory {
  private readonly owners = new WeakMap<Vector, Uint8Array[]>()
  /**
   * Lent buffers viewed by chunks of a response, by their memory, with the bytes of those
   * chunks not yet written. Weak: a chunk never written (compressed, or the client gone)
   * leaves the buffer to the garbage collector.
   */
  private readonly out = new WeakMap<ArrayBufferLike, { buffer: Uint8Array; unwritten: number }>()
  /** Vectors handed back so far. */
  recycled = 0
  /** Buffers of handed-out vectors that came back once their chunks were written. */
  written = 0

  owns(vector: Vector, buffers: Uint8Array[]): void {
    this.owners.set(vector, buffers)
  }

  /** Takes back the memory `vector` was built in, if it came from here; nothing may read the vector afterwards. */
  recycle(vector: Vector): void {
    const buffers = this.release(vector)
    if (buffers) this.give(buffers)
  }

  /** The buffers `vector` owns, no longer its (counted as handed back); undefined when it owns none, or no longer. */
  private release(vector: Vector): Uint8Array[] | undefined {
    const buffers = this.owners.get(vector)
    if (!buffers) return undefined
    this.owners.delete(vector)
    this.recycled++
    return buffers
  }

  /**
   * Takes back the memory of `vectors` once `chunks` (a response's bytes, some of them views
   * of that memory) are written: a buffer comes back when every byte of the chunks viewing
   * it has been reported by `wrote`, at once when none views it. Nothing else may read the
   * vectors afterwards.
   */
  handOut(vectors: Iterable<Vector>, chunks: readonly Uint8Array[]): void {
    for (const vector of vectors) {
      for (const buffer of this.release(vector) ?? []) {
        let unwritten = 0
        for (const c of chunks) if (c.buffer === buffer.buffer) unwritten += c.byteLength
        if (unwritten === 0) this.give([buffer])
        else this.out.set(buffer.buffer, { buffer, unwritten })
      }
    }
  }

  /** The socket has taken `chunk`: memory whose last unwritten bytes it held comes back. */
  wrote(chunk: Uint8Array): void {
    const entry = this.out.get(chunk.buffer)
    if (!entry) return
    entry.unwritten -= chunk.byteLength
    if (entry.unwritten > 0) return
    this.out.delete(chunk.buffer)
    this.written++
    this.give([entry.buffer])
  }
}

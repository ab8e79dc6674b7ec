/**
 * Memory for the bytes a scan reads, handed out again to later scans instead of freed.
 * A query that reads a whole lake (one event signature everywhere, an export) fetches
 * ~80 MB; in fresh memory from the system each page of it costs more to fill than the read
 * itself (on the benchmark machine, reading 80 MB of local files into fresh buffers took
 * ~300 ms and touching them first ~250 ms more; into reused ones, 10 and 20 ms), which is why
 * DuckDB keeps a buffer pool. The Node server reads local files into these (`ByteRange.into`);
 * a store that allocates its own bodies (R2, S3) ignores them.
 *
 * Buffers come in power-of-two sizes, so one taken for a 5 MB request serves any later
 * request up to 8 MB (a smaller one when no buffer of its own size is idle); at most `maxBytes` are kept idle, the rest are left to the garbage
 * collector. A `ReadQueue` gives back what its scan took only once the scan has consumed
 * every read (src/query/io.ts), so no byte of a buffer is read after it was lent again.
 */

/** Requests below this are left to the allocator: small blocks are reused by it already. */
const MIN_BYTES = 64 * 1024

export class ReadBuffers {
  readonly maxBytes: number
  private readonly idle = new Map<number, Uint8Array[]>()
  private idleBytes = 0

  constructor(maxBytes = 128 * 1024 * 1024) {
    this.maxBytes = maxBytes
  }

  /** Bytes kept for reuse now. */
  get size(): number {
    return this.idleBytes
  }

  /** A buffer of at least `length` bytes (its contents are stale), or undefined for a request too small to pool. */
  take(length: number): Uint8Array | undefined {
    if (length < MIN_BYTES) return undefined
    const size = 2 ** Math.ceil(Math.log2(length))
    // the smallest idle buffer that holds it: a bigger one is still memory already touched
    for (let s = size; s <= this.maxBytes; s *= 2) {
      const kept = this.idle.get(s)?.pop()
      if (kept) {
        this.idleBytes -= s
        return kept
      }
    }
    return new Uint8Array(size)
  }

  /** Takes back buffers from `take` whose bytes nothing reads any more. */
  give(buffers: readonly Uint8Array[]): void {
    for (const b of buffers) {
      if (this.idleBytes + b.length > this.maxBytes) continue
      const list = this.idle.get(b.length) ?? []
      list.push(b)
      this.idle.set(b.length, list)
      this.idleBytes += b.length
    }
  }
}

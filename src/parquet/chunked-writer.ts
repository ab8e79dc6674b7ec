/**
 * The writer a partition's Parquet is written into: hyparquet-writer's ByteWriter grows one
 * buffer by doubling, so a 200 MB partition is copied on each doubling and briefly takes
 * twice its size. Each of those large buffers is external memory to V8, and while a unit's
 * rows are held, external memory growing by tens of megabytes starts a full collection over
 * all of them (BENCHMARKS.md "Partitions written without doubling, and what the 25-block units
 * leave out"). This writer adds chunks instead, and copies its bytes once, into a buffer of
 * exactly their size, when asked for them.
 */
import { ByteWriter } from 'hyparquet-writer'

/** Most bytes a chunk holds, unless one write needs more: chunks double up to it, so a small partition allocates little. */
export const CHUNK_BYTES = 4 << 20

export class ChunkedWriter extends ByteWriter {
  /** Full chunks before the current one (`buffer` up to `index`), and the offset each starts at. */
  private readonly chunks: Uint8Array[] = []
  private readonly starts: number[] = []

  /** `first`: the first chunk's size, when the caller knows about how much it will write. */
  constructor(first = 64 * 1024) {
    super(first)
  }

  override ensure(size: number): void {
    if (this.index + size <= this.buffer.byteLength) return
    if (this.index > 0) {
      this.starts.push(this.offset - this.index)
      this.chunks.push(new Uint8Array(this.buffer, 0, this.index))
    }
    this.buffer = new ArrayBuffer(Math.max(size, Math.min(CHUNK_BYTES, 2 * this.buffer.byteLength)))
    this.view = new DataView(this.buffer)
    this.index = 0
  }

  /** `length` bytes written from `offset`: a view where one chunk holds them all, else a copy. */
  read(offset: number, length: number): Uint8Array {
    const end = offset + length
    if (offset < 0 || end > this.offset) throw new RangeError(`ChunkedWriter: bytes ${offset}-${end} of ${this.offset} written`)
    const current = this.offset - this.index
    if (offset >= current) return new Uint8Array(this.buffer, offset - current, length)
    let i = this.chunks.length - 1
    while (this.starts[i] > offset) i--
    if (end <= this.starts[i] + this.chunks[i].length) return this.chunks[i].subarray(offset - this.starts[i], end - this.starts[i])
    return this.copy(i, offset, new Uint8Array(length))
  }

  /** Every byte written, in a buffer of exactly their size, its own (transferable whole). */
  override getBytes(): Uint8Array<ArrayBuffer> {
    if (this.chunks.length === 0 && this.index === this.buffer.byteLength) return new Uint8Array(this.buffer)
    return this.copy(0, 0, new Uint8Array(this.offset))
  }

  /** Fills `out` with the bytes written from `offset`, which chunk `i` holds (the current one after the full ones). */
  private copy(i: number, offset: number, out: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
    for (let at = offset; at < offset + out.length; i++) {
      const [chunk, start] =
        i < this.chunks.length ? [this.chunks[i], this.starts[i]] : [new Uint8Array(this.buffer, 0, this.index), this.offset - this.index]
      const take = chunk.subarray(at - start, Math.min(chunk.length, offset + out.length - start))
      out.set(take, at - offset)
      at += take.length
    }
    return out
  }

  override getBuffer(): ArrayBuffer {
    return this.getBytes().buffer
  }
}

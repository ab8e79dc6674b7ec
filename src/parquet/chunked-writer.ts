/**
 * The writer a partition's Parquet is written into: hyparquet-writer's ByteWriter grows one
 * buffer by doubling, so a 200 MB partition is copied on each doubling and briefly takes
 * twice its size. Each of those large buffers is external memory to V8, and while a unit's
 * rows are held, external memory growing by tens of megabytes starts a full collection over
 * all of them (BENCHMARKS.md "Partitions written without doubling, and what the 25-block units
 * leave out"). This writer adds chunks instead, and copies its bytes once, into a buffer of
 * exactly their size, when asked for them. Its full-size chunks then go to the next writer
 * (`release`): a unit writes several partitions of hundreds of megabytes one after another.
 */
import { ByteWriter } from 'hyparquet-writer'
import { NativeBuffer } from '../schema/hex.ts'

/** Most bytes a chunk holds, unless one write needs more: chunks double up to it, so a small partition allocates little. */
export const CHUNK_BYTES = 4 << 20

/** Released chunks of CHUNK_BYTES kept for the next writers of this thread, at most SPARE_CHUNKS (64 MiB: 256 MiB gave no more speed and ~250 MB more peak RSS in the partition row). */
const spare: ArrayBuffer[] = []
const SPARE_CHUNKS = 16

/** A buffer of `size` bytes, all of which the caller writes: Node's is not zeroed first (a pass over a partition's size). */
function unfilled(size: number): Uint8Array<ArrayBuffer> {
  return NativeBuffer ? new Uint8Array(NativeBuffer.allocUnsafeSlow(size).buffer as ArrayBuffer, 0, size) : new Uint8Array(size)
}

export class ChunkedWriter extends ByteWriter {
  /** Full chunks before the current one (`buffer` up to `index`). */
  private chunks: Uint8Array<ArrayBuffer>[] = []
  /** The buffer `getBytes` gave away whole, which `release` must not hand on. */
  private given?: ArrayBuffer

  /** `first`: the first chunk's size, when the caller knows about how much it will write. */
  constructor(first = 64 * 1024) {
    super(first)
  }

  override ensure(size: number): void {
    if (this.index + size <= this.buffer.byteLength) return
    if (this.index > 0) this.chunks.push(new Uint8Array(this.buffer, 0, this.index))
    const next = Math.max(size, Math.min(CHUNK_BYTES, 2 * this.buffer.byteLength))
    this.buffer = (next === CHUNK_BYTES && spare.pop()) || new ArrayBuffer(next)
    this.view = new DataView(this.buffer)
    this.index = 0
  }

  /** Every byte written, in a buffer of exactly their size, its own (transferable whole). */
  override getBytes(): Uint8Array<ArrayBuffer> {
    if (this.chunks.length === 0 && this.index === this.buffer.byteLength) {
      this.given = this.buffer
      return new Uint8Array(this.buffer)
    }
    const out = unfilled(this.offset)
    let at = 0
    for (const chunk of [...this.chunks, new Uint8Array(this.buffer, 0, this.index)]) {
      out.set(chunk, at)
      at += chunk.length
    }
    return out
  }

  override getBuffer(): ArrayBuffer {
    return this.getBytes().buffer
  }

  /** Hands the full-size chunks to the next writers; this one is spent (write nothing more, ask for no bytes). */
  release(): void {
    for (const { buffer } of [...this.chunks, new Uint8Array(this.buffer)]) {
      if (buffer !== this.given && buffer.byteLength === CHUNK_BYTES && spare.length < SPARE_CHUNKS) spare.push(buffer)
    }
    this.chunks = []
    this.buffer = new ArrayBuffer(0)
    this.view = new DataView(this.buffer)
    this.index = 0
  }
}

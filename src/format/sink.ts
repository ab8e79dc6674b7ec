/**
 * The byte side shared by every output encoder: encoders write straight into a
 * growable buffer and hand out chunks of about CHUNK_SIZE bytes, so a response is
 * produced batch by batch in a few large writes instead of one string per value.
 */
import { shapeOf, type Vector, type VectorShape } from '../columns/vector.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import type { RowBatch } from '../columns/batch.ts'
import type { HexKernel } from './hex-kernel.ts'

/** Size of a response's first chunk (64 KiB); the Node server's encoding thread writes THREAD_CHUNK_SIZE ones (src/node/encode-threads.ts). */
export const CHUNK_SIZE = 64 * 1024

/**
 * Size of a sink's own chunks after its first (1 MiB): in workerd each chunk the body
 * stream takes costs a write of its own, and 64 KiB chunks made a 25 MB answer 15 %
 * slower than 1 MiB ones (BENCHMARKS.md, "Dense picks, page headers, 1 MiB chunks").
 * A small answer still takes one buffer of CHUNK_SIZE.
 */
export const LARGE_CHUNK_SIZE = 1024 * 1024

/**
 * One output format: the bytes that open it, those of each batch and those that
 * end it. `close` is only called after the last batch was encoded without error,
 * so a failed response never gets its closing bytes. Opening bytes may be held
 * back to travel with the first batch; a batch's bytes are all handed out with
 * it, so nothing waits on a slow source.
 */
export interface BatchEncoder {
  open(): Uint8Array[]
  batch(batch: RowBatch): Uint8Array[]
  close(): Uint8Array[]
}

/**
 * Thrown when a batch contradicts the field declarations (missing column, a vector
 * of another layout than the field's kind, null in a required field).
 */
export class BatchShapeError extends Error {}

/** The batch's column for a field, checked to exist and to be long enough. */
export function columnOfBatch(batch: RowBatch, name: string): Vector {
  const col = batch.columns[name]
  if (col === undefined) throw new BatchShapeError(`batch has no column "${name}"`)
  if (col.length < batch.length) throw new BatchShapeError(`column "${name}" has ${col.length} values, batch has ${batch.length} rows`)
  return col
}

function layoutName(s: VectorShape | Vector): string {
  return s.type === 'fixed' ? `fixed(${s.width})` : s.type
}

/**
 * The batch's column for a field, also checked to have the layout of the field's
 * kind: the writers read its buffers without looking at its type again.
 */
export function fieldColumn(batch: RowBatch, field: FieldDecl): Vector {
  const v = columnOfBatch(batch, field.name)
  const shape = shapeOf(field.kind)
  if (v.type !== shape.type || (v.type === 'fixed' && shape.type === 'fixed' && v.width !== shape.width)) {
    throw new BatchShapeError(`field "${field.name}" (${field.kind}) holds a ${layoutName(v)} vector, expected ${layoutName(shape)}`)
  }
  return v
}

/** The checked columns of `fields`, in field order. */
export function fieldColumns(batch: RowBatch, fields: readonly FieldDecl[]): Vector[] {
  return fields.map(f => fieldColumn(batch, f))
}

/** Raised for a null in a field the declaration says is never null. */
export function requiredNull(name: string): BatchShapeError {
  return new BatchShapeError(`null in non-nullable field "${name}"`)
}

const encoder = new TextEncoder()

/**
 * Where a sink's buffers of CHUNK_SIZE bytes come from: the Node server's encoding thread
 * reuses those the main thread has written to the socket and handed back (encode-threads.ts),
 * so a large answer does not allocate its size in buffers. A buffer may hold old bytes: a
 * chunk is only ever the part written.
 */
export type ChunkSource = () => Uint8Array

/**
 * How a text encoder writes: its buffers from `chunks` when given; with `continues`, it
 * takes over a stream another encoder opened and wrote that many rows of (the Node
 * server's move to its encoding thread): no opening bytes, and JSON's records go on
 * after a comma; hex through `hex` when given (hex-kernel.ts). Same bytes either way.
 */
export interface TextOptions {
  chunks?: ChunkSource
  continues?: number
  hex?: HexKernel
}

/**
 * A write buffer that fills fixed-size chunks. Hot writers may `reserve(n)` and
 * then write up to n bytes at `buf[pos]` themselves, advancing `pos`.
 * Chunks are cut wherever a chunk fills, in the middle of a record if need be.
 */
export class ByteSink {
  buf: Uint8Array
  /** `buf` as a DataView, for writers that store whole words (text.ts). */
  view: DataView
  pos = 0
  private readonly chunkSize: number
  private readonly allocate: () => Uint8Array
  /** Size of the sink's next buffer of its own. */
  private next: number
  private done: Uint8Array[] = []
  private doneBytes = 0

  /**
   * `chunks` gives each new buffer of `chunkSize` bytes (see ChunkSource); without it the
   * sink allocates its own: the first of `chunkSize` bytes, the next of LARGE_CHUNK_SIZE.
   */
  constructor(chunkSize = CHUNK_SIZE, chunks?: ChunkSource) {
    this.chunkSize = chunkSize
    this.next = chunkSize
    this.allocate = chunks ?? (() => this.grown())
    this.buf = this.allocate()
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength)
  }

  /** Makes room for `n` more bytes at `pos`, cutting a chunk when the buffer is full. */
  reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return
    this.cut()
    if (n > this.buf.length) this.use(new Uint8Array(n))
  }

  private grown(): Uint8Array {
    const buffer = new Uint8Array(this.next)
    this.next = Math.max(this.chunkSize, LARGE_CHUNK_SIZE)
    return buffer
  }

  private use(buf: Uint8Array): void {
    this.buf = buf
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  }

  /**
   * Hands out the bytes written so far as a chunk. A mostly empty buffer is
   * copied and reused, so a small chunk does not pin a whole buffer.
   */
  private cut(): void {
    if (this.pos === 0) return
    this.doneBytes += this.pos
    if (this.pos < this.buf.length >> 1 && this.buf.length <= Math.max(this.chunkSize, LARGE_CHUNK_SIZE)) {
      this.done.push(this.buf.slice(0, this.pos))
    } else {
      this.done.push(this.buf.subarray(0, this.pos))
      this.use(this.allocate())
    }
    this.pos = 0
  }

  /** Appends text known to be ASCII (keys, numbers, punctuation). */
  ascii(s: string): void {
    this.reserve(s.length)
    const b = this.buf
    let p = this.pos
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i)
    this.pos = p
  }

  /** Appends any text as UTF-8 (lone surrogates become U+FFFD, as TextEncoder does). */
  utf8(s: string): void {
    this.reserve(s.length * 3)
    const b = this.buf
    let p = this.pos
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) {
        p += encoder.encodeInto(s.slice(i), b.subarray(p)).written
        break
      }
      b[p++] = c
    }
    this.pos = p
  }

  /** Appends bytes; a large block after a cut is handed out as it is, without a copy. */
  bytes(data: Uint8Array): void {
    if (data.length >= this.chunkSize) {
      this.cut()
      this.done.push(data)
      this.doneBytes += data.length
      return
    }
    this.reserve(data.length)
    if (data.length > 32) {
      this.buf.set(data, this.pos)
      this.pos += data.length
      return
    }
    const b = this.buf
    let p = this.pos
    for (let i = 0; i < data.length; i++) b[p++] = data[i]
    this.pos = p
  }

  /** Appends one byte. */
  byte(c: number): void {
    this.reserve(1)
    this.buf[this.pos++] = c
  }

  /** Bytes written and not yet taken. */
  get size(): number {
    return this.doneBytes + this.pos
  }

  /** The chunks filled so far; the partly filled buffer stays for the next writes. */
  take(): Uint8Array[] {
    const out = this.done
    this.done = []
    this.doneBytes = 0
    return out
  }

  /** Everything written and not yet taken, the partly filled buffer included. */
  flush(): Uint8Array[] {
    this.cut()
    return this.take()
  }
}

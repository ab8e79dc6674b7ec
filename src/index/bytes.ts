/**
 * Unsigned LEB128 varints up to 2^53 (every count, gap and offset of the index format):
 * small numbers dominate (gaps between sorted keys and row groups), so most take 1–3 bytes.
 */

/** Thrown when index bytes that passed their checksum still do not parse: a format bug, named by object key. */
export class IndexFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'IndexFormatError'
  }
}

/** A growable byte buffer written front to back. */
export class ByteWriter {
  private buf: Uint8Array
  length = 0

  constructor(capacity = 1024) {
    this.buf = new Uint8Array(capacity)
  }

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n))
    next.set(this.buf.subarray(0, this.length))
    this.buf = next
  }

  uint(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a varint: ${n}`)
    this.reserve(8)
    const buf = this.buf
    while (n >= 0x80) {
      buf[this.length++] = (n % 0x80) | 0x80
      n = Math.floor(n / 0x80)
    }
    buf[this.length++] = n
  }

  byte(n: number): void {
    this.reserve(1)
    this.buf[this.length++] = n
  }

  /** A 32-bit unsigned integer, big-endian. */
  u32(n: number): void {
    this.reserve(4)
    const buf = this.buf
    buf[this.length++] = n >>> 24
    buf[this.length++] = (n >>> 16) & 0xff
    buf[this.length++] = (n >>> 8) & 0xff
    buf[this.length++] = n & 0xff
  }

  bytes(b: Uint8Array): void {
    this.reserve(b.length)
    this.buf.set(b, this.length)
    this.length += b.length
  }

  /** Appends `b[start, end)` without its leading zero bytes, their count first (one capacity check: the index writes millions). */
  trimmed(b: Uint8Array, start: number, end: number): void {
    this.reserve(end - start + 1)
    const buf = this.buf
    let i = start
    while (i < end && b[i] === 0) i++
    let at = this.length
    buf[at++] = end - i
    for (; i < end; i++) buf[at++] = b[i]
    this.length = at
  }

  /**
   * Appends `b[start, end)`, an offset-binary integer (the `int` kind: the value + 2^(8n−1)),
   * as two's complement without its sign-extension bytes: one byte (bytes kept × 2 + 1 if
   * negative), then those bytes. A small amount of either sign is a few bytes, not 33.
   */
  signedTrimmed(b: Uint8Array, start: number, end: number): void {
    this.reserve(end - start + 1)
    const buf = this.buf
    const first = b[start] ^ 0x80
    const negative = first >> 7
    const pad = negative ? 0xff : 0
    let i = start
    while (i < end && (i === start ? first : b[i]) === pad) i++
    let at = this.length
    buf[at++] = ((end - i) << 1) | negative
    for (; i < end; i++) buf[at++] = i === start ? first : b[i]
    this.length = at
  }

  /** Appends `b[start, end)`: a loop for short values, where a view to copy from costs more; calldata is copied whole. */
  bytesOf(b: Uint8Array, start: number, end: number): void {
    this.reserve(end - start)
    const buf = this.buf
    let at = this.length
    if (end - start > 64) {
      buf.set(b.subarray(start, end), at)
      at += end - start
    } else for (let i = start; i < end; i++) buf[at++] = b[i]
    this.length = at
  }

  /** What was written so far, as a view of the buffer: valid until the next write (a reused scratch buffer resets `length`). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.length)
  }

  /** What was written: a copy, or the buffer itself when it was sized exactly (nothing more may be written then). */
  finish(): Uint8Array {
    return this.length === this.buf.length ? this.buf : this.buf.slice(0, this.length)
  }
}

/** Reads what a ByteWriter wrote; overruns throw instead of reading past `end`. */
export class ByteReader {
  readonly buf: Uint8Array
  at = 0

  constructor(buf: Uint8Array) {
    this.buf = buf
  }

  uint(): number {
    let n = 0
    let scale = 1
    for (;;) {
      if (this.at >= this.buf.length) throw new IndexFormatError('varint runs past the end')
      const b = this.buf[this.at++]
      n += (b & 0x7f) * scale
      if (b < 0x80) return n
      scale *= 0x80
      if (scale > 2 ** 53) throw new IndexFormatError('varint too long')
    }
  }

  byte(): number {
    if (this.at >= this.buf.length) throw new IndexFormatError('byte past the end')
    return this.buf[this.at++]
  }

  u32(): number {
    const b = this.bytes(4)
    return ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0
  }

  bytes(n: number): Uint8Array {
    if (this.at + n > this.buf.length) throw new IndexFormatError('bytes past the end')
    return this.buf.subarray(this.at, (this.at += n))
  }
}

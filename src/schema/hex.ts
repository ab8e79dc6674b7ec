/** Hex text is the hot path of every text encoder, so these avoid per-byte string concatenation. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

export function bytesToHex(bytes: Uint8Array): string {
  let out = '0x'
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]]
  return out
}

/** Nibble value of an ASCII code, -1 for anything that is not a hex digit. */
const NIBBLE = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i++) {
  NIBBLE['0123456789abcdef'.charCodeAt(i)] = i
  NIBBLE['0123456789ABCDEF'.charCodeAt(i)] = i
}

/** Node's (and workerd's nodejs_compat) Buffer, when there is one: a native hex decoder and UTF-8 writer. */
export const NativeBuffer = (globalThis as { Buffer?: typeof import('node:buffer').Buffer }).Buffer
/**
 * Below this many digits the loop is faster than the native decoder's call (a 32-byte hash:
 * 2.4× faster; the two cross between 256 and 512 digits, measured in Node 22).
 */
const NATIVE_FROM = 512

const invalidHex = (hex: string) => new Error(`invalid hex: ${hex.length > 80 ? hex.slice(0, 80) + '…' : hex}`)

/**
 * A 0x-quantity of at most 13 digits as a number (exact in a double), read from its digits
 * without a BigInt; -1 for anything else (longer, or not plain hex), which callers hand to BigInt.
 */
export function smallQuantity(hex: string): number {
  if (hex.length < 3 || hex.length > 15 || hex.charCodeAt(0) !== 48 || (hex.charCodeAt(1) | 0x20) !== 120) return -1
  let v = 0
  for (let i = 2; i < hex.length; i++) {
    const c = hex.charCodeAt(i)
    const d = c < 128 ? NIBBLE[c] : -1
    if (d < 0) return -1
    v = v * 16 + d
  }
  return v
}

/**
 * A parser of 0x-prefixed hex of even length (case-insensitive) into arrays that `alloc` gives
 * (every byte is written, so they need not be zeroed). The parser takes one argument, so it can
 * be handed to `map`.
 */
export function hexDecoder(alloc: (length: number) => Uint8Array): (hex: string) => Uint8Array {
  return hex => {
    const start = hex.charCodeAt(0) === 48 && (hex.charCodeAt(1) | 0x20) === 120 ? 2 : 0
    if ((hex.length - start) % 2 !== 0) throw new Error(`odd-length hex: ${hex}`)
    const out = alloc((hex.length - start) / 2)
    hexInto(hex, start, out, 0)
    return out
  }
}

/** Parses 0x-prefixed hex of even length (case-insensitive) into an array of its own. */
export const hexToBytes = hexDecoder(n => new Uint8Array(n))

/**
 * The hex digits of `hex` from `start` on as bytes, an odd count read as if led by a 0 (a
 * JSON-RPC quantity's digits), without slicing or padding the text first.
 */
export function digitsToBytes(hex: string, start: number): Uint8Array {
  const out = new Uint8Array((hex.length - start + 1) >> 1)
  digitsInto(hex, start, out, 0)
  return out
}

/** `digitsToBytes` written into `out` from `at` on (the caller sized it): the native decoder for long even runs, as `hexToBytes`. */
export function hexInto(hex: string, start: number, out: Uint8Array, at: number): void {
  const digits = hex.length - start
  if (!NativeBuffer || digits < NATIVE_FROM || digits % 2) return digitsInto(hex, start, out, at)
  // The native decoder stops at the first pair that is not hex (a short count), but reads a
  // character past ASCII by its low byte: its UTF-8 length gives that away (both checks native, unlike a regex).
  const text = start ? hex.slice(start) : hex
  const written = NativeBuffer.from(out.buffer, out.byteOffset + at, digits / 2).write(text, 'hex')
  if (written !== digits / 2 || NativeBuffer.byteLength(text, 'utf8') !== text.length) throw invalidHex(hex)
}

/** `digitsToBytes` written into `out` from `at` on (the caller sized it). */
export function digitsInto(hex: string, start: number, out: Uint8Array, at: number): void {
  let j = start
  if ((hex.length - start) % 2) {
    const a = hex.charCodeAt(j++)
    const lo = a < 128 ? NIBBLE[a] : -1
    if (lo < 0) throw invalidHex(hex)
    out[at++] = lo
  }
  for (; j < hex.length; at++, j += 2) {
    const a = hex.charCodeAt(j)
    const b = hex.charCodeAt(j + 1)
    const hi = a < 128 ? NIBBLE[a] : -1
    const lo = b < 128 ? NIBBLE[b] : -1
    if ((hi | lo) < 0) throw invalidHex(hex)
    out[at] = (hi << 4) | lo
  }
}

/**
 * The bytes' buffer when they are all of it, else a copy of their own: what hyparquet reads, and
 * what a thread can transfer without handing over the bytes around them.
 */
export function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  return (whole ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer
}

/** The parts one after another in a new buffer. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

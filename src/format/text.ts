/**
 * Value text shared by the JSON and CSV encoders: a field writer writes row i of
 * a packed vector (see vector.ts) as the text `KINDS[kind].toText` gives, reading
 * the vector's buffers directly so no value object is ever made. Hex is the hot
 * path of every text response, so it goes through a byte table instead of
 * building strings; u64 values under 2^32 are read as one 32-bit word.
 */
import type { BinaryVector, BoolVector, FixedVector, U64Vector, Vector } from '../columns/vector.ts'
import { bytesToInt, type Kind } from '../schema/kinds.ts'
import type { ByteSink } from './sink.ts'

/**
 * Writes non-null row i of a vector laid out as the field's kind wants (the
 * encoder checked it); the caller adds any quoting.
 */
export type FieldWriter = (sink: ByteSink, v: Vector, i: number) => void

const HEX_DIGITS = '0123456789abcdef'
/** ASCII codes of the two hex digits of each byte, at 2·byte and 2·byte + 1. */
const HEX_PAIRS = new Uint8Array(512)
for (let i = 0; i < 256; i++) {
  HEX_PAIRS[2 * i] = HEX_DIGITS.charCodeAt(i >> 4)
  HEX_PAIRS[2 * i + 1] = HEX_DIGITS.charCodeAt(i & 15)
}
const ZERO = 48
const X = 120

/** `0x` and two digits per byte of `bytes[start, end)`. */
export function writeHex(sink: ByteSink, bytes: Uint8Array, start = 0, end = bytes.length): void {
  sink.reserve(2 + 2 * (end - start))
  sink.buf[sink.pos++] = ZERO
  sink.buf[sink.pos++] = X
  writeHexDigits(sink, bytes, start, end)
}

/** Big-endian `bytes[start, end)` as a minimal JSON-RPC quantity: `0x0`, `0x1a`, never a leading zero digit. */
export function writeQuantity(sink: ByteSink, bytes: Uint8Array, start = 0, end = bytes.length): void {
  let i = start
  while (i < end && bytes[i] === 0) i++
  if (i === end) {
    sink.ascii('0x0')
    return
  }
  if (bytes[i] >= 16) {
    writeHex(sink, bytes, i, end)
    return
  }
  sink.reserve(1 + 2 * (end - i))
  sink.buf[sink.pos++] = ZERO
  sink.buf[sink.pos++] = X
  sink.buf[sink.pos++] = HEX_DIGITS.charCodeAt(bytes[i])
  writeHexDigits(sink, bytes, i + 1, end)
}

/** Two digits per byte of `bytes[start, end)`; the caller has reserved the room. */
function writeHexDigits(sink: ByteSink, bytes: Uint8Array, start: number, end: number): void {
  const b = sink.buf
  let p = sink.pos
  for (let i = start; i < end; i++) {
    const x = bytes[i] << 1
    b[p++] = HEX_PAIRS[x]
    b[p++] = HEX_PAIRS[x + 1]
  }
  sink.pos = p
}

/** A number below 2^32 as `0x` hex without leading zeros. */
function writeU32Hex(sink: ByteSink, n: number): void {
  let digits = 1
  while (n >>> (4 * digits) !== 0 && digits < 8) digits++
  sink.reserve(2 + digits)
  const b = sink.buf
  b[sink.pos] = ZERO
  b[sink.pos + 1] = X
  let p = (sink.pos += 2 + digits)
  for (let d = 0; d < digits; d++) {
    b[--p] = HEX_DIGITS.charCodeAt(n & 15)
    n >>>= 4
  }
}

/** A number below 2^32 in decimal. */
function writeU32Decimal(sink: ByteSink, n: number): void {
  let digits = 1
  for (let t = 10; t <= n; t *= 10) digits++
  sink.reserve(digits)
  const b = sink.buf
  let p = (sink.pos += digits)
  do {
    b[--p] = ZERO + (n % 10)
    n = Math.floor(n / 10)
  } while (n > 0)
}

/** Row i of a u64 vector as `0x` hex without leading zeros; a BigInt only from 2^32 up. */
export function writeU64Hex(sink: ByteSink, v: U64Vector, i: number): void {
  if (v.words[2 * i + 1] === 0) writeU32Hex(sink, v.words[2 * i])
  else sink.ascii('0x' + v.values[i].toString(16))
}

/** Row i of a u64 vector in decimal, exact over the whole range; a BigInt only from 2^32 up. */
export function writeU64Decimal(sink: ByteSink, v: U64Vector, i: number): void {
  if (v.words[2 * i + 1] === 0) writeU32Decimal(sink, v.words[2 * i])
  else sink.ascii(v.values[i].toString())
}

const writeFixedHex = (sink: ByteSink, v: FixedVector, i: number) => writeHex(sink, v.bytes, i * v.width, (i + 1) * v.width)
const writeFixedQuantity = (sink: ByteSink, v: FixedVector, i: number) => writeQuantity(sink, v.bytes, i * v.width, (i + 1) * v.width)
const writeFixedInt = (sink: ByteSink, v: FixedVector, i: number) => sink.ascii(bytesToInt(v.bytes, i * v.width).toString())
const writeBinaryHex = (sink: ByteSink, v: BinaryVector, i: number) => writeHex(sink, v.bytes, v.offsets[i], v.offsets[i + 1])
const writeBool = (sink: ByteSink, v: BoolVector, i: number) => sink.ascii(v.values[i] === 1 ? 'true' : 'false')

/**
 * Bare text writers: kinds whose text never needs quoting or escaping in CSV and is a
 * valid JSON token once wrapped in `"` where the JSON format wants it. `string` and
 * `json` have none: each format escapes them its own way.
 */
export const BARE_WRITERS = {
  u64hex: writeU64Hex as FieldWriter,
  u64int: writeU64Decimal as FieldWriter,
  u256hex: writeFixedQuantity as FieldWriter,
  u256pad: writeFixedHex as FieldWriter,
  int: writeFixedInt as FieldWriter,
  hash: writeFixedHex as FieldWriter,
  address: writeFixedHex as FieldWriter,
  address32: writeFixedHex as FieldWriter,
  bytes: writeBinaryHex as FieldWriter,
  bool: writeBool as FieldWriter,
} satisfies Record<Exclude<Kind, 'string' | 'json'>, FieldWriter>

/** A BOM at the start of a value is text like any other, not a marker to drop. */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true })

/** Row i of a string or json vector as text. */
export function textAt(v: BinaryVector, i: number): string {
  return utf8.decode(v.bytes.subarray(v.offsets[i], v.offsets[i + 1]))
}

/** A table of the ASCII bytes a format writes as they are, from those it must escape or quote. */
export function plainAscii(special: string): Uint8Array {
  const plain = new Uint8Array(128).fill(1)
  for (let k = 0; k < special.length; k++) plain[special.charCodeAt(k)] = 0
  return plain
}

/**
 * Copies row i of a binary vector to `sink.buf` at `at` when every byte is plain
 * ASCII by `plain`, so the common text skips decoding and escaping; returns
 * false otherwise, the copied bytes then to be overwritten. The caller has
 * reserved the room and moves `sink.pos`.
 */
export function copyPlain(sink: ByteSink, v: BinaryVector, i: number, at: number, plain: Uint8Array): boolean {
  const src = v.bytes
  const out = sink.buf
  for (let k = v.offsets[i], end = v.offsets[i + 1]; k < end; k++) {
    const c = src[k]
    if (c >= 128 || plain[c] === 0) return false
    out[at++] = c
  }
  return true
}

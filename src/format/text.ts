/**
 * Value text shared by the JSON and CSV encoders: writes a stored value's text
 * form (what `KINDS[kind].toText` returns) straight into a ByteSink as bytes.
 * Hex is the hot path of every text response, so it goes through a byte table
 * instead of building strings.
 */
import type { Kind, StoredValue } from '../schema/kinds.ts'
import type { ByteSink } from './sink.ts'

/** Writes one non-null value; the caller adds any quoting. */
export type TextWriter = (sink: ByteSink, value: StoredValue) => void

const HEX_DIGITS = '0123456789abcdef'
/** ASCII codes of the two hex digits of each byte, at 2·byte and 2·byte + 1. */
const HEX_PAIRS = new Uint8Array(512)
for (let i = 0; i < 256; i++) {
  HEX_PAIRS[2 * i] = HEX_DIGITS.charCodeAt(i >> 4)
  HEX_PAIRS[2 * i + 1] = HEX_DIGITS.charCodeAt(i & 15)
}
const ZERO = 48
const X = 120
const U32_MAX = 0xffffffffn

/** `0x` and two digits per byte of `bytes` from `start`. */
export function writeHex(sink: ByteSink, bytes: Uint8Array, start = 0): void {
  sink.reserve(2 + 2 * (bytes.length - start))
  sink.buf[sink.pos++] = ZERO
  sink.buf[sink.pos++] = X
  writeHexDigits(sink, bytes, start)
}

/** A big-endian number as a minimal JSON-RPC quantity: `0x0`, `0x1a`, never a leading zero digit. */
export function writeQuantity(sink: ByteSink, bytes: Uint8Array): void {
  let i = 0
  while (i < bytes.length && bytes[i] === 0) i++
  if (i === bytes.length) {
    sink.ascii('0x0')
    return
  }
  if (bytes[i] >= 16) {
    writeHex(sink, bytes, i)
    return
  }
  sink.reserve(1 + 2 * (bytes.length - i))
  sink.buf[sink.pos++] = ZERO
  sink.buf[sink.pos++] = X
  sink.buf[sink.pos++] = HEX_DIGITS.charCodeAt(bytes[i])
  writeHexDigits(sink, bytes, i + 1)
}

/** Two digits per byte from `start`; the caller has reserved the room. */
function writeHexDigits(sink: ByteSink, bytes: Uint8Array, start: number): void {
  const b = sink.buf
  let p = sink.pos
  for (let i = start; i < bytes.length; i++) {
    const x = bytes[i] << 1
    b[p++] = HEX_PAIRS[x]
    b[p++] = HEX_PAIRS[x + 1]
  }
  sink.pos = p
}

/** A u64 as `0x` hex without leading zeros. */
export function writeU64Hex(sink: ByteSink, v: bigint): void {
  if (v > U32_MAX) {
    sink.ascii('0x' + v.toString(16))
    return
  }
  let n = Number(v)
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

/** A u64 in decimal, exact over the whole range. */
export function writeU64Decimal(sink: ByteSink, v: bigint): void {
  if (v > U32_MAX) {
    sink.ascii(v.toString())
    return
  }
  let n = Number(v)
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

const writeBool: TextWriter = (sink, v) => sink.ascii(v ? 'true' : 'false')

/**
 * Bare text writers: kinds whose text never needs quoting or escaping in CSV and
 * is a valid JSON token once wrapped in `"` when `quotedInJson` says so.
 * `string` and `json` are missing: each format escapes them its own way.
 */
export const BARE_TEXT: Partial<Record<Kind, { write: TextWriter; quotedInJson: boolean }>> = {
  u64hex: { write: (s, v) => writeU64Hex(s, v as bigint), quotedInJson: true },
  u64int: { write: (s, v) => writeU64Decimal(s, v as bigint), quotedInJson: false },
  u256hex: { write: (s, v) => writeQuantity(s, v as Uint8Array), quotedInJson: true },
  u256pad: { write: (s, v) => writeHex(s, v as Uint8Array), quotedInJson: true },
  hash: { write: (s, v) => writeHex(s, v as Uint8Array), quotedInJson: true },
  address: { write: (s, v) => writeHex(s, v as Uint8Array), quotedInJson: true },
  address32: { write: (s, v) => writeHex(s, v as Uint8Array), quotedInJson: true },
  bytes: { write: (s, v) => writeHex(s, v as Uint8Array), quotedInJson: true },
  bool: { write: writeBool, quotedInJson: false },
}

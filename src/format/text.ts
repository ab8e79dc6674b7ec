/**
 * Value text shared by the JSON and CSV encoders: a placed writer writes row i of
 * a packed vector (see vector.ts) as the text `KINDS[kind].toText` gives (or its
 * JSON token), reading the vector's buffers directly so no value object is ever
 * made, at a position of a buffer its record reserved (record.ts). Hex is most of
 * every text response, so two bytes go out as four digits in one 32-bit store from
 * a table, and hashes and addresses are read a 32-bit word at a time; u64 values
 * under 2^32 are read as one 32-bit word.
 */
import type { BinaryVector, BoolVector, FixedVector, U64Vector, Vector } from '../columns/vector.ts'
import { bytesToInt, KINDS, type Kind } from '../schema/kinds.ts'
import type { ByteSink } from './sink.ts'

/**
 * Writes non-null row i of a vector laid out as the field's kind wants (the
 * encoder checked it) at `out[p]`, and returns where its text ends. The caller
 * has reserved the value's `room` (see PlacedValue); writers store whole 32-bit
 * words through `view` (the same memory as `out`), never past that room.
 */
export type PlacedWriter = (out: Uint8Array, view: DataView, p: number, v: Vector, i: number) => number

/** A kind's writer and the room its text takes at most: `room` bytes, plus two per byte of a binary value. */
export interface PlacedValue {
  write: PlacedWriter
  room: number
  binary: boolean
  /** The same text as hex-kernel.ts writes it a column at a time: `0x` and digits of a fixed (16 bytes or more) or binary vector's value, in JSON quotes where `quoted`. */
  hex?: { layout: 'fixed' | 'binary'; quoted: boolean }
}

const HEX_DIGITS = '0123456789abcdef'
/**
 * The four ASCII hex digits of two bytes `a, b`, at index `a | b << 8` (the bytes as
 * a little-endian 16-bit word) and packed little-endian, so one 32-bit store writes
 * them in order: two input bytes a store.
 */
const HEX_QUADS = new Uint32Array(65536)
for (let i = 0; i < 65536; i++) {
  const digit = (shift: number) => HEX_DIGITS.charCodeAt((i >> shift) & 15)
  HEX_QUADS[i] = (digit(4) | (digit(0) << 8) | (digit(12) << 16) | (digit(8) << 24)) >>> 0
}
const ZERO = 48
const X = 120
const QUOTE = 34
/** `"0x` and one byte more, which the value's first digit (or closing quote) replaces. */
const QUOTE_0X = QUOTE | (ZERO << 8) | (X << 16)
const TRUE = 0x65757274
const FALSE = 0x736c6166

/** Two digits per byte of `bytes[start, end)` at `p`. */
function putHexDigits(out: Uint8Array, view: DataView, p: number, bytes: Uint8Array, start: number, end: number): number {
  let i = start
  for (; i + 1 < end; i += 2, p += 4) view.setUint32(p, HEX_QUADS[bytes[i] | (bytes[i + 1] << 8)], true)
  if (i < end) {
    const q = HEX_QUADS[bytes[i]]
    out[p] = q
    out[p + 1] = q >>> 8
    p += 2
  }
  return p
}

/** Two digits per byte of `words[start, end)` at `p`: four bytes a load, half the loads of putHexDigits. */
function putWordDigits(view: DataView, p: number, words: Uint32Array, start: number, end: number): number {
  for (let k = start; k < end; k++, p += 8) {
    const w = words[k]
    view.setUint32(p, HEX_QUADS[w & 0xffff], true)
    view.setUint32(p + 4, HEX_QUADS[w >>> 16], true)
  }
  return p
}

/** Row i of a fixed vector's hex digits, from its words where it has them. */
function putFixedDigits(out: Uint8Array, view: DataView, p: number, v: FixedVector, i: number): number {
  const w = v.width
  if (v.words !== null) return putWordDigits(view, p, v.words, (i * w) >> 2, ((i + 1) * w) >> 2)
  return putHexDigits(out, view, p, v.bytes, i * w, (i + 1) * w)
}

/** `0x` and two digits per byte of `bytes[start, end)`. */
export function putHex(out: Uint8Array, view: DataView, p: number, bytes: Uint8Array, start: number, end: number): number {
  out[p] = ZERO
  out[p + 1] = X
  return putHexDigits(out, view, p + 2, bytes, start, end)
}

/** `"0x…"`: putHex in JSON quotes. */
function putQuotedHex(out: Uint8Array, view: DataView, p: number, bytes: Uint8Array, start: number, end: number): number {
  view.setUint32(p, QUOTE_0X, true)
  p = putHexDigits(out, view, p + 3, bytes, start, end)
  out[p] = QUOTE
  return p + 1
}

/** Big-endian `bytes[start, end)` as a minimal JSON-RPC quantity: `0x0`, `0x1a`, never a leading zero digit. */
export function putQuantity(out: Uint8Array, view: DataView, p: number, bytes: Uint8Array, start: number, end: number): number {
  let i = start
  while (i < end && bytes[i] === 0) i++
  out[p] = ZERO
  out[p + 1] = X
  if (i === end) {
    out[p + 2] = ZERO
    return p + 3
  }
  if (bytes[i] >= 16) return putHexDigits(out, view, p + 2, bytes, i, end)
  out[p + 2] = HEX_DIGITS.charCodeAt(bytes[i])
  return putHexDigits(out, view, p + 3, bytes, i + 1, end)
}

/** ASCII text (a BigInt's digits). */
function putAscii(out: Uint8Array, p: number, s: string): number {
  for (let k = 0; k < s.length; k++) out[p++] = s.charCodeAt(k)
  return p
}

/** A number below 2^32 as `0x` hex without leading zeros. */
function putU32Hex(out: Uint8Array, p: number, n: number): number {
  let digits = 1
  while (n >>> (4 * digits) !== 0 && digits < 8) digits++
  out[p] = ZERO
  out[p + 1] = X
  const end = p + 2 + digits
  for (let q = end; q > p + 2; n >>>= 4) out[--q] = HEX_DIGITS.charCodeAt(n & 15)
  return end
}

/** A number below 2^32 in decimal. */
function putU32Decimal(out: Uint8Array, p: number, n: number): number {
  let digits = 1
  for (let t = 10; t <= n; t *= 10) digits++
  const end = p + digits
  let q = end
  do {
    out[--q] = ZERO + (n % 10)
    n = Math.floor(n / 10)
  } while (n > 0)
  return end
}

/** Row i of a u64 vector as `0x` hex without leading zeros; a BigInt only from 2^32 up. */
export function putU64Hex(out: Uint8Array, _view: DataView, p: number, v: U64Vector, i: number): number {
  return v.words[2 * i + 1] === 0 ? putU32Hex(out, p, v.words[2 * i]) : putAscii(out, p, '0x' + v.values[i].toString(16))
}

/** Row i of a u64 vector in decimal, exact over the whole range; a BigInt only from 2^32 up. */
export function putU64Decimal(out: Uint8Array, _view: DataView, p: number, v: U64Vector, i: number): number {
  return v.words[2 * i + 1] === 0 ? putU32Decimal(out, p, v.words[2 * i]) : putAscii(out, p, v.values[i].toString())
}

function putFixedHex(out: Uint8Array, view: DataView, p: number, v: FixedVector, i: number): number {
  out[p] = ZERO
  out[p + 1] = X
  return putFixedDigits(out, view, p + 2, v, i)
}
const putFixedQuantity = (out: Uint8Array, view: DataView, p: number, v: FixedVector, i: number) =>
  putQuantity(out, view, p, v.bytes, i * v.width, (i + 1) * v.width)
const putFixedInt = (out: Uint8Array, _view: DataView, p: number, v: FixedVector, i: number) =>
  putAscii(out, p, bytesToInt(v.bytes, i * v.width).toString())
const putBinaryHex = (out: Uint8Array, view: DataView, p: number, v: BinaryVector, i: number) =>
  putHex(out, view, p, v.bytes, v.offsets[i], v.offsets[i + 1])
function putBool(out: Uint8Array, view: DataView, p: number, v: BoolVector, i: number): number {
  if (v.values[i] === 1) {
    view.setUint32(p, TRUE, true)
    return p + 4
  }
  view.setUint32(p, FALSE, true)
  out[p + 4] = 101
  return p + 5
}

const placed = (write: PlacedWriter, room: number, binary = false, hex?: PlacedValue['hex']): PlacedValue =>
  hex === undefined ? { write, room, binary } : { write, room, binary, hex }
const FIXED_HEX = { layout: 'fixed', quoted: false } as const
const BINARY_HEX = { layout: 'binary', quoted: false } as const
/** Hex digits of a fixed width: `0x` and two a byte. */
const hexRoom = (kind: Kind) => 2 + 2 * KINDS[kind].width!

/**
 * Bare text writers: kinds whose text never needs quoting or escaping in CSV and is a
 * valid JSON token once wrapped in `"` where the JSON format wants it. `string` and
 * `json` have none: each format escapes them its own way.
 */
export const BARE_VALUES = {
  u64hex: placed(putU64Hex as PlacedWriter, 18),
  u64int: placed(putU64Decimal as PlacedWriter, 20),
  u256hex: placed(putFixedQuantity as PlacedWriter, hexRoom('u256hex')),
  u256pad: placed(putFixedHex as PlacedWriter, hexRoom('u256pad'), false, FIXED_HEX),
  // Two's complement of up to 33 bytes: a sign and at most 80 digits.
  int: placed(putFixedInt as PlacedWriter, 81),
  hash: placed(putFixedHex as PlacedWriter, hexRoom('hash'), false, FIXED_HEX),
  address: placed(putFixedHex as PlacedWriter, hexRoom('address'), false, FIXED_HEX),
  address32: placed(putFixedHex as PlacedWriter, hexRoom('address32'), false, FIXED_HEX),
  bytes: placed(putBinaryHex as PlacedWriter, 2, true, BINARY_HEX),
  bool: placed(putBool as PlacedWriter, 5),
} satisfies Record<Exclude<Kind, 'string' | 'json'>, PlacedValue>

/** A bare value in JSON quotes. */
function quoted(value: PlacedValue): PlacedValue {
  const write = value.write
  return placed(
    (out, view, p, v, i) => {
      out[p] = QUOTE
      p = write(out, view, p + 1, v, i)
      out[p] = QUOTE
      return p + 1
    },
    value.room + 2,
    value.binary,
  )
}

/** Hex kinds in JSON quotes, written without a wrapper: they are most of a text response. */
const quotedFixedHex = (kind: Kind) =>
  placed(
    ((out, view, p, v: FixedVector, i) => {
      view.setUint32(p, QUOTE_0X, true)
      p = putFixedDigits(out, view, p + 3, v, i)
      out[p] = QUOTE
      return p + 1
    }) as PlacedWriter,
    hexRoom(kind) + 2,
    false,
    { layout: 'fixed', quoted: true },
  )

/** Every bare kind's JSON token: quoted where `KINDS[kind].toJson` gives a string. */
export const JSON_VALUES = {
  u64hex: quoted(BARE_VALUES.u64hex),
  u64int: BARE_VALUES.u64int,
  u256hex: quoted(BARE_VALUES.u256hex),
  u256pad: quotedFixedHex('u256pad'),
  int: quoted(BARE_VALUES.int),
  hash: quotedFixedHex('hash'),
  address: quotedFixedHex('address'),
  address32: quotedFixedHex('address32'),
  bytes: placed(
    ((out, view, p, v: BinaryVector, i) => putQuotedHex(out, view, p, v.bytes, v.offsets[i], v.offsets[i + 1])) as PlacedWriter,
    4,
    true,
    { layout: 'binary', quoted: true },
  ),
  bool: BARE_VALUES.bool,
} satisfies Record<Exclude<Kind, 'string' | 'json'>, PlacedValue>

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

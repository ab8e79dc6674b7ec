/**
 * The closed vocabulary of column kinds. A field's kind decides how it is stored
 * in Parquet, how it is written as JSON and CSV text, its Arrow type, which filter
 * operators it takes and how a filter value is parsed. Nothing else in the code
 * switches on field names.
 *
 * In-memory values (what the ingester writes and the scanner reads back):
 * u64 kinds → bigint; u256, int, hash, address, bytes → Uint8Array; bool → boolean;
 * string and json → string (json holds JSON text).
 *
 * `int` holds any int256, uint256 or difference of two uint256 (a v2 swap's
 * amountIn − amountOut) exactly: 33 bytes, big-endian, of value + 2^263 (the sign bit
 * flipped), so unsigned byte order is numeric order and the byte comparisons of filters
 * and statistics stay correct. It is written as decimal text: signed quantities cannot
 * follow the spec's unsigned 0x-hex convention.
 */
import { bytesToHex, digitsInto, hexToBytes } from './hex.ts'

export type Kind =
  | 'u64hex' // INT64 (UINT_64); JSON "0x1a": block numbers and small quantities
  | 'u64int' // INT64 (UINT_64); JSON number: indexes, timestamps, types
  | 'u256hex' // 32-byte big-endian; JSON "0x1a": wei quantities that can pass 2^64
  | 'u256pad' // 32-byte big-endian; JSON "0x" + 64 digits (the spec's padded `value`)
  | 'int' // signed integer in [-2^263, 2^263) as 33 offset-binary bytes; JSON "-12" (decimal text): DEX amounts and ticks
  | 'hash' // 32 bytes
  | 'address' // 20 bytes
  | 'address32' // 32 bytes (Move-VM account addresses)
  | 'bytes' // variable-length bytes; JSON "0x…"
  | 'bool'
  | 'string'
  | 'json' // JSON text; written into JSON output as a nested value

export type Operator = 'eq' | 'in' | 'gte' | 'lte'

export type StoredValue = bigint | Uint8Array | boolean | string

/** Why a filter value was refused: the caller turns it into a 400 naming the parameter. */
export class InvalidValueError extends Error {}

export interface ParquetColumnType {
  type: 'INT64' | 'FIXED_LEN_BYTE_ARRAY' | 'BYTE_ARRAY' | 'BOOLEAN'
  typeLength?: number
  convertedType?: 'UINT_64' | 'UTF8' | 'JSON'
}

export interface KindSpec {
  /** Parquet physical type; the schema is derived from it. */
  parquet: ParquetColumnType
  /** Fixed byte width of binary kinds, used to validate and to size Arrow FixedSizeBinary. */
  width?: number
  /** Operators a filter may use on a field of this kind. */
  operators: readonly Operator[]
  /**
   * What row groups can be pruned by: equality by statistics and bloom filters (hyparquet
   * compares INT64, booleans and fixed-length bytes correctly and hashes values as written);
   * order by statistics for INT64 (hyparquet) and fixed-length bytes, whose unsigned byte
   * order is their value order (the scanner compares their exact min/max itself, since
   * hyparquet takes binary bounds as text). Not variable-length bytes or strings (their
   * statistics are decoded as text), nor JSON (never equal as text).
   */
  prunes: { equality: boolean; order: boolean }
  /** Parses a filter value as sent in a query string; throws InvalidValueError. */
  parse(text: string): StoredValue
  /** The value as it appears in JSON output. */
  toJson(value: StoredValue): unknown
  /** The value as CSV cell text (before CSV quoting). */
  toText(value: StoredValue): string
}

const ORDERED: readonly Operator[] = ['eq', 'in', 'gte', 'lte']
const EQUALITY: readonly Operator[] = ['eq', 'in']
const U64_MAX = (1n << 64n) - 1n
const U256_MAX = (1n << 256n) - 1n

/** Accepts decimal or 0x-hex; the spec's numbers arrive both ways. */
export function parseUnsigned(text: string, max: bigint): bigint {
  // No trimming: `+5` reaches here as ' 5' (a query string's `+` is a space), and is refused.
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(text)) throw new InvalidValueError(`expected a decimal or 0x-hex number, got "${text}"`)
  const n = BigInt(text)
  if (n > max) throw new InvalidValueError(`number out of range: ${text}`)
  return n
}

export function u256ToBytes(n: bigint): Uint8Array {
  const out = new Uint8Array(32)
  if (n > 0n) bigintInto(n, out)
  return out
}

/**
 * The low bytes of a non-negative `n`, big-endian, filling `out` from its end (what does not
 * fit is dropped): one native toString(16) instead of a BigInt shift and mask per byte.
 */
function bigintInto(n: bigint, out: Uint8Array): void {
  const hex = n.toString(16)
  const start = Math.max(0, hex.length - 2 * out.length)
  digitsInto(hex, start, out, out.length - ((hex.length - start + 1) >> 1))
}

export function bytesToU256(bytes: Uint8Array): bigint {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  return n
}

/** Minimal 0x-hex of a big-endian unsigned number, as JSON-RPC quantities are written. */
function quantityHex(bytes: Uint8Array): string {
  let i = 0
  while (i < bytes.length - 1 && bytes[i] === 0) i++
  const hex = bytesToHex(bytes.subarray(i)).slice(2)
  return '0x' + (hex.replace(/^0/, '') || '0')
}

const INT_WIDTH = 33
const INT_OFFSET = 1n << 263n

/** The stored bytes of a signed integer; throws outside [-2^263, 2^263). */
export function intToBytes(n: bigint): Uint8Array {
  const u = n + INT_OFFSET
  if (u < 0n || u >> 264n !== 0n) throw new RangeError(`integer out of the int kind's range: ${n}`)
  const out = new Uint8Array(INT_WIDTH)
  if (u > 0n) bigintInto(u, out)
  return out
}

/** The signed integer of stored `int` bytes (33 bytes, or a 33-byte window of a vector). */
export function bytesToInt(bytes: Uint8Array, start = 0): bigint {
  let n = 0n
  for (let i = start; i < start + INT_WIDTH; i++) n = (n << 8n) | BigInt(bytes[i])
  return n - INT_OFFSET
}

/** A decimal integer with an optional minus sign (or 0x-hex), as a filter on an `int` field. */
function parseSigned(text: string): Uint8Array {
  if (!/^-?(0x[0-9a-fA-F]+|[0-9]+)$/.test(text))
    throw new InvalidValueError(`expected a decimal integer (optionally negative), got "${text}"`)
  const negative = text.startsWith('-')
  const n = BigInt(negative ? text.slice(1) : text)
  try {
    return intToBytes(negative ? -n : n)
  } catch {
    throw new InvalidValueError(`number out of range: ${text}`)
  }
}

function fixedBytes(width: number, what: string) {
  return (text: string): Uint8Array => {
    if (!/^0x[0-9a-fA-F]*$/.test(text) || text.length !== 2 + 2 * width) {
      throw new InvalidValueError(`expected a 0x-prefixed ${what} of ${width} bytes, got "${text}"`)
    }
    return hexToBytes(text)
  }
}

const hexOf = (v: StoredValue) => bytesToHex(v as Uint8Array)
const u64Hex = (v: StoredValue) => '0x' + (v as bigint).toString(16)

export const KINDS: Record<Kind, KindSpec> = {
  u64hex: {
    parquet: { type: 'INT64', convertedType: 'UINT_64' },
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: t => parseUnsigned(t, U64_MAX),
    toJson: u64Hex,
    toText: u64Hex,
  },
  u64int: {
    parquet: { type: 'INT64', convertedType: 'UINT_64' },
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: t => parseUnsigned(t, U64_MAX),
    toJson: v => Number(v as bigint),
    toText: v => (v as bigint).toString(),
  },
  u256hex: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32 },
    width: 32,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: t => u256ToBytes(parseUnsigned(t, U256_MAX)),
    toJson: v => quantityHex(v as Uint8Array),
    toText: v => quantityHex(v as Uint8Array),
  },
  u256pad: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32 },
    width: 32,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: t => u256ToBytes(parseUnsigned(t, U256_MAX)),
    toJson: hexOf,
    toText: hexOf,
  },
  int: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: INT_WIDTH },
    width: INT_WIDTH,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: parseSigned,
    toJson: v => bytesToInt(v as Uint8Array).toString(),
    toText: v => bytesToInt(v as Uint8Array).toString(),
  },
  hash: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32 },
    width: 32,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: fixedBytes(32, 'hash'),
    toJson: hexOf,
    toText: hexOf,
  },
  address: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 20 },
    width: 20,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: fixedBytes(20, 'address'),
    toJson: hexOf,
    toText: hexOf,
  },
  address32: {
    parquet: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32 },
    width: 32,
    operators: ORDERED,
    prunes: { equality: true, order: true },
    parse: parseMoveAddress,
    toJson: hexOf,
    toText: hexOf,
  },
  bytes: {
    parquet: { type: 'BYTE_ARRAY' },
    operators: ORDERED,
    prunes: { equality: true, order: false },
    parse: t => {
      if (!/^0x([0-9a-fA-F]{2})*$/.test(t)) throw new InvalidValueError(`expected 0x-prefixed hex bytes, got "${t}"`)
      return hexToBytes(t)
    },
    toJson: hexOf,
    toText: hexOf,
  },
  bool: {
    parquet: { type: 'BOOLEAN' },
    operators: EQUALITY,
    prunes: { equality: true, order: false },
    parse: t => {
      const v = t.toLowerCase()
      if (v === 'true' || v === '1') return true
      if (v === 'false' || v === '0') return false
      throw new InvalidValueError(`expected true or false, got "${t}"`)
    },
    toJson: v => v,
    toText: v => String(v),
  },
  string: {
    parquet: { type: 'BYTE_ARRAY', convertedType: 'UTF8' },
    operators: ORDERED,
    prunes: { equality: true, order: false },
    parse: t => t,
    toJson: v => v,
    toText: v => v as string,
  },
  json: {
    parquet: { type: 'BYTE_ARRAY', convertedType: 'UTF8' },
    operators: [],
    prunes: { equality: false, order: false },
    parse: () => {
      throw new InvalidValueError('JSON fields cannot be filtered')
    },
    toJson: v => JSON.parse(v as string),
    toText: v => v as string,
  },
}

/** Move addresses are written short (`0x1`) as often as long; both name the same 32 bytes. */
function parseMoveAddress(text: string): Uint8Array {
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(text)) throw new InvalidValueError(`expected a 0x-prefixed account address, got "${text}"`)
  return hexToBytes('0x' + text.slice(2).padStart(64, '0'))
}

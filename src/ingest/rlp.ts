/**
 * Recursive-length-prefix encoding, the serialisation every Ethereum hash is taken
 * over (headers, transactions, receipts, trie nodes). Bytes in, bytes out; `rlpRaw`
 * embeds an already-encoded item, which trie nodes need for short children.
 */
import { concatBytes, hexToBytes } from '../schema/hex.ts'

/** An already-encoded item, spliced in as is. */
export interface RlpRaw {
  raw: Uint8Array
}

export type RlpItem = Uint8Array | RlpRaw | readonly RlpItem[]

export const rlpRaw = (raw: Uint8Array): RlpRaw => ({ raw })

/** Encodes an item: byte strings and nested lists. */
export function rlpEncode(item: RlpItem): Uint8Array {
  if (item instanceof Uint8Array) return encodeString(item)
  if ('raw' in item) return item.raw
  return encodeList((item as readonly RlpItem[]).map(rlpEncode))
}

function encodeString(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 1 && bytes[0] < 0x80) return bytes
  return concatBytes([lengthPrefix(bytes.length, 0x80), bytes])
}

function encodeList(items: Uint8Array[]): Uint8Array {
  const length = items.reduce((n, b) => n + b.length, 0)
  return concatBytes([lengthPrefix(length, 0xc0), ...items])
}

function lengthPrefix(length: number, offset: number): Uint8Array {
  if (length < 56) return Uint8Array.of(offset + length)
  const len = uintBytes(BigInt(length))
  return Uint8Array.of(offset + 55 + len.length, ...len)
}

/** Minimal big-endian bytes of an unsigned integer (zero is the empty string). */
export function uintBytes(n: bigint): Uint8Array {
  if (n < 0n) throw new Error(`negative integer: ${n}`)
  const out: number[] = []
  for (; n > 0n; n >>= 8n) out.unshift(Number(n & 0xffn))
  return Uint8Array.from(out)
}

/** A JSON-RPC quantity ("0x1a") as the minimal bytes RLP expects. */
export const quantityBytes = (hex: string): Uint8Array => uintBytes(BigInt(hex))

/** JSON-RPC data ("0x…" of even length) as bytes, leading zeros kept. */
export const dataBytes = (hex: string): Uint8Array => hexToBytes(hex)

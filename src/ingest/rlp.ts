/**
 * Recursive-length-prefix encoding, the serialisation every Ethereum hash is taken
 * over (headers, transactions, receipts, trie nodes). Bytes in, bytes out; `rlpRaw`
 * embeds an already-encoded item, which trie nodes need for short children, and
 * `hexData` / `hexQuantity` JSON-RPC hex text, decoded straight into the output.
 *
 * Two passes over the item: the first measures every list's payload, the second writes
 * the whole encoding into one buffer. Concatenating per level would copy a byte once
 * per list it is nested in, and verification encodes about 300 KB per mainnet block.
 */
import { digitsToBytes, hexInto } from '../schema/hex.ts'

/** An already-encoded item, spliced in as is. */
export interface RlpRaw {
  raw: Uint8Array
}

/**
 * The bytes hex text spells (`hexData`, `hexQuantity`), decoded straight into the encoding:
 * verification encodes every field of a block once, so a Uint8Array per field would be
 * garbage the moment it was copied. `first` is the value of a one-byte string (RLP writes
 * one below 0x80 as itself).
 */
export interface RlpHex {
  hex: string
  start: number
  length: number
  first: number
}

export type RlpItem = Uint8Array | RlpRaw | RlpHex | readonly RlpItem[]

export const rlpRaw = (raw: Uint8Array): RlpRaw => ({ raw })

/** Encodes an item: byte strings and nested lists; with `type`, that byte first (a typed transaction's or receipt's envelope). */
export function rlpEncode(item: RlpItem, type?: number): Uint8Array {
  const payloads: number[] = []
  const lead = type === undefined ? 0 : 1
  const out = new Uint8Array(lead + measure(item, payloads))
  if (lead) out[0] = type!
  const cursor = { at: lead, list: 0 }
  write(item, out, cursor, payloads)
  return out
}

const bytesOfLength = (n: number): number => (n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x1000000 ? 3 : 4)
const prefixLength = (n: number): number => (n < 56 ? 1 : 1 + bytesOfLength(n))

/** Encoded length of `item`; pushes each list's payload length in pre-order. */
function measure(item: RlpItem, payloads: number[]): number {
  if (item instanceof Uint8Array) return item.length === 1 && item[0] < 0x80 ? 1 : prefixLength(item.length) + item.length
  if (!Array.isArray(item)) {
    if ('raw' in item) return (item as RlpRaw).raw.length
    const { length, first } = item as RlpHex
    return length === 1 && first < 0x80 ? 1 : prefixLength(length) + length
  }
  const slot = payloads.length
  payloads.push(0)
  let payload = 0
  for (const child of item as readonly RlpItem[]) payload += measure(child, payloads)
  payloads[slot] = payload
  return prefixLength(payload) + payload
}

function write(item: RlpItem, out: Uint8Array, cursor: { at: number; list: number }, payloads: number[]): void {
  if (item instanceof Uint8Array) {
    if (item.length !== 1 || item[0] >= 0x80) writePrefix(item.length, 0x80, out, cursor)
    out.set(item, cursor.at)
    cursor.at += item.length
  } else if (!Array.isArray(item)) {
    if ('raw' in item) {
      const { raw } = item as RlpRaw
      out.set(raw, cursor.at)
      cursor.at += raw.length
    } else {
      const { hex, start, length, first } = item as RlpHex
      if (length !== 1 || first >= 0x80) writePrefix(length, 0x80, out, cursor)
      hexInto(hex, start, out, cursor.at)
      cursor.at += length
    }
  } else {
    writePrefix(payloads[cursor.list++], 0xc0, out, cursor)
    for (const child of item as readonly RlpItem[]) write(child, out, cursor, payloads)
  }
}

function writePrefix(length: number, offset: number, out: Uint8Array, cursor: { at: number }): void {
  if (length < 56) {
    out[cursor.at++] = offset + length
    return
  }
  const n = bytesOfLength(length)
  out[cursor.at++] = offset + 55 + n
  for (let i = n - 1; i >= 0; i--) out[cursor.at++] = (length >>> (8 * i)) & 0xff
}

/** Minimal big-endian bytes of an unsigned integer (zero is the empty string). */
export function uintBytes(n: bigint): Uint8Array {
  if (n < 0n) throw new Error(`negative integer: ${n}`)
  const out: number[] = []
  for (; n > 0n; n >>= 8n) out.unshift(Number(n & 0xffn))
  return Uint8Array.from(out)
}

const prefixed = (hex: string) => hex.length >= 2 && hex.charCodeAt(0) === 48 && (hex.charCodeAt(1) | 0x20) === 120

function hexItem(hex: string, start: number): RlpHex {
  const length = (hex.length - start + 1) >> 1
  return { hex, start, length, first: length === 1 ? digitsToBytes(hex, start)[0] : 0 }
}

/** A JSON-RPC quantity ("0x1a") as the minimal bytes RLP expects, read straight from the hex digits. */
export function hexQuantity(hex: string): RlpItem {
  if (hex.length < 3 || !prefixed(hex)) return uintBytes(BigInt(hex))
  let start = 2
  while (start < hex.length && hex.charCodeAt(start) === 48) start++
  return hexItem(hex, start)
}

/** JSON-RPC data ("0x…" of even length) as its bytes, leading zeros kept. */
export function hexData(hex: string): RlpHex {
  const start = prefixed(hex) ? 2 : 0
  if ((hex.length - start) % 2 !== 0) throw new Error(`odd-length hex: ${hex}`)
  return hexItem(hex, start)
}

/**
 * Recursive-length-prefix encoding, the serialisation every Ethereum hash is taken
 * over (headers, transactions, receipts, trie nodes). Bytes in, bytes out, and
 * `hexData` / `hexQuantity` JSON-RPC hex text, decoded straight into the output.
 *
 * Two passes: the first measures every list's payload, the second writes the whole
 * encoding into one buffer. Concatenating per level would copy a byte once per list it
 * is nested in, and verification encodes about 300 KB per mainnet block. `rlpEncode`
 * takes an item tree (a header); `RlpWriter` takes a function that writes the items
 * (transactions, receipts, trie nodes: thousands a block, so no tree and no buffer each).
 */
import { hexInto } from '../schema/hex.ts'

/**
 * The bytes hex text spells (`hexData`, `hexQuantity`), decoded straight into the encoding:
 * verification encodes every field of a block once, so a Uint8Array per field would be
 * garbage the moment it was copied. `single`: one byte below 0x80, which RLP writes as itself.
 */
export interface RlpHex {
  hex: string
  start: number
  length: number
  single: boolean
}

export type RlpItem = Uint8Array | RlpHex | readonly RlpItem[]

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
    const { length, single } = item as RlpHex
    return single ? 1 : prefixLength(length) + length
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
    if (item.length !== 1 || item[0] >= 0x80) cursor.at = writePrefix(item.length, 0x80, out, cursor.at)
    out.set(item, cursor.at)
    cursor.at += item.length
  } else if (!Array.isArray(item)) {
    const { hex, start, length, single } = item as RlpHex
    if (!single) cursor.at = writePrefix(length, 0x80, out, cursor.at)
    hexInto(hex, start, out, cursor.at)
    cursor.at += length
  } else {
    cursor.at = writePrefix(payloads[cursor.list++], 0xc0, out, cursor.at)
    for (const child of item as readonly RlpItem[]) write(child, out, cursor, payloads)
  }
}

/** Writes the prefix of a string (`offset` 0x80) or list (0xc0) of `length` bytes at `at`; returns where it ends. */
function writePrefix(length: number, offset: number, out: Uint8Array, at: number): number {
  if (length < 56) {
    out[at++] = offset + length
    return at
  }
  const n = bytesOfLength(length)
  out[at++] = offset + 55 + n
  for (let i = n - 1; i >= 0; i--) out[at++] = (length >>> (8 * i)) & 0xff
  return at
}

/** The writer's output between encodings. */
const NOTHING = new Uint8Array(0)

/**
 * RLP written by a function rather than from an item: `encode` calls it twice, first to measure
 * (each list's payload, in pre-order), then to write. A transaction or receipt so encoded makes
 * no object a field or list (an item tree made ~15 a transaction, an eighth of the ingester's
 * allocations); the function must write the same items both times. Encodings are cut from one
 * arena the writer reuses after `reset`, where each had a backing store of its own to allocate,
 * zero and collect: whoever resets must hold no encoding given before.
 */
export class RlpWriter {
  private arena = new Uint8Array(1 << 16)
  private used = 0
  private measuring = true
  /** Measuring: the length so far; writing: the cursor. */
  private at = 0
  private out: Uint8Array = NOTHING
  private readonly payloads: number[] = []
  private slot = 0
  /** Measuring: the lists begun so far (their payloads' count). */
  private lists = 0
  /** Measuring: the payload slot and start of each open list, `depth` entries (arrays kept at their size: no allocation an encoding). */
  private readonly open: number[] = []
  private depth = 0

  /** The encoding of what `write` writes; with `type`, that byte first (a typed envelope). */
  encode(write: (w: RlpWriter) => void, type?: number): Uint8Array {
    this.measuring = true
    this.at = 0
    this.lists = 0
    this.depth = 0
    write(this)
    if (this.depth) throw new Error('an RLP list was begun and not ended')
    const lead = type === undefined ? 0 : 1
    const out = (this.out = this.take(lead + this.at))
    if (lead) out[0] = type!
    this.measuring = false
    this.at = lead
    this.slot = 0
    write(this)
    this.out = NOTHING
    return out
  }

  /** Starts the arena over: every encoding given so far is spent. */
  reset(): void {
    this.used = 0
  }

  /** `n` bytes of the arena, a bigger one when it is full (what was cut from the old one stays valid). */
  private take(n: number): Uint8Array {
    if (this.used + n > this.arena.length) {
      this.arena = new Uint8Array(Math.max(2 * this.arena.length, n))
      this.used = 0
    }
    const out = this.arena.subarray(this.used, this.used + n)
    this.used += n
    return out
  }

  /** Opens a list; `end` closes it. */
  begin(): void {
    if (this.measuring) {
      this.open[this.depth++] = this.lists
      this.open[this.depth++] = this.at
      this.payloads[this.lists++] = 0
    } else this.prefix(this.payloads[this.slot++], 0xc0)
  }

  end(): void {
    if (!this.measuring) return
    if (this.depth === 0) throw new Error('an RLP list was ended and not begun')
    const start = this.open[--this.depth]
    const slot = this.open[--this.depth]
    const payload = this.at - start
    this.payloads[slot] = payload
    this.at += prefixLength(payload)
  }

  /** A byte string. */
  bytes(b: Uint8Array): void {
    if (this.measuring) this.at += b.length === 1 && b[0] < 0x80 ? 1 : prefixLength(b.length) + b.length
    else {
      if (b.length !== 1 || b[0] >= 0x80) this.prefix(b.length, 0x80)
      this.out.set(b, this.at)
      this.at += b.length
    }
  }

  /** An item already encoded, spliced in as it is (a trie node's short child). */
  raw(b: Uint8Array): void {
    if (!this.measuring) this.out.set(b, this.at)
    this.at += b.length
  }

  /** JSON-RPC data ("0x…" of even length): its bytes, leading zeros kept (`hexData`). */
  hexData(hex: string): void {
    this.digits(hex, dataStart(hex))
  }

  /** A JSON-RPC quantity ("0x1a"): its minimal bytes, read from the digits (`hexQuantity`). */
  hexQuantity(hex: string): void {
    const start = quantityStart(hex)
    if (start < 0) this.bytes(uintBytes(BigInt(hex)))
    else this.digits(hex, start)
  }

  /** The bytes hex digits from `start` spell (an odd count led by a 0), as a byte string. */
  private digits(hex: string, start: number): void {
    const length = (hex.length - start + 1) >> 1
    const single = selfEncoded(hex, start)
    if (this.measuring) {
      this.at += single ? 1 : prefixLength(length) + length
      return
    }
    if (!single) this.prefix(length, 0x80)
    hexInto(hex, start, this.out, this.at)
    this.at += length
  }

  private prefix(length: number, offset: number): void {
    this.at = writePrefix(length, offset, this.out, this.at)
  }
}

/** The value of the hex digit at `i` (a digit that is not hex reads as 16: `hexInto` then refuses it). */
function hexDigit(hex: string, i: number): number {
  const c = hex.charCodeAt(i) | 0x20
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : 16
}

/** Whether the digits from `start` spell one byte below 0x80, its own encoding: one digit, or two, the first below 8. */
const selfEncoded = (hex: string, start: number): boolean =>
  hex.length - start === 1 || (hex.length - start === 2 && hexDigit(hex, start) < 8)

/** Where JSON-RPC data's digits start ("0x…" of even length, the prefix optional); throws on an odd count. */
function dataStart(hex: string): number {
  const start = prefixed(hex) ? 2 : 0
  if ((hex.length - start) % 2 !== 0) throw new Error(`odd-length hex: ${hex}`)
  return start
}

/** Where a JSON-RPC quantity's digits start past "0x" and its leading zeros; -1 when it is not plain 0x-hex (then read by BigInt). */
function quantityStart(hex: string): number {
  if (hex.length < 3 || !prefixed(hex)) return -1
  let start = 2
  while (start < hex.length && hex.charCodeAt(start) === 48) start++
  return start
}

/** Minimal big-endian bytes of an unsigned integer (zero is the empty string). */
export function uintBytes(n: bigint): Uint8Array {
  if (n < 0n) throw new Error(`negative integer: ${n}`)
  const out: number[] = []
  for (; n > 0n; n >>= 8n) out.unshift(Number(n & 0xffn))
  return Uint8Array.from(out)
}

const prefixed = (hex: string) => hex.length >= 2 && hex.charCodeAt(0) === 48 && (hex.charCodeAt(1) | 0x20) === 120

const hexItem = (hex: string, start: number): RlpHex => ({
  hex,
  start,
  length: (hex.length - start + 1) >> 1,
  single: selfEncoded(hex, start),
})

/** A JSON-RPC quantity ("0x1a") as the minimal bytes RLP expects, read straight from the hex digits. */
export function hexQuantity(hex: string): RlpItem {
  const start = quantityStart(hex)
  return start < 0 ? uintBytes(BigInt(hex)) : hexItem(hex, start)
}

/** JSON-RPC data ("0x…" of even length) as its bytes, leading zeros kept. */
export const hexData = (hex: string): RlpHex => hexItem(hex, dataStart(hex))

/**
 * XXH64, the hash Parquet bloom filters use, computed in 32-bit halves: BigInt arithmetic
 * costs ~1 µs a value and the index hashes every value of every indexed column. It names a
 * value (its key: the top 52 bits, exact in a double, so keys sort and subtract as plain
 * numbers) and checks stored bytes (the whole 64 bits, as 16 hex digits).
 */

const P1H = 0x9e3779b1
const P1L = 0x85ebca87
const P2H = 0xc2b2ae3d
const P2L = 0x27d4eb4f
const P3H = 0x165667b1
const P3L = 0x9e3779f9
const P4H = 0x85ebca77
const P4L = 0xc2b2ae63
const P5H = 0x27d4eb2f
const P5L = 0x165667c5
const TWO32 = 4294967296

// Result registers of the 64-bit helpers below (high and low 32 bits): no pair is allocated per step.
let H = 0
let L = 0

function mul(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff
  const a1 = al >>> 16
  const b0 = bl & 0xffff
  const b1 = bl >>> 16
  const mid = a0 * b1 + a1 * b0
  const low = a0 * b0 + (mid % 65536) * 65536
  L = low >>> 0
  H = (a1 * b1 + Math.floor(mid / 65536) + Math.floor(low / TWO32) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0
}

function add(ah: number, al: number, bh: number, bl: number): void {
  const low = al + bl
  L = low >>> 0
  H = (ah + bh + (low >= TWO32 ? 1 : 0)) >>> 0
}

/** Rotates left by 0 < r < 32. */
function rotl(h: number, l: number, r: number): void {
  H = ((h << r) | (l >>> (32 - r))) >>> 0
  L = ((l << r) | (h >>> (32 - r))) >>> 0
}

const u32 = (b: Uint8Array, at: number) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0

/** acc + lane * P2, rotated by 31, times P1. */
function round(ah: number, al: number, lh: number, ll: number): void {
  mul(lh, ll, P2H, P2L)
  add(ah, al, H, L)
  rotl(H, L, 31)
  mul(H, L, P1H, P1L)
}

/** acc ^ round(0, v), times P1, plus P4. */
function mergeRound(ah: number, al: number, vh: number, vl: number): void {
  round(0, 0, vh, vl)
  mul((ah ^ H) >>> 0, (al ^ L) >>> 0, P1H, P1L)
  add(H, L, P4H, P4L)
}

/** XXH64 of `bytes` with seed 0, left in H and L. */
function xxh64(bytes: Uint8Array): void {
  const len = bytes.length
  let at = 0
  let h: number
  let l: number
  if (len >= 32) {
    add(P1H, P1L, P2H, P2L)
    let v1h = H
    let v1l = L
    let v2h = P2H
    let v2l = P2L
    let v3h = 0
    let v3l = 0
    // seed - P1: the two's complement of P1 (its low half is not 0, so nothing carries)
    let v4h = ~P1H >>> 0
    let v4l = -P1L >>> 0
    for (; at + 32 <= len; at += 32) {
      round(v1h, v1l, u32(bytes, at + 4), u32(bytes, at))
      v1h = H
      v1l = L
      round(v2h, v2l, u32(bytes, at + 12), u32(bytes, at + 8))
      v2h = H
      v2l = L
      round(v3h, v3l, u32(bytes, at + 20), u32(bytes, at + 16))
      v3h = H
      v3l = L
      round(v4h, v4l, u32(bytes, at + 28), u32(bytes, at + 24))
      v4h = H
      v4l = L
    }
    rotl(v1h, v1l, 1)
    let hh = H
    let hl = L
    rotl(v2h, v2l, 7)
    add(hh, hl, H, L)
    hh = H
    hl = L
    rotl(v3h, v3l, 12)
    add(hh, hl, H, L)
    hh = H
    hl = L
    rotl(v4h, v4l, 18)
    add(hh, hl, H, L)
    mergeRound(H, L, v1h, v1l)
    mergeRound(H, L, v2h, v2l)
    mergeRound(H, L, v3h, v3l)
    mergeRound(H, L, v4h, v4l)
    h = H
    l = L
  } else {
    h = P5H
    l = P5L
  }
  add(h, l, Math.floor(len / TWO32), len >>> 0)
  h = H
  l = L
  for (; at + 8 <= len; at += 8) {
    round(0, 0, u32(bytes, at + 4), u32(bytes, at))
    rotl((h ^ H) >>> 0, (l ^ L) >>> 0, 27)
    mul(H, L, P1H, P1L)
    add(H, L, P4H, P4L)
    h = H
    l = L
  }
  if (at + 4 <= len) {
    mul(0, u32(bytes, at), P1H, P1L)
    rotl((h ^ H) >>> 0, (l ^ L) >>> 0, 23)
    mul(H, L, P2H, P2L)
    add(H, L, P3H, P3L)
    h = H
    l = L
    at += 4
  }
  for (; at < len; at++) {
    mul(0, bytes[at], P5H, P5L)
    rotl((h ^ H) >>> 0, (l ^ L) >>> 0, 11)
    mul(H, L, P1H, P1L)
    h = H
    l = L
  }
  // avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32
  mul(h, (l ^ (h >>> 1)) >>> 0, P2H, P2L)
  mul((H ^ (H >>> 29)) >>> 0, (L ^ ((L >>> 29) | (H << 3))) >>> 0, P3H, P3L)
  L = (L ^ H) >>> 0
}

const utf8 = new TextEncoder()

/**
 * The key of an indexed value: the top 52 bits of XXH64 of its bytes (text: of its UTF-8).
 * 52 bits keep a double exact; a lookup of an absent value matches one of n keys with
 * probability n / 2^52 (2.2e-7 for a billion keys), and a false match only costs a row group read.
 */
export function valueKey(value: Uint8Array | string): number {
  xxh64(typeof value === 'string' ? utf8.encode(value) : value)
  return H * 1048576 + (L >>> 12)
}

/** XXH64 of `bytes` as 16 hex digits: the checksum and content id of stored index bytes. */
export function hashHex(bytes: Uint8Array): string {
  xxh64(bytes)
  return H.toString(16).padStart(8, '0') + L.toString(16).padStart(8, '0')
}

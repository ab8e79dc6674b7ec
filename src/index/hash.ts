/**
 * The index's 64-bit hash: MurmurHash3_x86_32 under two seeds, computed in one pass (its block
 * mixing does not depend on the seed). Math.imul only, ~60 ns for a 32-byte hash where XXH64 in
 * 32-bit halves costs ~650 ns, and the index hashes every value of every indexed column (and
 * every stored byte, to check it). It names a value (its key: the top 52 bits, exact in a
 * double, so keys sort and subtract as plain numbers) and checks stored bytes (all 64 bits).
 */

const SEED_HIGH = 0
const SEED_LOW = 0x9747b28c
const C1 = 0xcc9e2d51
const C2 = 0x1b873593

// The two halves of the last hash: a typed array, not two module variables, because a uint32
// above 2^30 in a variable is a boxed number, allocated at every hash.
const R = new Uint32Array(2)

const mix = (h: number, k: number) => {
  h ^= k
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

const finish = (h: number, len: number) => {
  h ^= len
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/** MurmurHash3_x86_32 of `bytes[start, end)` under both seeds, left in R. */
function murmur2x(bytes: Uint8Array, start = 0, end = bytes.length): void {
  const len = end - start
  const blocks = start + (len & ~3)
  let hi = SEED_HIGH
  let lo = SEED_LOW
  let k = 0
  for (let i = start; i < blocks; i += 4) {
    k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)
    k = Math.imul(k, C1)
    k = (k << 15) | (k >>> 17)
    k = Math.imul(k, C2)
    hi = mix(hi, k)
    lo = mix(lo, k)
  }
  k = 0
  switch (len & 3) {
    case 3:
      k ^= bytes[blocks + 2] << 16
    // falls through
    case 2:
      k ^= bytes[blocks + 1] << 8
    // falls through
    case 1:
      k ^= bytes[blocks]
      k = Math.imul(k, C1)
      k = (k << 15) | (k >>> 17)
      k = Math.imul(k, C2)
      hi ^= k
      lo ^= k
  }
  R[0] = finish(hi, len)
  R[1] = finish(lo, len)
}

const utf8 = new TextEncoder()

/**
 * The key of an indexed value: the top 52 bits of its 64-bit hash (text: of its UTF-8). A lookup
 * of an absent value matches one of n keys with probability n / 2^52 (2.2e-7 for a billion
 * keys), and a false match only costs a row group read.
 */
export function valueKey(value: Uint8Array | string): number {
  murmur2x(typeof value === 'string' ? utf8.encode(value) : value)
  return R[0] * 1048576 + (R[1] >>> 12)
}

/** `valueKey` of the value whose bytes (a text's UTF-8) are `bytes[start, end)`: a packed column's row, without a view of it. */
export function valueKeyAt(bytes: Uint8Array, start: number, end: number): number {
  murmur2x(bytes, start, end)
  return R[0] * 1048576 + (R[1] >>> 12)
}

/** The 64-bit hash of `bytes` as 16 hex digits: the checksum and content id of stored index bytes. */
export function hashHex(bytes: Uint8Array): string {
  murmur2x(bytes)
  return R[0].toString(16).padStart(8, '0') + R[1].toString(16).padStart(8, '0')
}

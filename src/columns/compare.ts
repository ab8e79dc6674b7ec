/**
 * Value order, the one comparison the writer (sorting lookup copies), the pruner
 * (statistics) and the row filters share: byte order for binary kinds, numeric order
 * for numbers.
 */
import type { StoredValue } from '../schema/kinds.ts'

/** Unsigned lexicographic byte order: Parquet's order for binary, numeric order for equal-width big-endian numbers. */
export const compareBytes = (a: Uint8Array, b: Uint8Array): number => compareByteRanges(a, 0, a.length, b, 0, b.length)

/** `compareBytes` of `a[as, as + m)` and `b[bs, bs + n)`: values where they lie in packed columns, without a view of either. */
export function compareByteRanges(a: Uint8Array, as: number, m: number, b: Uint8Array, bs: number, n: number): number {
  const k = Math.min(m, n)
  for (let i = 0; i < k; i++) {
    if (a[as + i] !== b[bs + i]) return a[as + i] - b[bs + i]
  }
  return m - n
}

/** Order of two non-null values of the same kind; throws on values of different shapes. */
export function compareValues(a: StoredValue, b: StoredValue): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b)
  if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0
  throw new TypeError(`cannot compare ${typeof a} with ${typeof b}`)
}

/** Equal bytes, compared from the end (hashes and addresses of one contract differ there first). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = a.length - 1; i >= 0; i--) {
    if (a[i] !== b[i]) return false
  }
  return true
}

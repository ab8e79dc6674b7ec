/**
 * Value order, the one comparison the writer (sorting lookup copies, statistics), the pruner
 * (statistics) and the row filters share: byte order for binary kinds, numeric order
 * for numbers; of plain values, and of packed rows where they lie (`rowComparator`).
 */
import type { StoredValue } from '../schema/kinds.ts'
import { valueAt, type Vector } from './vector.ts'

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
export const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && rangesEqual(a, 0, b, 0, a.length)

/** `bytesEqual` of `a[as, as + n)` and `b[bs, bs + n)`: values where they lie in packed columns, without a view of either. */
export function rangesEqual(a: Uint8Array, as: number, b: Uint8Array, bs: number, n: number): boolean {
  for (let i = n - 1; i >= 0; i--) {
    if (a[as + i] !== b[bs + i]) return false
  }
  return true
}

/** Order of two rows of `v` (nulls first), as compareValues orders their values, read where they lie (a lookup copy's sort, a packed page's statistics). */
export function rowComparator(v: Vector): (i: number, j: number) => number {
  const valid = v.valid
  const nulls = (i: number, j: number): number | undefined => {
    if (valid === null) return undefined
    const a = valid[i]
    const b = valid[j]
    return a === b ? (a === 0 ? 0 : undefined) : a - b
  }
  switch (v.type) {
    case 'u64': {
      // by the words: reading the BigUint64Array would make two BigInts a comparison
      const w = v.words
      return (i, j) => nulls(i, j) ?? (w[2 * i + 1] - w[2 * j + 1] || w[2 * i] - w[2 * j])
    }
    case 'bool':
      return (i, j) => nulls(i, j) ?? v.values[i] - v.values[j]
    case 'fixed': {
      const { bytes, width } = v
      return (i, j) => nulls(i, j) ?? compareByteRanges(bytes, i * width, width, bytes, j * width, width)
    }
    case 'binary': {
      const { bytes, offsets } = v
      if (v.text) {
        // strings order by UTF-16 code unit, as compareValues compares them, not by UTF-8 byte
        return (i, j) => {
          const n = nulls(i, j)
          if (n !== undefined) return n
          const [a, b] = [valueAt(v, i) as string, valueAt(v, j) as string]
          return a < b ? -1 : a > b ? 1 : 0
        }
      }
      return (i, j) =>
        nulls(i, j) ?? compareByteRanges(bytes, offsets[i], offsets[i + 1] - offsets[i], bytes, offsets[j], offsets[j + 1] - offsets[j])
    }
  }
}

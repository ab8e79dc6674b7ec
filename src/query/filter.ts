/**
 * Predicates, exactly and conservatively. `rowTest` decides one stored value
 * exactly (the row-level filter whose answers are the response); `pruningFilterOf`
 * turns the predicates hyparquet can judge correctly into its pruning filter shape
 * (statistics, bloom filters, page index), keeps byte-order ones for the scanner's own
 * statistics check (`statisticsExclude`), and says which ones it carried. A
 * predicate left out of the pruning filter is still applied to every row, so a
 * partial pushdown never changes an answer.
 *
 * Value order per kind: u64 kinds compare as bigint; fixed-width binary kinds
 * (u256, hash, address) compare as unsigned big-endian bytes, which for equal
 * widths is lexicographic byte order; strings compare as JavaScript strings;
 * booleans and variable-length bytes only compare for equality.
 */
import type { ParquetQueryFilter } from 'hyparquet'
import type { FieldDecl } from '../schema/dataset.ts'
import { columnOf } from '../schema/dataset.ts'
import { KINDS, type StoredValue } from '../schema/kinds.ts'
import type { BlockRange } from '../manifest/types.ts'
import type { Predicate } from './types.ts'
import { bytesEqual, compareBytes, compareValues } from '../columns/compare.ts'
import { valueAt, type FixedVector, type U64Vector, type Vector } from '../columns/vector.ts'

/** A test of one stored value (`null` is a null cell). */
export type ValueTest = (value: StoredValue | null) => boolean

/**
 * The exact test of one predicate: `eq`/`in` match any listed value, a `null` in the
 * list matches null cells (so `in` with null and values is "null OR in"); `gte`/`lte`
 * never match a null cell.
 */
export function valueTest(p: Predicate): ValueTest {
  const wantsNull = p.values.includes(null)
  const values = p.values.filter((v): v is StoredValue => v !== null)
  if (p.op === 'gte' || p.op === 'lte') {
    if (values.length !== 1) throw new Error(`${p.field.name}__${p.op} takes one value`)
    const bound = values[0]
    const sign = p.op === 'gte' ? 1 : -1
    return v => v !== null && sign * compareValues(v, bound) >= 0
  }
  if (values.length === 0) return v => wantsNull && v === null
  if (values[0] instanceof Uint8Array) return bytesTest(values as Uint8Array[], wantsNull)
  const set = new Set(values)
  return v => (v === null ? wantsNull : set.has(v))
}

/**
 * Byte-value membership. Decoded values often repeat the same object (dictionary
 * pages share one view per distinct value), so the last answer is remembered by
 * identity; long lists are bucketed by their first four bytes.
 */
function bytesTest(values: Uint8Array[], wantsNull: boolean): ValueTest {
  let last: Uint8Array | undefined
  let lastResult = false
  const lookup = values.length <= 4 ? (v: Uint8Array) => values.some(w => bytesEqual(v, w)) : bucketLookup(values)
  return v => {
    if (v === null) return wantsNull
    const bytes = v as Uint8Array
    if (bytes === last) return lastResult
    last = bytes
    lastResult = lookup(bytes)
    return lastResult
  }
}

const prefixOf = (b: Uint8Array) => (b.length >= 4 ? ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0 : -1 - b.length)

/** Byte values grouped by their first four bytes (`prefixOf`). */
function bucketsOf(values: readonly Uint8Array[]): Map<number, Uint8Array[]> {
  const buckets = new Map<number, Uint8Array[]>()
  for (const v of values) {
    const k = prefixOf(v)
    const list = buckets.get(k)
    if (list) list.push(v)
    else buckets.set(k, [v])
  }
  return buckets
}

function bucketLookup(values: Uint8Array[]): (v: Uint8Array) => boolean {
  const buckets = bucketsOf(values)
  return v => {
    const list = buckets.get(prefixOf(v))
    return list !== undefined && list.some(w => bytesEqual(v, w))
  }
}

/** The constant a virtual field has in every row of a query on `chainId`. */
export function virtualValue(field: FieldDecl, chainId: number): StoredValue | null {
  if (field.virtual === 'chain') return BigInt(chainId)
  return null
}

/**
 * Splits predicates into those on stored columns and the virtual ones, which are
 * decided once for the whole query. `never` is true when a virtual predicate
 * excludes every row.
 */
export function decideVirtual(predicates: readonly Predicate[], chainId: number): { stored: Predicate[]; never: boolean } {
  const stored: Predicate[] = []
  let never = false
  for (const p of predicates) {
    if (p.field.virtual === undefined) stored.push(p)
    else if (!valueTest(p)(virtualValue(p.field, chainId))) never = true
  }
  return { stored, never }
}

/** The exact test of one predicate on row i of a vector. */
export type RowTest = (i: number) => boolean

/**
 * `valueTest` on a vector's rows. Equality and order on fixed-width bytes and on
 * u64 numbers read the vector's buffers in place (no value is materialised), so a
 * scan filtering a million addresses allocates nothing per row; other kinds go
 * through `valueTest`.
 */
export function rowTest(p: Predicate, v: Vector): RowTest {
  const wantsNull = p.values.includes(null)
  const values = p.values.filter((x): x is StoredValue => x !== null)
  const valid = v.valid
  let present: RowTest | null = null
  if (v.type === 'fixed' && values.every(x => x instanceof Uint8Array && x.length === v.width))
    present = fixedTest(p.op, values as Uint8Array[], v)
  else if (v.type === 'u64' && values.every(x => typeof x === 'bigint')) present = u64Test(p.op, values as bigint[], v)
  if (present === null) {
    const test = valueTest(p)
    return i => test(valueAt(v, i))
  }
  const whenPresent = present
  if (valid === null) return whenPresent
  const nullAnswer = (p.op === 'eq' || p.op === 'in') && wantsNull
  return i => (valid[i] === 0 ? nullAnswer : whenPresent(i))
}

function fixedTest(op: Predicate['op'], values: Uint8Array[], v: FixedVector): RowTest {
  const { bytes, width } = v
  const compareAt = (i: number, w: Uint8Array): number => {
    const at = i * width
    for (let k = 0; k < width; k++) {
      const d = bytes[at + k] - w[k]
      if (d !== 0) return d
    }
    return 0
  }
  if (op === 'gte' || op === 'lte') {
    const bound = values[0]
    const sign = op === 'gte' ? 1 : -1
    return i => sign * compareAt(i, bound) >= 0
  }
  if (values.length === 0) return () => false
  if (values.length <= 4) return i => values.some(w => compareAt(i, w) === 0)
  const buckets = bucketsOf(values)
  return i => {
    const at = i * width
    const list = buckets.get(((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0)
    return list !== undefined && list.some(w => compareAt(i, w) === 0)
  }
}

/** Small values (below 2^32) are compared as numbers from the low word; a number and a bigint compare exactly. */
function u64Test(op: Predicate['op'], values: bigint[], v: U64Vector): RowTest {
  const { words } = v
  const at = (i: number): number | bigint => (words[2 * i + 1] === 0 ? words[2 * i] : v.values[i])
  if (op === 'gte') {
    const bound = values[0]
    return i => at(i) >= bound
  }
  if (op === 'lte') {
    const bound = values[0]
    return i => at(i) <= bound
  }
  const small = new Set(values.filter(x => x < 0x100000000n).map(Number))
  const large = new Set(values.filter(x => x >= 0x100000000n))
  return i => (words[2 * i + 1] === 0 ? small.has(words[2 * i]) : large.has(v.values[i]))
}

/**
 * Offsets in `[start, end)` of the rows where every predicate holds, ascending.
 * `columns` holds each predicate's stored column over the same rows (index 0 = row 0).
 */
export function selectRows(predicates: readonly Predicate[], columns: Record<string, Vector>, start: number, end: number): Int32Array {
  let rows = new Int32Array(Math.max(0, end - start))
  for (let i = 0; i < rows.length; i++) rows[i] = start + i
  for (const p of predicates) {
    const data = columns[columnOf(p.field)]
    if (!data) throw new Error(`column ${columnOf(p.field)} was not read`)
    const test = rowTest(p, data)
    let n = 0
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]
      if (test(r)) rows[n++] = r
    }
    rows = rows.subarray(0, n)
    if (n === 0) break
  }
  return rows
}

/**
 * `selectRows` for one dictionary-encoded column: each predicate is decided once per
 * distinct value, then rows are kept by their code (-1 = null).
 */
export function selectCodes(
  predicates: readonly Predicate[],
  dictionary: Vector,
  codes: Int32Array,
  start: number,
  end: number,
): Int32Array {
  const match = new Uint8Array(dictionary.length).fill(1)
  let nullMatch = true
  for (const p of predicates) {
    const test = rowTest(p, dictionary)
    for (let k = 0; k < match.length; k++) if (match[k] && !test(k)) match[k] = 0
    nullMatch &&= valueTest(p)(null)
  }
  const rows = new Int32Array(Math.max(0, end - start))
  let n = 0
  for (let i = start; i < end; i++) {
    const c = codes[i]
    if (c < 0 ? nullMatch : match[c] === 1) rows[n++] = i
  }
  return rows.subarray(0, n)
}

/** First offset in `[start, end)` whose value is at least `bound` (values ascending, none null). */
export function lowerBound(data: U64Vector, start: number, end: number, bound: bigint): number {
  let lo = start
  let hi = end
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (data.values[mid] < bound) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Whether row groups can be pruned with this predicate (the kind says; null markers never prune). */
function pushable(p: Predicate): boolean {
  if (p.field.virtual !== undefined || p.values.length === 0 || p.values.includes(null)) return false
  return p.op === 'eq' || p.op === 'in' ? KINDS[p.field.kind].prunes.equality : KINDS[p.field.kind].prunes.order
}

/** An order predicate on fixed-length bytes: pruned by `statisticsExclude`, since hyparquet takes binary bounds as text. */
function byteOrder(p: Predicate): boolean {
  return (p.op === 'gte' || p.op === 'lte') && KINDS[p.field.kind].parquet.type === 'FIXED_LEN_BYTE_ARRAY'
}

function conditionOf(p: Predicate): Record<string, unknown> {
  if (p.op === 'eq' && p.values.length === 1) return { $eq: p.values[0] }
  if (p.op === 'eq' || p.op === 'in') return { $in: p.values }
  return { [p.op === 'gte' ? '$gte' : '$lte']: p.values[0] }
}

/**
 * Row-group pruning for a query: hyparquet's pruning filter (the block range on the range
 * key and every predicate it handles correctly) and the byte-order predicates the scanner
 * checks against statistics itself (`statisticsExclude`). `pushed` lists every predicate
 * either carries (all of them are still applied to rows).
 */
export function pruningFilterOf(
  predicates: readonly Predicate[],
  rangeKey: string,
  range: BlockRange,
): { filter: ParquetQueryFilter; pushed: Predicate[]; byteOrder: Predicate[] } {
  const pushed = predicates.filter(pushable)
  const filter: ParquetQueryFilter = {
    $and: [
      { [rangeKey]: { $gte: BigInt(range[0]), $lte: BigInt(range[1]) } },
      ...pushed.filter(p => !byteOrder(p)).map(p => ({ [columnOf(p.field)]: conditionOf(p) })),
    ],
  } as ParquetQueryFilter
  return { filter, pushed, byteOrder: pushed.filter(byteOrder) }
}

/**
 * Whether a row group's statistics prove that no row meets a byte-order predicate: its
 * max below a `gte` bound, or its min above an `lte` bound, compared as unsigned bytes.
 * Bounds missing or not bytes (a file written otherwise) prove nothing.
 */
export function statisticsExclude(p: Predicate, min: unknown, max: unknown): boolean {
  const bound = p.values[0]
  if (!(bound instanceof Uint8Array)) return false
  if (p.op === 'gte') return max instanceof Uint8Array && compareBytes(max, bound) < 0
  return p.op === 'lte' && min instanceof Uint8Array && compareBytes(min, bound) > 0
}

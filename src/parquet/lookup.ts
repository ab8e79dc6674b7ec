/**
 * The lookup copy of a partition (see `LookupDecl`): the same rows and schema, sorted
 * by the lookup column and then the dataset's order, in small row groups without
 * bloom filters, since the sort makes each group's min/max statistics tight bounds of
 * the values it holds. A query for a rare value reads the footer once (cached with the
 * other tails) and then, per partition, the one or two row groups whose bounds hold
 * the value: all their columns, contiguous, in one request.
 */
import type { DatasetDecl, LookupDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { writePartition, type WrittenPartition } from './write.ts'
import type { ColumnBatch } from '../columns/batch.ts'
import { compareValues } from '../columns/compare.ts'

/**
 * Rows a lookup may always read, as a share of the partition's rows (and the share one copy
 * row group must fit in for a copy to be written); beyond it `lookupPays` weighs bytes.
 */
export const LOOKUP_SHARE = 1 / 16

/** The share of a partition's rows a lookup through `decl`'s copies may always read. */
export const lookupShare = (decl: Pick<LookupDecl, 'share'>): number => decl.share ?? LOOKUP_SHARE

/**
 * Beyond the share, a lookup still pays when the copy's row groups it fetches are at most half
 * the bytes the block-ordered scan would read (the columns it needs, over the rows its bloom
 * filters and statistics leave), and within `LOOKUP_HOLD_BYTES`: a value that common (a hot
 * contract, 20 warm ones in one `__in`) has matches in nearly every page there, so that scan
 * reads and decodes nearly the whole partition, where the copy's groups are the value's rows
 * alone (BENCHMARKS.md run O4: a hot contract 78 MB → 8 MB read). Half, since
 * a value's rows clustered in a few blocks leave that scan only the pages holding them.
 */
export const LOOKUP_SPREAD_SHARE = 1 / 2

/** Most bytes of a lookup copy's row groups that one partition's lookup holds in memory at once beyond the share. */
export const LOOKUP_HOLD_BYTES = 16 * 1024 * 1024

/** What a lookup would read, and what the block-ordered scan of the same partition would. */
export interface LookupCost {
  /** Rows and bytes of the copy's row groups that may hold the values. */
  matched: number
  bytes: number
  /** Rows the partition's own path starts from, and the bytes its scan would read (worked out only beyond the share). */
  rows: number
  scanBytes: () => number
}

/** Whether a lookup is cheaper than the block-ordered scan (`share`: the lookup's declared share). */
export const lookupPays = (c: LookupCost, share: number): boolean =>
  c.matched <= c.rows * share || (c.bytes <= LOOKUP_HOLD_BYTES && c.bytes <= c.scanBytes() * LOOKUP_SPREAD_SHARE)

/** A copy can serve a lookup only if one of its row groups is within the lookup share of the partition. */
export function lookupWorthwhile(rows: number, decl: LookupDecl): boolean {
  return decl.rowGroupSize <= rows * lookupShare(decl)
}

/** Row order of `batch` by `columns` (nulls first), stable. */
export function sortOrder(batch: ColumnBatch, columns: readonly string[]): Int32Array {
  const cols = columns.map(c => batch.columns[c])
  const order = Int32Array.from({ length: batch.length }, (_, i) => i)
  const compare = (a: StoredValue | null, b: StoredValue | null): number =>
    a === null ? (b === null ? 0 : -1) : b === null ? 1 : compareValues(a, b)
  const prefix = cols.length > 0 ? bytePrefixes(cols[0]) : undefined
  return order.sort((i, j) => {
    if (prefix) {
      const d = prefix[i] - prefix[j]
      if (d !== 0) return d
    }
    for (const col of cols) {
      const d = compare(col[i] ?? null, col[j] ?? null)
      if (d !== 0) return d
    }
    return i - j
  })
}

/**
 * For a column of byte values, each row's first six bytes as a number (a null: -1), which orders
 * rows as their values do wherever it differs: the sort compares numbers, and values only on a
 * tie (a lookup copy sorts a unit's ~300,000 logs by address).
 */
function bytePrefixes(values: readonly (StoredValue | null | undefined)[]): Float64Array | undefined {
  const out = new Float64Array(values.length)
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v === null || v === undefined) out[i] = -1
    else if (!(v instanceof Uint8Array)) return undefined
    else {
      let key = 0
      for (let k = 0; k < 6; k++) key = key * 256 + (k < v.length ? v[k] : 0)
      out[i] = key
    }
  }
  return out
}

/** The rows of `batch` in `order`. */
export function permute(batch: ColumnBatch, order: Int32Array): ColumnBatch {
  const columns: ColumnBatch['columns'] = {}
  for (const [name, values] of Object.entries(batch.columns)) columns[name] = Array.from(order, i => values[i])
  return { length: batch.length, columns }
}

/** The lookup copy of one partition's rows (already in the dataset's order). */
export function writeLookup(
  dataset: DatasetDecl & { lookup: LookupDecl },
  batch: ColumnBatch,
  range: { from: number; to: number },
): WrittenPartition {
  const sorted = permute(batch, sortOrder(batch, [dataset.lookup.column, ...dataset.orderBy]))
  return writePartition(dataset, sorted, range, { rowGroupSize: dataset.lookup.rowGroupSize, blooms: false })
}

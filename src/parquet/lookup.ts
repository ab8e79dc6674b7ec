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
 * Most rows a lookup may read, as a share of the partition's rows: beyond it the value
 * is common enough that the block-ordered scan (bloom filters, filter column first,
 * then matching pages) reads less.
 */
export const LOOKUP_SHARE = 1 / 16

/** The most rows a lookup through `decl`'s copies may read, as a share of the partition's rows. */
export const lookupShare = (decl: Pick<LookupDecl, 'share'>): number => decl.share ?? LOOKUP_SHARE

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
  return order.sort((i, j) => {
    for (const col of cols) {
      const d = compare(col[i] ?? null, col[j] ?? null)
      if (d !== 0) return d
    }
    return i - j
  })
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

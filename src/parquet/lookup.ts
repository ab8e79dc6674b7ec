/**
 * The lookup copy of a partition (see `LookupDecl`): the same rows and schema, sorted
 * by the lookup column and then the dataset's order, in small row groups without
 * bloom filters, since the sort makes each group's min/max statistics tight bounds of
 * the values it holds. A query for a rare value reads the footer once (cached with the
 * other tails) and then, per partition, the one or two row groups whose bounds hold
 * the value: all their columns, contiguous, in one request.
 */
import type { DatasetDecl, LookupDecl } from '../schema/dataset.ts'
import { storedFields, writePartition, type WrittenPartition } from './write.ts'
import { isPacked, packBatch, takeBatch, type ColumnBatch, type PackedBatch } from '../columns/batch.ts'
import { rowEnd, rowStart, type Vector } from '../columns/vector.ts'
import { rowComparator } from '../columns/compare.ts'

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

/**
 * Row order of `batch` by `columns` (nulls first), stable. Values are compared where they lie
 * in their vectors, and a first byte column's first six bytes as a number first (a lookup copy
 * sorts a unit's ~300,000 logs by address).
 */
export function sortOrder(batch: PackedBatch, columns: readonly string[]): Int32Array {
  const compares = columns.map(c => {
    const v = batch.columns[c]
    if (v === undefined) throw new Error(`batch has no column "${c}"`)
    return rowComparator(v)
  })
  const order = Int32Array.from({ length: batch.length }, (_, i) => i)
  const first = columns.length > 0 ? batch.columns[columns[0]] : undefined
  const prefix =
    first && (first.type === 'fixed' || first.type === 'binary') && !(first.type === 'binary' && first.text)
      ? bytePrefixes(first)
      : undefined
  return order.sort((i, j) => {
    if (prefix) {
      const d = prefix[i] - prefix[j]
      if (d !== 0) return d
    }
    for (const compare of compares) {
      const d = compare(i, j)
      if (d !== 0) return d
    }
    return i - j
  })
}

/**
 * Each row's first six bytes as a number (a null: -1), which orders rows as their values do
 * wherever it differs: the sort compares numbers, and values only on a tie.
 */
function bytePrefixes(v: Vector & { type: 'fixed' | 'binary' }): Float64Array {
  const out = new Float64Array(v.length)
  for (let i = 0; i < v.length; i++) {
    if (v.valid !== null && v.valid[i] === 0) {
      out[i] = -1
      continue
    }
    const start = rowStart(v, i)
    const end = rowEnd(v, i)
    let key = 0
    for (let k = 0; k < 6; k++) key = key * 256 + (start + k < end ? v.bytes[start + k] : 0)
    out[i] = key
  }
  return out
}

/**
 * The lookup copy of one partition's rows (already in the dataset's order). The rows are
 * packed, then gathered once in the copy's order, so every later pass over a column (the
 * dictionary's sample, statistics, encoding) reads its values in order: reached through each
 * value's own object, the sorted rows cost a cache miss a value a pass (BENCHMARKS.md).
 */
export function writeLookup(
  dataset: DatasetDecl & { lookup: LookupDecl },
  batch: ColumnBatch | PackedBatch,
  range: { from: number; to: number },
): WrittenPartition {
  const packed = isPacked(batch) ? batch : packBatch(storedFields(dataset), batch)
  const sorted = takeBatch(packed, sortOrder(packed, [dataset.lookup.column, ...dataset.orderBy]))
  return writePartition(dataset, sorted, range, { rowGroupSize: dataset.lookup.rowGroupSize, blooms: false })
}

/**
 * Rows the value index holds (inline rows, src/index/README.md): where every segment of a
 * stretch of the range answers the looked-up values with their rows, those rows are read
 * from the index's slices (one round of ranged reads, each checked against its CRC-32),
 * decoded, filtered by every predicate of the query and the range, and put in the dataset's
 * order, so no partition there is opened. Each segment becomes one piece, merged with the
 * scanned partitions in block order (engine.ts, scan.ts).
 */
import type { IndexCache } from '../index/read.ts'
import { readSlices } from '../index/read.ts'
import { decodeRows, type RowField } from '../index/rows.ts'
import type { InlineSegment } from '../index/types.ts'
import { IndexObjectError, parsing } from '../index/format.ts'
import type { ObjectStore } from '../store/types.ts'
import { vectorOf, takeVector, type U64Vector, type Vector } from '../columns/vector.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { selectRows } from './filter.ts'
import type { ScanPlan } from './plan.ts'
import { sortedBy } from './lookup-scan.ts'
import type { Predicate } from './types.ts'

/** The matching rows of one segment answered from the index: stored output columns, in the dataset's order. */
export interface InlinePiece {
  /** First block of the segment's part of the range: where the piece sits among the partitions. */
  from: number
  to: number
  length: number
  /** Vectors of the plan's output columns. */
  values: Record<string, Vector>
}

/** The inline segments' rows as pieces in block order, with the reads and bytes it cost. */
export async function inlinePieces(
  store: ObjectStore,
  plan: ScanPlan,
  fields: readonly RowField[],
  segments: readonly InlineSegment[],
  cache: IndexCache,
): Promise<{ pieces: InlinePiece[]; rows: number; reads: number; bytes: number }> {
  const counts = { reads: 0, bytes: 0 }
  const slices = segments.flatMap(s => s.slices)
  const bytes = await readSlices(store, slices, cache, counts)
  const rangeTests: Predicate[] = [
    { field: { name: plan.rangeColumn, kind: 'u64int' }, op: 'gte', values: [BigInt(plan.range[0])] },
    { field: { name: plan.rangeColumn, kind: 'u64int' }, op: 'lte', values: [BigInt(plan.range[1])] },
  ]
  const columns = [...new Set([...plan.columns, ...plan.lookupOrder])]
  const pieces: InlinePiece[] = []
  let rows = 0
  let at = 0
  for (const s of segments) {
    const plain: Record<string, (StoredValue | null)[]> = Object.fromEntries(columns.map(c => [c, []]))
    let n = 0
    for (const slice of s.slices) {
      const got = parsing(slice.key, () => decodeRows(fields, slice.column, slice.value, bytes[at++], slice.count))
      for (const c of columns) {
        const values = got.columns[c]
        if (!values) throw new IndexObjectError(slice.key, `holds no column ${c}`)
        for (const v of values) plain[c].push(v)
      }
      n += got.length
    }
    rows += n
    if (n === 0) continue
    const decoded: Record<string, Vector> = Object.fromEntries(columns.map(c => [c, vectorOf(plan.kinds[c], plain[c])]))
    // Slices of several values, or of merged segments, follow each other: put back in the dataset's order.
    const keep = sortedBy(
      selectRows([...rangeTests, ...plan.predicates], decoded, 0, n),
      plan.lookupOrder.map(c => decoded[c]),
    )
    // One piece per range of the segment's coverage: another segment's partitions may lie between two.
    const blocks = decoded[plan.rangeColumn] as U64Vector
    let next = 0
    for (const [from, to] of s.ranges) {
      const start = next
      while (next < keep.length && blocks.values[keep[next]] <= BigInt(to)) next++
      if (next === start) continue
      const part = keep.subarray(start, next)
      const values: Record<string, Vector> = {}
      for (const c of plan.outputColumns) values[c] = takeVector(decoded[c], part)
      pieces.push({ from, to, length: part.length, values })
    }
  }
  return { pieces: pieces.sort((a, b) => a.from - b.from), rows, ...counts }
}

/**
 * The lookup-copy path: an equality on the dataset's lookup column (logs: `address`)
 * reads a partition through its copy sorted by that column, whose tight row-group
 * bounds single out the groups that may hold the values; those groups are fetched
 * whole, filtered, and their rows put back in the dataset's order.
 */
import type { Compressors, FileMetaData } from 'hyparquet'
import { selectRows } from './filter.ts'
import { ReadQueue, Resident } from './io.ts'
import { groupStartsOf, type PartitionPlan, type ScanPlan } from './plan.ts'
import type { Predicate } from './types.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { concatVectors, takeVector, valueAt, type Vector } from '../columns/vector.ts'
import { compareValues } from '../columns/compare.ts'
import { lookupPays } from '../parquet/lookup.ts'
import { groupSpan, hold, letGo } from './hold.ts'
import { columnChunk, layoutsOf, type OpenPartition, readWhole, type ScanProgress, type Selected, type Unit } from './unit.ts'

/**
 * The read of a partition through its lookup copy: the row groups whose min/max of the
 * lookup column may hold a looked-up value (the copy is sorted by it, so the bounds are
 * tight). Null when the partition's own path reads less (`lookupPays`): `rows` is what that
 * path starts from, `scanRows` what it would consider after its bloom filters and statistics
 * (its bytes estimated from the block-ordered file's data size, in the shares of the copy's).
 */
export function lookupUnit(
  queue: ReadQueue,
  plan: ScanPlan,
  p: PartitionPlan,
  rows: number,
  scanRows: number,
  metadata: FileMetaData,
  resident: Resident,
  compressors: Compressors | undefined,
): Unit | null {
  const { column, values, share } = plan.lookup!
  const groups: number[] = []
  let matched = 0
  let bytes = 0
  const known = (x: unknown): x is StoredValue => x instanceof Uint8Array || typeof x === 'bigint' || typeof x === 'string'
  metadata.row_groups.forEach((g, i) => {
    const stats = columnChunk(metadata, i, column)?.meta_data?.statistics
    const [min, max] = [stats?.min_value, stats?.max_value]
    if (known(min) && known(max) && !values.some(v => compareValues(min, v) <= 0 && compareValues(v, max) <= 0)) return
    groups.push(i)
    matched += Number(g.num_rows)
    const [start, end] = groupSpan(metadata, i)
    bytes += end - start
  })
  // The order columns too: rows of several values are re-sorted by them, asked for or not.
  const columns = [...new Set([...plan.columns, ...plan.lookupOrder])]
  const scanBytes = () => (p.tailOffset * scanRows * columnShare(metadata, plan.columns)) / Math.max(1, Number(metadata.num_rows))
  if (!lookupPays({ matched, bytes, rows, scanBytes }, share)) return null
  const stored = new Set(metadata.schema.map(e => e.name))
  const absent = new Set(columns.filter(c => !stored.has(c)))
  const part: OpenPartition = {
    plan: { ...p, key: p.lookup!.key, bytes: p.lookup!.bytes },
    queue,
    resident,
    metadata,
    groupStarts: groupStartsOf(metadata),
    absent,
    touched: new Set(),
    pages: new Map(),
    layouts: layoutsOf(metadata, { ...plan, columns }, absent, compressors),
    kinds: plan.kinds,
  }
  return { part, group: -1, start: 0, end: matched, inside: false, lookup: groups }
}

/** The share of a file's column-chunk bytes that `columns` take. */
function columnShare(metadata: FileMetaData, columns: readonly string[]): number {
  const wanted = new Set(columns)
  let all = 0
  let some = 0
  for (const g of metadata.row_groups)
    for (const c of g.columns) {
      const size = Number(c.meta_data?.total_compressed_size ?? 0)
      all += size
      if (wanted.has(c.meta_data?.path_in_schema[0] ?? '')) some += size
    }
  return all === 0 ? 1 : some / all
}

/**
 * A lookup unit: its row groups are fetched whole, in one round (neighbours merge into
 * one request), decoded, and every predicate and the range applied to their rows; rows
 * come out in the dataset's order (the copy's order for one value, re-sorted for several).
 */
export async function selectLookup(u: Unit, plan: ScanPlan, rangeTests: Predicate[], progress: ScanProgress): Promise<Selected> {
  const { part } = u
  const groups = u.lookup!
  // No group's bounds hold a looked-up value: nothing to read.
  if (groups.length === 0) return { unit: u, rows: new Int32Array(0), values: {}, scanned: true }
  const release = letGo(part, await Promise.all(groups.map(g => hold(part, groupSpan(part.metadata, g)))))
  try {
    const subunits = groups.map((g): Unit => ({
      part,
      group: g,
      start: part.groupStarts[g],
      end: part.groupStarts[g] + Number(part.metadata.row_groups[g].num_rows),
      inside: false,
    }))
    const columns = [...new Set([plan.rangeColumn, ...plan.filterColumns, ...plan.outputColumns, ...plan.lookupOrder])]
    const decoded: Record<string, Vector> = {}
    for (const column of columns) decoded[column] = concatVectors(await Promise.all(subunits.map(s => readWhole(s, column, progress))))
    const n = u.end
    progress.rowsScanned += n
    let offsets = selectRows([...rangeTests, ...plan.predicates], decoded, 0, n)
    if (plan.lookup!.values.length > 1)
      offsets = sortedBy(
        offsets,
        plan.lookupOrder.map(c => decoded[c]),
      )
    const values: Record<string, Vector> = {}
    for (const column of plan.outputColumns) values[column] = takeVector(decoded[column], offsets)
    return { unit: u, rows: offsets, values, scanned: true }
  } finally {
    release()
  }
}

/** `rows` ordered by the values of `keys` (the dataset's order columns; nulls first), ties in row order. */
export function sortedBy(rows: Int32Array, keys: readonly Vector[]): Int32Array {
  return rows.slice().sort((a, b) => {
    for (const k of keys) {
      if (k.type === 'u64' && k.valid === null) {
        if (k.values[a] !== k.values[b]) return k.values[a] < k.values[b] ? -1 : 1
        continue
      }
      const [x, y] = [valueAt(k, a), valueAt(k, b)]
      const c = x === null || y === null ? (x === null ? 0 : 1) - (y === null ? 0 : 1) : compareValues(x, y)
      if (c !== 0) return c
    }
    return a - b
  })
}

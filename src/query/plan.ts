/**
 * The scan plan, as plain data computed without I/O: which partitions and row groups
 * the manifest says can hold rows of the range, which stored columns each phase of
 * the scan reads, and the pruning filter handed to hyparquet for what the manifest
 * cannot see (statistics, bloom filters, page index). Pruning is conservative: a row
 * group is left out only when its block range misses the query range.
 */
import type { ParquetQueryFilter } from 'hyparquet'
import { columnOf, isStored } from '../schema/dataset.ts'
import type { BlockRange, PartitionEntry } from '../manifest/types.ts'
import { decideVirtual, pruningFilterOf } from './filter.ts'
import type { Predicate, QuerySpec } from './types.ts'

export interface PartitionPlan {
  key: string
  /** Object size and where its tail (indexes, bloom filters, footer) starts. */
  bytes: number
  tailOffset: number
  /** Ordinals of the row groups whose block range meets the query range, ascending. */
  rowGroups: number[]
  /** Per planned row group: its blocks all lie inside the range, so its rows need no range check. */
  inside: boolean[]
  /** First row of the first planned group and end of the last (file row numbers). */
  rowStart: number
  rowEnd: number
}

export interface ScanPlan {
  range: BlockRange
  /** Stored column holding the block number. */
  rangeColumn: string
  /** Rows are sorted by the range key inside a file, so range bounds can be found by bisection. */
  sortedByRange: boolean
  /** Predicates on stored columns, applied exactly to rows. */
  predicates: Predicate[]
  /** Stored columns the predicates read (phase one, with the range key where needed), most selective first. */
  filterColumns: string[]
  /** Stored columns behind the output fields, in field order, each once. */
  outputColumns: string[]
  /** Every column the scan may read. */
  columns: string[]
  pruningFilter: ParquetQueryFilter
  /** The predicates hyparquet prunes with (a subset of `predicates`). */
  pushed: Predicate[]
  /** A predicate on a virtual field excludes every row: nothing is read. */
  empty: boolean
  partitions: PartitionPlan[]
  /** Row groups in the partitions given to the planner. */
  rowGroupsTotal: number
}

const unique = (names: string[]) => [...new Set(names)]

/**
 * Likely selectivity, most selective first: equality on a bloom-filtered field (rare
 * values are what bloom filters are declared for), other equality, then order predicates.
 * Phase one decodes the first column whole and later ones only where rows still match.
 */
function selectivityRank(p: Predicate): number {
  if (p.op === 'eq' || p.op === 'in') return p.field.bloom && !p.values.includes(null) ? 0 : 1
  return 2
}

/** Plans a scan of `partitions` (from the manifest) for the blocks of `range`. */
export function planScan(
  partitions: readonly PartitionEntry[],
  spec: Pick<QuerySpec, 'chain' | 'dataset' | 'predicates' | 'fields'>,
  range: BlockRange,
): ScanPlan {
  const { dataset } = spec
  const rangeColumn = dataset.rangeKey
  const { stored, never } = decideVirtual(spec.predicates, spec.chain.id)
  const filterColumns = unique([...stored].sort((a, b) => selectivityRank(a) - selectivityRank(b)).map(p => columnOf(p.field)))
  const outputColumns = unique(spec.fields.filter(isStored).map(columnOf))
  const { filter, pushed } = pruningFilterOf(stored, rangeColumn, range)
  const planned = never ? [] : partitions.flatMap(p => planPartition(p, range))
  return {
    range,
    rangeColumn,
    sortedByRange: dataset.orderBy[0] === rangeColumn,
    predicates: stored,
    filterColumns,
    outputColumns,
    columns: unique([rangeColumn, ...filterColumns, ...outputColumns]),
    pruningFilter: filter,
    pushed,
    empty: never,
    partitions: planned,
    rowGroupsTotal: partitions.reduce((n, p) => n + p.rowGroups.length, 0),
  }
}

function planPartition(p: PartitionEntry, [from, to]: BlockRange): PartitionPlan[] {
  if (p.to < from || p.from > to) return []
  const rowGroups: number[] = []
  const inside: boolean[] = []
  let rowStart = -1
  let rowEnd = 0
  let row = 0
  p.rowGroups.forEach((g, i) => {
    if (g.rows > 0 && g.from <= to && g.to >= from) {
      if (rowStart < 0) rowStart = row
      rowEnd = row + g.rows
      rowGroups.push(i)
      inside.push(g.from >= from && g.to <= to)
    }
    row += g.rows
  })
  if (rowGroups.length === 0) return []
  return [{ key: p.key, bytes: p.bytes, tailOffset: p.tailOffset, rowGroups, inside, rowStart, rowEnd }]
}

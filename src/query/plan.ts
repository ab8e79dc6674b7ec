/**
 * The scan plan, as plain data computed without I/O: which stored columns each phase
 * of the scan reads, the pruning filter handed to hyparquet for what the manifest
 * cannot see (statistics, bloom filters, page index), and, partition by partition as
 * the manifest is read, which row groups can hold rows of the range. Pruning is
 * conservative: a row group is left out only when its block range misses the range.
 */
import type { FileMetaData, ParquetQueryFilter } from 'hyparquet'
import type { Candidate } from '../index/types.ts'
import { columnOf, isStored } from '../schema/dataset.ts'
import type { BlockRange, ByteSpan, LookupEntry, PartitionEntry } from '../manifest/types.ts'
import type { Kind, StoredValue } from '../schema/kinds.ts'
import { decideVirtual, pruningFilterOf } from './filter.ts'
import type { Predicate, QuerySpec } from './types.ts'
import { lookupShare } from '../parquet/lookup.ts'

export interface PartitionPlan {
  key: string
  /** Object size and where its tail (page indexes, bloom filters, footer) starts. */
  bytes: number
  tailOffset: number
  /** Where the footer starts and each column's bloom span, when the manifest has them, with their checksums. */
  footerOffset?: number
  blooms?: Record<string, ByteSpan>
  indexCrc?: number
  footerCrc?: number
  /** Ordinals of the row groups whose block range meets the query range, ascending. */
  rowGroups: number[]
  /** Per planned row group: its blocks all lie inside the range, so its rows need no range check. */
  inside: boolean[]
  /** First row of the first planned group and end of the last (file row numbers). */
  rowStart: number
  rowEnd: number
  lookup?: LookupEntry
  /**
   * Opened from the value index, not the manifest: the row groups named by the index (file
   * ordinals). `rowGroups`, `inside`, `rowStart` and `rowEnd` are then known only once the
   * footer is read (`resolveIndexed`); the tail is opened without bloom filters, which the index replaces.
   */
  indexed?: { rowGroups: number[]; bloomOffset?: number; rows: number }
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
  /** The kind of every stored column of the dataset: how its pages decode. */
  kinds: Record<string, Kind>
  pruningFilter: ParquetQueryFilter
  /** The predicates row groups are pruned with (a subset of `predicates`). */
  pushed: Predicate[]
  /** Of `pushed`, the order predicates on fixed-length bytes: pruned by the scanner from statistics, not by hyparquet. */
  byteOrder: Predicate[]
  /** Columns of pushed equality predicates: the only ones whose bloom filters pruning reads. */
  bloomColumns: string[]
  /** A predicate on a virtual field excludes every row: nothing is read. */
  empty: boolean
  /** Equality on the dataset's lookup column: partitions with a lookup copy may be read through it. */
  lookup?: { column: string; values: StoredValue[]; share: number }
  /** The dataset's order (stored columns): rows read through a lookup copy are put back in it. */
  lookupOrder: string[]
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

/** Plans a scan for the blocks of `range`; the partitions are planned one by one with `planPartition`. */
export function planScan(spec: Pick<QuerySpec, 'chain' | 'dataset' | 'predicates' | 'fields'>, range: BlockRange): ScanPlan {
  const { dataset } = spec
  const rangeColumn = dataset.rangeKey
  const { stored, never } = decideVirtual(spec.predicates, spec.chain.id)
  const filterColumns = unique([...stored].sort((a, b) => selectivityRank(a) - selectivityRank(b)).map(p => columnOf(p.field)))
  const outputColumns = unique(spec.fields.filter(isStored).map(columnOf))
  const { filter, pushed, byteOrder } = pruningFilterOf(stored, rangeColumn, range)
  return {
    range,
    rangeColumn,
    sortedByRange: dataset.orderBy[0] === rangeColumn,
    predicates: stored,
    filterColumns,
    outputColumns,
    columns: unique([rangeColumn, ...filterColumns, ...outputColumns]),
    kinds: Object.fromEntries(dataset.fields.filter(isStored).map(f => [columnOf(f), f.kind])),
    pruningFilter: filter,
    pushed,
    byteOrder,
    bloomColumns: unique(pushed.filter(p => p.op === 'eq' || p.op === 'in').map(p => columnOf(p.field))),
    empty: never,
    ...lookupOf(dataset, stored),
    lookupOrder: [...dataset.orderBy],
  }
}

/** The lookup values of a query: an `eq`/`in` without `%00` on the dataset's lookup column (the first, if several). */
function lookupOf(dataset: QuerySpec['dataset'], predicates: readonly Predicate[]): Pick<ScanPlan, 'lookup'> {
  const column = dataset.lookup?.column
  const p = predicates.find(
    p => columnOf(p.field) === column && (p.op === 'eq' || p.op === 'in') && p.values.length > 0 && !p.values.includes(null),
  )
  return p && column ? { lookup: { column, values: p.values as StoredValue[], share: lookupShare(dataset.lookup!) } } : {}
}

/** The row groups of a manifest partition that meet `range`, or null when none does. */
export function planPartition(p: PartitionEntry, [from, to]: BlockRange): PartitionPlan | null {
  if (p.to < from || p.from > to) return null
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
  if (rowGroups.length === 0) return null
  const { footerOffset, blooms, indexCrc, footerCrc } = p
  const layout = footerOffset !== undefined && blooms ? { footerOffset, blooms, indexCrc, footerCrc } : {}
  return {
    key: p.key,
    bytes: p.bytes,
    tailOffset: p.tailOffset,
    ...layout,
    rowGroups,
    inside,
    rowStart,
    rowEnd,
    ...(p.lookup ? { lookup: p.lookup } : {}),
  }
}

/** The plan of a partition the value index names, to be completed from its footer by `resolveIndexed`. */
export function planIndexedPartition(c: Candidate): PartitionPlan {
  const e = c.entry
  return {
    key: e.key,
    bytes: e.bytes,
    tailOffset: e.tailOffset,
    ...(e.footerOffset !== undefined ? { footerOffset: e.footerOffset } : {}),
    ...(e.indexCrc !== undefined ? { indexCrc: e.indexCrc } : {}),
    ...(e.footerCrc !== undefined ? { footerCrc: e.footerCrc } : {}),
    rowGroups: [],
    inside: [],
    rowStart: 0,
    rowEnd: 0,
    ...(e.lookup ? { lookup: e.lookup } : {}),
    indexed: { rowGroups: c.rowGroups, rows: e.rows, ...(e.bloomOffset !== undefined ? { bloomOffset: e.bloomOffset } : {}) },
  }
}

/**
 * Completes an indexed partition's plan from its footer: of the row groups the index named,
 * those whose block range (range-key statistics) meets `range`, as `planPartition` does from the
 * manifest. Null when none does.
 */
export function resolveIndexed(
  p: PartitionPlan,
  metadata: FileMetaData,
  rangeColumn: string,
  [from, to]: BlockRange,
): PartitionPlan | null {
  const rowGroups: number[] = []
  const inside: boolean[] = []
  let rowStart = -1
  let rowEnd = 0
  const starts = groupStartsOf(metadata)
  for (const g of p.indexed!.rowGroups) {
    const group = metadata.row_groups[g]
    if (!group) throw new Error(`partition ${p.key} has no row group ${g} (the index names it)`)
    const rows = Number(group.num_rows)
    const stats = group.columns.find(c => c.meta_data?.path_in_schema[0] === rangeColumn)?.meta_data?.statistics
    const [min, max] = [stats?.min_value, stats?.max_value]
    const known = typeof min === 'bigint' && typeof max === 'bigint'
    if (rows === 0 || (known && (Number(max) < from || Number(min) > to))) continue
    if (rowStart < 0) rowStart = starts[g]
    rowEnd = starts[g] + rows
    rowGroups.push(g)
    inside.push(known && Number(min) >= from && Number(max) <= to)
  }
  return rowGroups.length ? { ...p, rowGroups, inside, rowStart, rowEnd } : null
}

/** File row number where each row group starts. */
export function groupStartsOf(metadata: FileMetaData): number[] {
  const starts: number[] = []
  let row = 0
  for (const g of metadata.row_groups) {
    starts.push(row)
    row += Number(g.num_rows)
  }
  return starts
}

/**
 * Executes a scan plan: Parquet partitions in object storage → ordered RowBatches.
 *
 * Per partition, one round of parallel ranged reads opens the file (page indexes,
 * footer, and the bloom filters of the pushed equality columns only; kept across
 * queries in the TailCache); row groups are then pruned in memory by statistics,
 * bloom filters and the range key's page index (hyparquet `parquetScan`), and by the
 * statistics of byte-order predicates (`excludedByByteOrder`). Each
 * candidate row range is read in two phases, the way DuckDB does it: first only the
 * filter columns (and the range key where the group straddles the range's ends),
 * evaluated exactly, a dictionary column once per distinct value; then only the pages
 * of the output columns that hold matching rows (offset index). With no predicate and
 * a group wholly inside the range, the second phase is the only one; a group the range
 * cuts is fetched whole in the first. An equality on the dataset's lookup column reads
 * a partition through its lookup copy instead when that is smaller (lookup-scan.ts).
 * How a unit's columns are read is unit.ts; keeping fetched bytes for later reads, hold.ts.
 *
 * Three stages run with bounded look-ahead and keep order: opening partitions,
 * selecting rows, reading output. The byte reads of one event-loop turn are merged
 * per object (see io.ts), so a selective query costs about three rounds: tails,
 * filter columns, output columns (one, warm, through a lookup copy).
 */
import { parquetMetadata, parquetScan } from 'hyparquet'
import type { Compressors, FileMetaData, ParquetQueryFilter, ParquetRowRange } from 'hyparquet'
import type { FieldDecl } from '../schema/dataset.ts'
import { columnOf } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import type { LookupEntry } from '../manifest/types.ts'
import { lowerBound, selectCodes, selectRows, statisticsExclude, virtualValue } from './filter.ts'
import {
  indexedTailRegions,
  partitionFile,
  readTail,
  ReadQueue,
  Resident,
  tailRegions,
  type ReadQueueOptions,
  type TailCache,
  type TailRegion,
} from './io.ts'
import { CorruptObjectError } from '../store/types.ts'
import { mapOrdered } from './ordered.ts'
import { groupStartsOf, resolveIndexed, type PartitionPlan, type ScanPlan } from './plan.ts'
import type { Predicate } from './types.ts'
import { type RowBatch, sliceBatch } from '../columns/batch.ts'
import { constantVector, takeVector, type U64Vector, type Vector } from '../columns/vector.ts'
import { filterStream } from '../columns/stream.ts'
import { groupSpan, hold, letGo, prefetch } from './hold.ts'
import { lookupUnit, selectLookup } from './lookup-scan.ts'
import type { ColumnBuffers } from './column-buffers.ts'
import type { ReadBuffers } from './read-buffers.ts'
import type { InlinePiece } from './inline-rows.ts'
import {
  columnChunk,
  count,
  layoutsOf,
  type OpenPartition,
  readCoded,
  readRows,
  readWhole,
  type ScanProgress,
  type Selected,
  takeCodes,
  touch,
  dropped,
  type Unit,
} from './unit.ts'

export interface ScanOptions {
  /** Rows per batch at most; a candidate range longer than this is split (default 10,000). */
  maxBatchRows?: number
  /** Partitions opened ahead of the one being emitted (default 16: a selective query opens them all in one round). */
  partitionLookAhead?: number
  /**
   * Filter-column values (candidate rows × filter columns) in flight at once (default
   * 800,000: the filter round of a rare-address + topic query over a million rows is one
   * round; decoded values cost 8 bytes each when dictionary-encoded, ~100 when not).
   */
  selectLookAheadValues?: number
  /** Matching rows whose output columns may be in flight or buffered at once (default 30,000). */
  outputLookAheadRows?: number
  readQueue?: ReadQueueOptions
  /** Partition tails and footers kept across queries (an isolate's or server's cache); default none. */
  tails?: TailCache
  /** Memory data is read into and reused by later scans (the Node server's, over local files); default none. */
  buffers?: ReadBuffers
  /** Memory the partitions' data pages decode into, lent again once their vectors are consumed (the Node server's); default none. */
  columns?: ColumnBuffers
  /**
   * Page decompressors by codec (default: hyparquet's JavaScript snappy). Only the page
   * decoder calls them, one page at a time, so one may return a view it reuses (src/parquet/snappy.ts).
   */
  compressors?: Compressors
  /**
   * Look ahead little at first and more as results are consumed: for a consumer that
   * may stop early (a `limit`), so it does not read far beyond what it takes.
   */
  rampUp?: boolean
}

/**
 * The rows of `partitions` (planned for `plan`, in block order, typically produced
 * while the manifest is read) as batches in (range key, index) order. `fields` are
 * the output fields (virtual ones filled with their constant for `chainId`).
 */
export async function* scanPlan(
  store: ObjectStore,
  plan: ScanPlan,
  partitions: AsyncIterable<PartitionPlan | InlinePiece>,
  fields: readonly FieldDecl[],
  chainId: number,
  progress: ScanProgress,
  options: ScanOptions = {},
): AsyncGenerator<RowBatch> {
  if (plan.empty) return
  const maxBatchRows = options.maxBatchRows ?? 10_000
  const queue = new ReadQueue(store, { ...options.readQueue, buffers: options.buffers })
  const rangeTests = rangePredicates(plan)

  /** A partition's tail (from the cache when there is one) and its parsed footer. */
  const tail = async (key: string, regions: TailRegion[]): Promise<{ metadata: FileMetaData; resident: Resident }> => {
    const cached = options.tails?.entry(key) ?? { resident: new Resident() }
    const footer = await readTail(queue, key, regions, cached.resident)
    cached.metadata ??= footerOf(key, footer)
    options.tails?.trim(key)
    return { metadata: cached.metadata, resident: new Resident(cached.resident) }
  }
  const copyTail = (lookup: LookupEntry) =>
    tail(lookup.key, [{ start: lookup.tailOffset, end: lookup.bytes, crc: lookup.tailCrc, what: 'the tail' }])
  const open = async (planned: PartitionPlan | InlinePiece): Promise<(Unit | Answered)[]> => {
    // Rows the index answered: already filtered and ordered, only the output batch is left to build.
    if ('values' in planned) return [{ answered: answeredBatch(planned, plan, fields, chainId) }]
    if (planned.indexed) {
      // The index said the value may be here: its copy alone answers, unless the value is common in it.
      if (plan.lookup && planned.lookup) {
        const copy = await copyTail(planned.lookup)
        const unit = lookupUnit(
          queue,
          plan,
          planned,
          planned.indexed.rows,
          planned.indexed.rows,
          copy.metadata,
          copy.resident,
          options.compressors,
        )
        if (unit) {
          progress.partitionsRead++
          return [unit]
        }
      }
      const main = await tail(planned.key, indexedTailRegions(planned))
      progress.partitionsRead++
      const p = resolveIndexed(planned, main.metadata, plan.rangeColumn, plan.range)
      return p ? unitsOf(await openPartition(queue, plan, p, main.metadata, main.resident, options), plan, maxBatchRows) : []
    }
    const p = planned
    // With a lookup copy, both tails are read in the same round: the partition's bloom
    // filters rule out an absent value without touching the copy's data.
    const lookup = plan.lookup && p.lookup ? p.lookup : undefined
    const [main, copy] = await Promise.all([tail(p.key, tailRegions(p, plan.bloomColumns)), lookup && copyTail(lookup)])
    progress.partitionsRead++
    const part = await openPartition(queue, plan, p, main.metadata, main.resident, options)
    const unit =
      copy && part.scan!.ranges.length > 0
        ? lookupUnit(queue, plan, p, p.rowEnd - p.rowStart, rangeRows(part.scan!.ranges), copy.metadata, copy.resident, options.compressors)
        : null
    return unit ? [unit] : unitsOf(part, plan, maxBatchRows)
  }
  async function* units(): AsyncGenerator<Unit | Answered> {
    for await (const list of mapOrdered(partitions, open, { count: options.partitionLookAhead ?? 16, rampUp: options.rampUp })) {
      yield* list
    }
  }
  const select = async (u: Unit | Answered): Promise<Selected | Answered> =>
    'answered' in u ? u : u.lookup ? selectLookup(u, plan, rangeTests, progress) : selectUnit(u, plan, rangeTests, progress)
  const selected = mapOrdered(units(), select, {
    count: 64,
    weight: u => ('answered' in u ? 1 : (u.end - u.start) * Math.max(1, plan.filterColumns.length + (u.inside ? 0 : 1))),
    maxWeight: options.selectLookAheadValues ?? 800_000,
    rampUp: options.rampUp,
  })
  const rowsOf = (s: Selected | Answered) => ('answered' in s ? s.answered.length : count(s))
  const nonEmpty = filterStream(selected, s => rowsOf(s) > 0)
  const output = async (s: Selected | Answered) => ('answered' in s ? s.answered : outputUnit(s, plan, fields, chainId, progress))
  for await (const batch of mapOrdered(nonEmpty, output, {
    count: 64,
    weight: rowsOf,
    maxWeight: options.outputLookAheadRows ?? 30_000,
    rampUp: options.rampUp,
  })) {
    // A lookup unit is a whole partition's matches: cut to the batch size like any other.
    for (let at = 0; at < batch.length; at += maxBatchRows)
      yield batch.length <= maxBatchRows ? batch : sliceBatch(batch, at, Math.min(batch.length, at + maxBatchRows))
  }
  // Every read has been consumed (batches hold copies of the values): its memory may serve the next scan.
  // A scan stopped early never gets here, and leaves its memory to the garbage collector.
  queue.release()
}

/** Rows in `ranges`. */
const rangeRows = (ranges: readonly ParquetRowRange[]): number => ranges.reduce((n, r) => n + r.rowEnd - r.rowStart, 0)

/** Rows the value index answered (an inline piece) as an output batch, in the scan's pipeline. */
interface Answered {
  answered: RowBatch
}

function answeredBatch(piece: InlinePiece, plan: ScanPlan, fields: readonly FieldDecl[], chainId: number): RowBatch {
  const columns: RowBatch['columns'] = {}
  for (const f of fields)
    columns[f.name] = f.virtual === undefined ? piece.values[columnOf(f)] : constantVector(f.kind, virtualValue(f, chainId), piece.length)
  if (plan.outputColumns.some(c => !(c in piece.values))) throw new Error('an inline piece lacks an output column')
  return { length: piece.length, columns }
}

/** A partition's parsed footer; one that does not parse is a damaged object, named. */
function footerOf(key: string, footer: Uint8Array): FileMetaData {
  try {
    return parquetMetadata(footer)
  } catch (error) {
    throw new CorruptObjectError(key, `its footer does not parse (${(error as Error).message})`, { cause: error })
  }
}

/** Range-key predicates for files not sorted by the range key (bisection is used otherwise). */
function rangePredicates(plan: ScanPlan): Predicate[] {
  const field: FieldDecl = { name: plan.rangeColumn, kind: 'u64int' }
  return [
    { field, op: 'gte', values: [BigInt(plan.range[0])] },
    { field, op: 'lte', values: [BigInt(plan.range[1])] },
  ]
}

async function openPartition(
  queue: ReadQueue,
  plan: ScanPlan,
  p: PartitionPlan,
  metadata: FileMetaData,
  resident: Resident,
  options: Pick<ScanOptions, 'compressors' | 'columns'>,
): Promise<OpenPartition> {
  const file = partitionFile(queue, p.key, p.bytes, resident)
  // A file written before a column was declared lacks it: its values read as null.
  const stored = new Set(metadata.schema.map(e => e.name))
  const absent = new Set(plan.columns.filter(c => !stored.has(c)))
  if (absent.has(plan.rangeColumn)) throw new Error(`partition ${p.key} has no range key column ${plan.rangeColumn}`)
  const scan = await parquetScan({
    file,
    metadata,
    // Only pruning is asked of hyparquet (pages are located and read here): the fewer
    // columns, the fewer offset indexes it parses per query.
    columns: [plan.rangeColumn],
    pruningFilter: absent.size ? withoutColumns(plan.pruningFilter, absent) : plan.pruningFilter,
    // The index named the row groups of an indexed partition: its bloom filters would only cost reads.
    useBloomFilters: !p.indexed,
    usePageIndex: true,
    rowStart: p.rowStart,
    rowEnd: p.rowEnd,
    utf8: false,
  })
  return {
    plan: p,
    queue,
    resident,
    scan,
    metadata,
    groupStarts: groupStartsOf(metadata),
    absent,
    touched: new Set(),
    pages: new Map(),
    layouts: layoutsOf(metadata, plan, absent, options.compressors, options.columns),
    kinds: plan.kinds,
    ...(options.columns ? { columns: options.columns } : {}),
  }
}

/** The pruning filter without conditions on `columns` (dropping a condition only prunes less). */
function withoutColumns(filter: ParquetQueryFilter, columns: Set<string>): ParquetQueryFilter {
  const parts = '$and' in filter ? (filter.$and as ParquetQueryFilter[]) : [filter]
  return { $and: parts.filter(f => !Object.keys(f).some(c => columns.has(c))) } as ParquetQueryFilter
}

/** Candidate ranges of planned row groups, cut to at most `maxRows` rows each. */
function unitsOf(part: OpenPartition, scan: ScanPlan, maxRows: number): Unit[] {
  const { plan, groupStarts } = part
  const units: Unit[] = []
  let g = 0
  for (const { rowStart, rowEnd } of part.scan?.ranges ?? []) {
    while (g + 1 < groupStarts.length && groupStarts[g + 1] <= rowStart) g++
    const planned = plan.rowGroups.indexOf(g)
    if (planned < 0 || excludedByByteOrder(part, scan, g)) continue
    for (let start = rowStart; start < rowEnd; start += maxRows) {
      units.push({ part, group: g, start, end: Math.min(rowEnd, start + maxRows), inside: plan.inside[planned] })
    }
  }
  return units
}

/** Whether row group `g`'s statistics rule out a byte-order predicate (a column the file lacks reads as null, matching none). */
function excludedByByteOrder(part: OpenPartition, scan: ScanPlan, g: number): boolean {
  return scan.byteOrder.some(p => {
    const column = columnOf(p.field)
    if (part.absent.has(column)) return true
    const stats = columnChunk(part.metadata, g, column)?.meta_data?.statistics
    return statisticsExclude(p, stats?.min_value, stats?.max_value)
  })
}

/** Largest row group fetched whole when the range cuts it (see selectUnit). */
const WHOLE_GROUP_MAX = 2 * 1024 * 1024

/**
 * Phase one: find the unit's matching rows. The chunks of every filter column are
 * fetched together (one round); then columns are decoded one at a time, most
 * selective first, each only in the pages that hold rows still matching, so a rare
 * address spares decoding its topic columns.
 */
async function selectUnit(u: Unit, plan: ScanPlan, rangeTests: Predicate[], progress: ScanProgress): Promise<Selected> {
  const checkRange = !u.inside
  const bisect = checkRange && plan.sortedByRange
  const order = checkRange && !bisect ? [plan.rangeColumn, ...plan.filterColumns.filter(c => c !== plan.rangeColumn)] : plan.filterColumns
  const columns = bisect ? [...new Set([plan.rangeColumn, ...order])] : order
  if (columns.length === 0) return { unit: u, rows: null, values: {}, scanned: false }
  touch(u, progress)
  progress.rowsScanned += u.end - u.start
  // A group the range cuts (one block, the ends of a range) is fetched whole: one request
  // instead of one for the range key and then one per output column, in one round
  // instead of two; its pages are kept until the output phase has read them.
  const span = groupSpan(u.part.metadata, u.group)
  // A group the value index named is likely to hold output rows: fetched whole too when small,
  // so its filter and output columns are one read instead of two rounds.
  const whole = (!u.inside || u.part.plan.indexed !== undefined) && span[1] - span[0] <= WHOLE_GROUP_MAX
  const release = await (whole ? hold(u.part, span).then(b => letGo(u.part, [b])) : prefetch(u, columns))
  let keep = false
  const wholes: Record<string, Vector> = {}
  /** The copies of selected rows go into the scan's column memory too. */
  const memory = u.part.columns
  try {
    const n = u.end - u.start
    let lo = 0
    let hi = n
    if (bisect) {
      const keys = (await readWhole(u, plan.rangeColumn, progress)) as U64Vector
      wholes[plan.rangeColumn] = keys
      lo = lowerBound(keys, 0, n, BigInt(plan.range[0]))
      hi = lowerBound(keys, lo, n, BigInt(plan.range[1]) + 1n)
    }
    // Offsets (from u.start) of rows still matching; values of columns read so far, aligned with them.
    let offsets: Int32Array | null = null
    const aligned: Record<string, Vector> = {}
    for (const column of order) {
      const predicates = [
        ...(column === plan.rangeColumn && checkRange && !bisect ? rangeTests : []),
        ...plan.predicates.filter(p => columnOf(p.field) === column),
      ]
      if (offsets === null) {
        const coded = column in wholes ? null : await readCoded(u, column, progress)
        if (coded) {
          offsets = selectCodes(predicates, coded.dictionary, coded.codes, lo, hi)
          if (plan.outputColumns.includes(column)) aligned[column] = takeCodes(coded.dictionary, coded.codes, offsets, memory)
        } else {
          const data = wholes[column] ?? (await readWhole(u, column, progress))
          offsets = selectRows(predicates, { [column]: data }, lo, hi)
          if (plan.outputColumns.includes(column)) aligned[column] = takeVector(data, offsets, 0, memory)
          if (!(column in wholes)) dropped(u, data)
        }
      } else {
        const values = await readRows(u, column, shifted(offsets, u.start), progress)
        const keep = selectRows(predicates, { [column]: values }, 0, values.length)
        if (keep.length < offsets.length) {
          const before: Int32Array = offsets
          offsets = new Int32Array(keep.length)
          for (let i = 0; i < keep.length; i++) offsets[i] = before[keep[i]]
          for (const c of Object.keys(aligned)) {
            const all = aligned[c]
            aligned[c] = takeVector(all, keep, 0, memory)
            dropped(u, all)
          }
        }
        if (plan.outputColumns.includes(column))
          aligned[column] = keep.length < values.length ? takeVector(values, keep, 0, memory) : values
        if (aligned[column] !== values) dropped(u, values)
      }
      if (offsets.length === 0) break
    }
    if (offsets === null) {
      offsets = new Int32Array(hi - lo)
      for (let i = 0; i < offsets.length; i++) offsets[i] = lo + i
    }
    if (offsets.length === 0) return { unit: u, rows: offsets, values: {}, scanned: true }
    for (const column of Object.keys(wholes))
      if (!(column in aligned) && plan.outputColumns.includes(column)) aligned[column] = takeVector(wholes[column], offsets, 0, memory)
    const rows = offsets.length === n ? null : shifted(offsets, u.start)
    keep = whole
    return { unit: u, rows, values: aligned, scanned: true, ...(whole ? { release } : {}) }
  } finally {
    if (!keep) release()
    // The group's whole columns served only to select (the rows are copied out of them).
    for (const v of Object.values(wholes)) dropped(u, v)
  }
}

/** `offsets` + `by`, in a loop (a callback per row costs more than the add). */
function shifted(offsets: Int32Array, by: number): Int32Array {
  const out = new Int32Array(offsets.length)
  for (let i = 0; i < offsets.length; i++) out[i] = offsets[i] + by
  return out
}

/** Phase two: read the remaining output columns for the matching rows and build the batch. */
async function outputUnit(
  s: Selected,
  plan: ScanPlan,
  fields: readonly FieldDecl[],
  chainId: number,
  progress: ScanProgress,
): Promise<RowBatch> {
  const { unit: u, rows } = s
  const length = count(s)
  const missing = plan.outputColumns.filter(c => !(c in s.values))
  if (!s.scanned) progress.rowsScanned += length
  let read: Vector[]
  try {
    read = await Promise.all(missing.map(c => (rows ? readRows(u, c, rows, progress) : readWhole(u, c, progress))))
  } finally {
    s.release?.()
  }
  const stored: Record<string, Vector> = { ...s.values }
  missing.forEach((c, i) => (stored[c] = read[i]))
  const columns: RowBatch['columns'] = {}
  for (const f of fields) {
    columns[f.name] = f.virtual === undefined ? stored[columnOf(f)] : constantVector(f.kind, virtualValue(f, chainId), length)
  }
  return { length, columns }
}

/**
 * Executes a scan plan: Parquet partitions in object storage → ordered RowBatches.
 *
 * Per partition, one round of parallel ranged reads opens the file (page indexes,
 * footer, and the bloom filters of the pushed equality columns only; kept across
 * queries in the TailCache); row groups are then pruned in memory by statistics,
 * bloom filters and the range key's page index (hyparquet `parquetScan`). Each
 * candidate row range is read in two phases, the way DuckDB does it: first only the
 * filter columns (and the range key where the group straddles the range's ends),
 * evaluated exactly, a dictionary column once per distinct value; then only the pages
 * of the output columns that hold matching rows (offset index). With no predicate and
 * a group wholly inside the range, the second phase is the only one; a group the range
 * cuts is fetched whole in the first. An equality on the dataset's lookup column reads
 * a partition through its lookup copy instead when that is smaller (`selectLookup`).
 * Pages decode straight into packed vectors (src/lake/pages.ts).
 *
 * Three stages run with bounded look-ahead and keep order: opening partitions,
 * selecting rows, reading output. The byte reads of one event-loop turn are merged
 * per object (see io.ts), so a selective query costs about three rounds: tails,
 * filter columns, output columns (one, warm, through a lookup copy).
 */
import { parquetMetadata, parquetScan, readOffsetIndex } from 'hyparquet'
import type { ColumnChunk, ColumnMetaData, Compressors, FileMetaData, OffsetIndex, ParquetQueryFilter, ParquetScan } from 'hyparquet'
import type { FieldDecl } from '../schema/dataset.ts'
import { columnOf } from '../schema/dataset.ts'
import { decodeCodes, decodeDictionary, decodePages, type ChunkLayout } from '../lake/pages.ts'
import type { ObjectStore } from '../store/types.ts'
import { compareValues, lowerBound, selectCodes, selectRows, virtualValue } from './filter.ts'
import { partitionFile, readTail, ReadQueue, Resident, tailRanges, type ReadQueueOptions, type TailCache } from './io.ts'
import { mapOrdered } from './ordered.ts'
import type { PartitionPlan, ScanPlan } from './plan.ts'
import type { Predicate, RowBatch } from './types.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { LOOKUP_SHARE } from '../lake/lookup.ts'
import { sliceBatch } from './batch.ts'
import { concatVectors, constantVector, shapeOf, takeVector, type U64Vector, type Vector } from './vector.ts'

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
  /**
   * Page decompressors by codec (default: hyparquet's JavaScript snappy). Only the page
   * decoder calls them, one page at a time, so one may return a view it reuses (src/lake/snappy.ts).
   */
  compressors?: Compressors
  /**
   * Look ahead little at first and more as results are consumed: for a consumer that
   * may stop early (a `limit`), so it does not read far beyond what it takes.
   */
  rampUp?: boolean
}

/** What the scan did so far; mutated while batches are produced. */
export interface ScanProgress {
  partitionsRead: number
  rowGroupsRead: number
  rowsScanned: number
}

interface OpenPartition {
  plan: PartitionPlan
  queue: ReadQueue
  resident: Resident
  /** hyparquet's pruning of the row groups; none for a lookup copy. */
  scan?: ParquetScan
  metadata: FileMetaData
  /** File row number where each row group starts. */
  groupStarts: number[]
  /** Planned columns the file does not have (declared after it was written): all null. */
  absent: Set<string>
  /** Group ordinals whose data was read, for `rowGroupsRead`. */
  touched: Set<number>
  /** Page locations per `group/column` from the offset index (null: no index). */
  pages: Map<string, OffsetIndex['page_locations'] | null>
  /** How each planned column's chunks decode. */
  layouts: Map<string, ChunkLayout>
  kinds: ScanPlan['kinds']
}

/** A candidate row range `[start, end)` (file rows) inside one row group. */
interface Unit {
  part: OpenPartition
  group: number
  start: number
  end: number
  /** The group's blocks all lie inside the range. */
  inside: boolean
  /** A read through the partition's lookup copy (`part` is that copy): these row groups, whole. */
  lookup?: number[]
}

interface Selected {
  unit: Unit
  /** Matching file rows, ascending; null = every row of the unit. */
  rows: Int32Array | null
  /** Output columns already read in phase one, for the matching rows. */
  values: Record<string, Vector>
  /** Phase one decoded the unit (its rows count as scanned already). */
  scanned: boolean
  /** Lets go of data phase one fetched for phase two. */
  release?: () => void
}

const count = (s: Selected) => (s.rows ? s.rows.length : s.unit.end - s.unit.start)

/**
 * The rows of `partitions` (planned for `plan`, in block order, typically produced
 * while the manifest is read) as batches in (range key, index) order. `fields` are
 * the output fields (virtual ones filled with their constant for `chainId`).
 */
export async function* scanPlan(
  store: ObjectStore,
  plan: ScanPlan,
  partitions: AsyncIterable<PartitionPlan>,
  fields: readonly FieldDecl[],
  chainId: number,
  progress: ScanProgress,
  options: ScanOptions = {},
): AsyncGenerator<RowBatch> {
  if (plan.empty) return
  const maxBatchRows = options.maxBatchRows ?? 10_000
  const queue = new ReadQueue(store, options.readQueue)
  const rangeTests = rangePredicates(plan)

  /** A partition's tail (from the cache when there is one) and its parsed footer. */
  const tail = async (key: string, ranges: [number, number][]): Promise<{ metadata: FileMetaData; resident: Resident }> => {
    const cached = options.tails?.entry(key) ?? { resident: new Resident() }
    const footer = await readTail(queue, key, ranges, cached.resident)
    cached.metadata ??= parquetMetadata(footer)
    options.tails?.trim(key)
    return { metadata: cached.metadata, resident: new Resident(cached.resident) }
  }
  const open = async (p: PartitionPlan): Promise<Unit[]> => {
    // With a lookup copy, both tails are read in the same round: the partition's bloom
    // filters rule out an absent value without touching the copy's data.
    const lookup = plan.lookup && p.lookup ? p.lookup : undefined
    const [main, copy] = await Promise.all([tail(p.key, tailRanges(p, plan.bloomColumns)), lookup && tail(lookup.key, [[lookup.tailOffset, lookup.bytes]])])
    progress.partitionsRead++
    const part = await openPartition(queue, plan, p, main.metadata, main.resident, options.compressors)
    const unit = copy && part.scan!.ranges.length > 0 ? lookupUnit(queue, plan, p, copy.metadata, copy.resident, options.compressors) : null
    return unit ? [unit] : unitsOf(part, maxBatchRows)
  }
  async function* units(): AsyncGenerator<Unit> {
    for await (const list of mapOrdered(partitions, open, { count: options.partitionLookAhead ?? 16, rampUp: options.rampUp })) {
      yield* list
    }
  }
  const select = (u: Unit) => (u.lookup ? selectLookup(u, plan, rangeTests, progress) : selectUnit(u, plan, rangeTests, progress))
  const selected = mapOrdered(units(), select, {
    count: 64,
    weight: u => (u.end - u.start) * Math.max(1, plan.filterColumns.length + (u.inside ? 0 : 1)),
    maxWeight: options.selectLookAheadValues ?? 800_000,
    rampUp: options.rampUp,
  })
  const nonEmpty = filterAsync(selected, s => count(s) > 0)
  const output = (s: Selected) => outputUnit(s, plan, fields, chainId, progress)
  for await (const batch of mapOrdered(nonEmpty, output, { count: 64, weight: count, maxWeight: options.outputLookAheadRows ?? 30_000, rampUp: options.rampUp })) {
    // A lookup unit is a whole partition's matches: cut to the batch size like any other.
    for (let at = 0; at < batch.length; at += maxBatchRows) yield batch.length <= maxBatchRows ? batch : sliceBatch(batch, at, Math.min(batch.length, at + maxBatchRows))
  }
}

async function* filterAsync<T>(source: AsyncIterable<T>, keep: (item: T) => boolean): AsyncGenerator<T> {
  for await (const item of source) if (keep(item)) yield item
}

/** Range-key predicates for files not sorted by the range key (bisection is used otherwise). */
function rangePredicates(plan: ScanPlan): Predicate[] {
  const field: FieldDecl = { name: plan.rangeColumn, kind: 'u64int' }
  return [
    { field, op: 'gte', values: [BigInt(plan.range[0])] },
    { field, op: 'lte', values: [BigInt(plan.range[1])] },
  ]
}

async function openPartition(queue: ReadQueue, plan: ScanPlan, p: PartitionPlan, metadata: FileMetaData, resident: Resident, compressors: Compressors | undefined): Promise<OpenPartition> {
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
    useBloomFilters: true,
    usePageIndex: true,
    rowStart: p.rowStart,
    rowEnd: p.rowEnd,
    utf8: false,
  })
  return { plan: p, queue, resident, scan, metadata, groupStarts: groupStartsOf(metadata), absent, touched: new Set(), pages: new Map(), layouts: layoutsOf(metadata, plan, absent, compressors), kinds: plan.kinds }
}

/** The decoding layout of each planned column the file has, checked against its declared kind. */
function layoutsOf(metadata: FileMetaData, plan: ScanPlan, absent: Set<string>, compressors: Compressors | undefined): Map<string, ChunkLayout> {
  const layouts = new Map<string, ChunkLayout>()
  for (const column of plan.columns) {
    if (absent.has(column)) continue
    const element = metadata.schema.find(e => e.name === column)!
    const shape = shapeOf(plan.kinds[column])
    const physical = { u64: 'INT64', fixed: 'FIXED_LEN_BYTE_ARRAY', binary: 'BYTE_ARRAY', bool: 'BOOLEAN' }[shape.type]
    if (element.type !== physical || (shape.type === 'fixed' && element.type_length !== shape.width)) {
      throw new Error(`column ${column} is stored as ${element.type}, its kind ${plan.kinds[column]} needs ${physical}`)
    }
    const codec = columnChunk(metadata, 0, column)?.meta_data?.codec ?? 'UNCOMPRESSED'
    layouts.set(column, { shape, optional: element.repetition_type === 'OPTIONAL', codec, ...(compressors ? { compressors } : {}) })
  }
  return layouts
}

/** File row number where each row group starts. */
function groupStartsOf(metadata: FileMetaData): number[] {
  const starts: number[] = []
  let row = 0
  for (const g of metadata.row_groups) {
    starts.push(row)
    row += Number(g.num_rows)
  }
  return starts
}


/**
 * The read of a partition through its lookup copy: the row groups whose min/max of the
 * lookup column may hold a looked-up value (the copy is sorted by it, so the bounds are
 * tight). Null when those groups hold too many rows (see LOOKUP_SHARE).
 */
function lookupUnit(queue: ReadQueue, plan: ScanPlan, p: PartitionPlan, metadata: FileMetaData, resident: Resident, compressors: Compressors | undefined): Unit | null {
  const { column, values } = plan.lookup!
  const groups: number[] = []
  let rows = 0
  const known = (x: unknown): x is StoredValue => x instanceof Uint8Array || typeof x === 'bigint' || typeof x === 'string'
  metadata.row_groups.forEach((g, i) => {
    const stats = columnChunk(metadata, i, column)?.meta_data?.statistics
    const [min, max] = [stats?.min_value, stats?.max_value]
    if (known(min) && known(max) && !values.some(v => compareValues(min, v) <= 0 && compareValues(v, max) <= 0)) return
    groups.push(i)
    rows += Number(g.num_rows)
  })
  if (rows > (p.rowEnd - p.rowStart) * LOOKUP_SHARE) return null
  const stored = new Set(metadata.schema.map(e => e.name))
  // The order columns too: rows of several values are re-sorted by them, asked for or not.
  const columns = [...new Set([...plan.columns, ...plan.lookupOrder])]
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
  return { part, group: -1, start: 0, end: rows, inside: false, lookup: groups }
}

/** Byte span of a row group: its column chunks are contiguous. */
function groupSpan(metadata: FileMetaData, group: number): [number, number] {
  let start = Infinity
  let end = 0
  for (const c of metadata.row_groups[group].columns) {
    const m = c.meta_data!
    const at = Number(m.dictionary_page_offset ?? m.data_page_offset)
    start = Math.min(start, at)
    end = Math.max(end, at + Number(m.total_compressed_size))
  }
  return [start, end]
}

/**
 * A lookup unit: its row groups are fetched whole, in one round (neighbours merge into
 * one request), decoded, and every predicate and the range applied to their rows; rows
 * come out in the dataset's order (the copy's order for one value, re-sorted for several).
 */
async function selectLookup(u: Unit, plan: ScanPlan, rangeTests: Predicate[], progress: ScanProgress): Promise<Selected> {
  const { part } = u
  const groups = u.lookup!
  // No group's bounds hold a looked-up value: nothing to read.
  if (groups.length === 0) return { unit: u, rows: new Int32Array(0), values: {}, scanned: true }
  const release = letGo(part, await Promise.all(groups.map(g => hold(part, groupSpan(part.metadata, g)))))
  try {
    const subunits = groups.map((g): Unit => ({ part, group: g, start: part.groupStarts[g], end: part.groupStarts[g] + Number(part.metadata.row_groups[g].num_rows), inside: false }))
    const columns = [...new Set([plan.rangeColumn, ...plan.filterColumns, ...plan.outputColumns, ...plan.lookupOrder])]
    const decoded: Record<string, Vector> = {}
    for (const column of columns) decoded[column] = concatVectors(await Promise.all(subunits.map(s => readWhole(s, column, progress))))
    const n = u.end
    progress.rowsScanned += n
    let offsets = selectRows([...rangeTests, ...plan.predicates], decoded, 0, n)
    if (plan.lookup!.values.length > 1) offsets = sortedBy(offsets, plan.lookupOrder.map(c => decoded[c]))
    const values: Record<string, Vector> = {}
    for (const column of plan.outputColumns) values[column] = takeVector(decoded[column], offsets)
    return { unit: u, rows: offsets, values, scanned: true }
  } finally {
    release()
  }
}

/** `rows` ordered by the values of `keys` (u64 columns: the dataset's order). */
function sortedBy(rows: Int32Array, keys: readonly Vector[]): Int32Array {
  const u64 = keys as U64Vector[]
  return rows.slice().sort((a, b) => {
    for (const k of u64) {
      if (k.values[a] !== k.values[b]) return k.values[a] < k.values[b] ? -1 : 1
    }
    return a - b
  })
}

/** The pruning filter without conditions on `columns` (dropping a condition only prunes less). */
function withoutColumns(filter: ParquetQueryFilter, columns: Set<string>): ParquetQueryFilter {
  const parts = '$and' in filter ? (filter.$and as ParquetQueryFilter[]) : [filter]
  return { $and: parts.filter(f => !Object.keys(f).some(c => columns.has(c))) } as ParquetQueryFilter
}

/** Candidate ranges of planned row groups, cut to at most `maxRows` rows each. */
function unitsOf(part: OpenPartition, maxRows: number): Unit[] {
  const { plan, groupStarts } = part
  const units: Unit[] = []
  let g = 0
  for (const { rowStart, rowEnd } of part.scan?.ranges ?? []) {
    while (g + 1 < groupStarts.length && groupStarts[g + 1] <= rowStart) g++
    const planned = plan.rowGroups.indexOf(g)
    if (planned < 0) continue
    for (let start = rowStart; start < rowEnd; start += maxRows) {
      units.push({ part, group: g, start, end: Math.min(rowEnd, start + maxRows), inside: plan.inside[planned] })
    }
  }
  return units
}

/** Counts a row group as read the first time any of its data is asked for. */
function touch(u: Unit, progress: ScanProgress): void {
  if (u.part.touched.has(u.group)) return
  u.part.touched.add(u.group)
  progress.rowGroupsRead++
}

function readWhole(u: Unit, column: string, progress: ScanProgress): Promise<Vector> {
  if (u.part.absent.has(column)) return Promise.resolve(constantVector(u.part.kinds[column], null, u.end - u.start))
  touch(u, progress)
  return readRuns(u, column, [[u.start, u.end]]).then(vs => vs[0])
}

/** The chunk of `column` in row group `group`. */
function columnChunk(metadata: FileMetaData, group: number, column: string): ColumnChunk | undefined {
  return metadata.row_groups[group]?.columns.find(c => c.meta_data?.path_in_schema[0] === column)
}

function chunkOf(u: Unit, column: string): ColumnMetaData {
  const m = columnChunk(u.part.metadata, u.group, column)?.meta_data
  if (!m) throw new Error(`column ${column} missing from ${u.part.plan.key}`)
  return m
}

/** Bytes `[start, end)` of the unit's file: from memory when prefetched, else through the read queue. */
async function bytesOf(u: Unit, start: number, end: number): Promise<Uint8Array> {
  return u.part.resident.view(start, end) ?? u.part.queue.read(u.part.plan.key, start, end)
}

interface FetchedRuns {
  layout: ChunkLayout
  dictionary: Vector | undefined
  pages: { bytes: Uint8Array; firstRow: number }[]
}

/**
 * The bytes of the pages holding file rows `[a, b)` of each run of one column in the
 * unit's group (offset index), and its dictionary decoded once; all reads are issued
 * together, so they join the current round.
 */
async function fetchRuns(u: Unit, column: string, runs: readonly [number, number][]): Promise<FetchedRuns> {
  const m = chunkOf(u, column)
  const layout = u.part.layouts.get(column)!
  const groupStart = u.part.groupStarts[u.group]
  const chunkStart = Number(m.dictionary_page_offset ?? m.data_page_offset)
  const chunkEnd = chunkStart + Number(m.total_compressed_size)
  const dataStart = Number(m.data_page_offset)
  const locations = pageLocations(u, column)
  const dictionary = m.dictionary_page_offset !== undefined ? bytesOf(u, chunkStart, dataStart) : undefined
  const data = runs.map(([a, b]) => {
    if (!locations) return bytesOf(u, dataStart, chunkEnd).then(bytes => ({ bytes, firstRow: groupStart }))
    let p0 = 0
    while (p0 + 1 < locations.length && groupStart + Number(locations[p0 + 1].first_row_index) <= a) p0++
    let p1 = p0
    while (p1 + 1 < locations.length && groupStart + Number(locations[p1 + 1].first_row_index) < b) p1++
    const start = Number(locations[p0].offset)
    const end = Number(locations[p1].offset) + locations[p1].compressed_page_size
    return bytesOf(u, start, end).then(bytes => ({ bytes, firstRow: groupStart + Number(locations[p0].first_row_index) }))
  })
  const [dictionaryBytes, pages] = await Promise.all([dictionary, Promise.all(data)])
  return { layout, dictionary: dictionaryBytes && decodeDictionary(layout, dictionaryBytes), pages }
}

/** Decodes file rows `[a, b)` of each run of one column in the unit's group. */
async function readRuns(u: Unit, column: string, runs: readonly [number, number][]): Promise<Vector[]> {
  const { layout, dictionary, pages } = await fetchRuns(u, column, runs)
  return runs.map(([a, b], i) => decodePages(layout, pages[i].bytes, pages[i].firstRow, a, b, dictionary))
}

/** The unit's rows of a dictionary-encoded column as its dictionary and a code per row; null when it is not. */
async function readCoded(u: Unit, column: string, progress: ScanProgress): Promise<{ dictionary: Vector; codes: Int32Array } | null> {
  if (u.part.absent.has(column) || chunkOf(u, column).dictionary_page_offset === undefined) return null
  touch(u, progress)
  const { layout, dictionary, pages } = await fetchRuns(u, column, [[u.start, u.end]])
  const codes = decodeCodes(layout, pages[0].bytes, pages[0].firstRow, u.start, u.end)
  return codes && dictionary ? { dictionary, codes } : null
}

/** The dictionary's values at the codes of `offsets` (-1 = null). */
function takeCodes(dictionary: Vector, codes: Int32Array, offsets: Int32Array): Vector {
  const at = Int32Array.from(offsets, o => Math.max(0, codes[o]))
  const taken = takeVector(dictionary, at)
  if (!offsets.some(o => codes[o] < 0)) return taken
  return { ...taken, valid: Uint8Array.from(offsets, o => (codes[o] < 0 ? 0 : 1)) }
}

/** Largest row group fetched whole when the range cuts it (see selectUnit). */
const WHOLE_GROUP_MAX = 2 * 1024 * 1024

/** Fetches bytes `[start, end)` of the partition and keeps them in memory until they are let go (`resident.remove`). */
async function hold(part: OpenPartition, [start, end]: [number, number]): Promise<Uint8Array> {
  const bytes = await part.queue.read(part.plan.key, start, end)
  part.resident.add(start, bytes)
  return bytes
}

/** Lets go of what `hold` fetched. */
const letGo = (part: OpenPartition, held: readonly Uint8Array[]) => () => held.forEach(b => part.resident.remove(b))

/**
 * Fetches the unit's column chunks of `columns` in one round and keeps them in memory
 * while phase one decodes them; returns the function that lets them go.
 */
async function prefetch(u: Unit, columns: readonly string[]): Promise<() => void> {
  const held = await Promise.all(columns.filter(c => !u.part.absent.has(c)).map(column => {
    const m = chunkOf(u, column)
    const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
    return hold(u.part, [start, start + Number(m.total_compressed_size)])
  }))
  return letGo(u.part, held)
}

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
  const whole = !u.inside && span[1] - span[0] <= WHOLE_GROUP_MAX
  const release = await (whole ? hold(u.part, span).then(b => letGo(u.part, [b])) : prefetch(u, columns))
  let keep = false
  try {
    const n = u.end - u.start
    let lo = 0
    let hi = n
    const wholes: Record<string, Vector> = {}
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
      const predicates = [...(column === plan.rangeColumn && checkRange && !bisect ? rangeTests : []), ...plan.predicates.filter(p => columnOf(p.field) === column)]
      if (offsets === null) {
        const coded = column in wholes ? null : await readCoded(u, column, progress)
        if (coded) {
          offsets = selectCodes(predicates, coded.dictionary, coded.codes, lo, hi)
          if (plan.outputColumns.includes(column)) aligned[column] = takeCodes(coded.dictionary, coded.codes, offsets)
        } else {
          const data = wholes[column] ?? (await readWhole(u, column, progress))
          offsets = selectRows(predicates, { [column]: data }, lo, hi)
          if (plan.outputColumns.includes(column)) aligned[column] = takeVector(data, offsets)
        }
      } else {
        const values = await readRows(u, column, offsets.map(o => o + u.start), progress)
        const keep = selectRows(predicates, { [column]: values }, 0, values.length)
        if (keep.length < offsets.length) {
          const before: Int32Array = offsets
          offsets = Int32Array.from(keep, i => before[i])
          for (const c of Object.keys(aligned)) aligned[c] = takeVector(aligned[c], keep)
        }
        if (plan.outputColumns.includes(column)) aligned[column] = keep.length < values.length ? takeVector(values, keep) : values
      }
      if (offsets.length === 0) break
    }
    offsets ??= Int32Array.from({ length: hi - lo }, (_, i) => lo + i)
    if (offsets.length === 0) return { unit: u, rows: offsets, values: {}, scanned: true }
    for (const column of Object.keys(wholes)) if (!(column in aligned) && plan.outputColumns.includes(column)) aligned[column] = takeVector(wholes[column], offsets)
    const rows = offsets.length === n ? null : offsets.map(o => o + u.start)
    keep = whole
    return { unit: u, rows, values: aligned, scanned: true, ...(whole ? { release } : {}) }
  } finally {
    if (!keep) release()
  }
}

/** Phase two: read the remaining output columns for the matching rows and build the batch. */
async function outputUnit(s: Selected, plan: ScanPlan, fields: readonly FieldDecl[], chainId: number, progress: ScanProgress): Promise<RowBatch> {
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

/** Locations of the pages of `column` in the unit's group (its offset index), or null. */
function pageLocations(u: Unit, column: string): OffsetIndex['page_locations'] | null {
  const key = `${u.group}/${column}`
  const cached = u.part.pages.get(key)
  if (cached !== undefined) return cached
  const { metadata, resident } = u.part
  const chunk = columnChunk(metadata, u.group, column)
  let locations: OffsetIndex['page_locations'] | null = null
  if (chunk?.offset_index_offset !== undefined && chunk.offset_index_length) {
    const at = Number(chunk.offset_index_offset)
    const index = resident.view(at, at + chunk.offset_index_length)
    if (index) locations = readOffsetIndex({ view: new DataView(index.buffer, index.byteOffset, index.byteLength), offset: 0 }).page_locations
  }
  u.part.pages.set(key, locations)
  return locations
}

/**
 * Row ranges to read so that `rows` are covered while touching only their pages:
 * matching rows in the same or adjacent pages share one read.
 */
export function pageRuns(rows: ArrayLike<number>, starts: readonly number[] | null, groupStart: number, groupRows: number, lo: number, hi: number): [number, number][] {
  if (rows.length === 0) return []
  if (!starts || starts.length === 0) return [[rows[0], rows[rows.length - 1] + 1]]
  const runs: [number, number][] = []
  let page = 0
  let first = -1
  let last = -1
  const flush = () => {
    const a = groupStart + starts[first]
    const b = groupStart + (last + 1 < starts.length ? starts[last + 1] : groupRows)
    runs.push([Math.max(a, lo), Math.min(b, hi)])
  }
  for (let i = 0; i < rows.length; i++) {
    const rel = rows[i] - groupStart
    while (page + 1 < starts.length && starts[page + 1] <= rel) page++
    if (first >= 0 && page <= last + 1) {
      last = page
      continue
    }
    if (first >= 0) flush()
    first = page
    last = page
  }
  flush()
  return runs
}

async function readRows(u: Unit, column: string, rows: Int32Array, progress: ScanProgress): Promise<Vector> {
  if (u.part.absent.has(column) || rows.length === 0) return constantVector(u.part.kinds[column], null, rows.length)
  const groupRows = Number(u.part.metadata.row_groups[u.group].num_rows)
  const locations = pageLocations(u, column)
  const starts = locations && locations.map(p => Number(p.first_row_index))
  const runs = pageRuns(rows, starts, u.part.groupStarts[u.group], groupRows, u.start, u.end)
  touch(u, progress)
  const parts = await readRuns(u, column, runs)
  let k = 0
  return concatVectors(runs.map(([rowStart, rowEnd], i) => {
    const first = k
    while (k < rows.length && rows[k] < rowEnd) k++
    return takeVector(parts[i], rows.subarray(first, k), rowStart)
  }))
}

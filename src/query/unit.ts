/**
 * A scan unit and how its columns are read: a candidate row range inside one row group
 * of an open partition (or of its lookup copy), the chunk and page locations of its
 * columns, and the decoding of whole chunks, of the pages that hold given rows, or of a
 * dictionary column as codes. Pages decode straight into packed vectors
 * (src/parquet/pages.ts).
 */
import type { ColumnChunk, ColumnMetaData, Compressors, FileMetaData, ParquetScan } from 'hyparquet'
import {
  decodeCodes,
  decodeDictionary,
  decodePageRows,
  decodePages,
  firstAtLeast,
  type ChunkLayout,
  type PageCheck,
} from '../parquet/pages.ts'
import { readPageLocations, type PageLocation } from '../parquet/page-header.ts'
import { CorruptObjectError } from '../store/types.ts'
import { ReadQueue, Resident } from './io.ts'
import type { PartitionPlan, ScanPlan } from './plan.ts'
import { concatVectors, constantVector, shapeOf, takeVector, type Vector, type VectorMemory } from '../columns/vector.ts'
import type { ColumnBuffers } from './column-buffers.ts'

/** What the scan did so far; mutated while batches are produced. */
export interface ScanProgress {
  partitionsRead: number
  rowGroupsRead: number
  rowsScanned: number
}

export interface OpenPartition {
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
  pages: Map<string, PageLocation[] | null>
  /** How each planned column's chunks decode. */
  layouts: Map<string, ChunkLayout>
  kinds: ScanPlan['kinds']
  /** The memory data pages decode into, which takes back the vectors the scan is done with; none by default. */
  columns?: ColumnBuffers
}

/** A candidate row range `[start, end)` (file rows) inside one row group. */
export interface Unit {
  part: OpenPartition
  group: number
  start: number
  end: number
  /** The group's blocks all lie inside the range. */
  inside: boolean
  /** A read through the partition's lookup copy (`part` is that copy): these row groups, whole. */
  lookup?: number[]
}

export interface Selected {
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

export const count = (s: Selected) => (s.rows ? s.rows.length : s.unit.end - s.unit.start)

/** The decoding layout of each planned column the file has, checked against its declared kind; data pages decode into `memory` when given. */
export function layoutsOf(
  metadata: FileMetaData,
  plan: ScanPlan,
  absent: Set<string>,
  compressors: Compressors | undefined,
  memory?: VectorMemory,
): Map<string, ChunkLayout> {
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
    layouts.set(column, {
      shape,
      optional: element.repetition_type === 'OPTIONAL',
      codec,
      ...(compressors ? { compressors } : {}),
      ...(memory ? { memory } : {}),
    })
  }
  return layouts
}

/** Counts a row group as read the first time any of its data is asked for. */
export function touch(u: Unit, progress: ScanProgress): void {
  if (u.part.touched.has(u.group)) return
  u.part.touched.add(u.group)
  progress.rowGroupsRead++
}

export function readWhole(u: Unit, column: string, progress: ScanProgress): Promise<Vector> {
  if (u.part.absent.has(column)) return Promise.resolve(constantVector(u.part.kinds[column], null, u.end - u.start))
  touch(u, progress)
  return readRuns(u, column, [[u.start, u.end]]).then(vs => vs[0])
}

/** The chunk of `column` in row group `group`. */
export function columnChunk(metadata: FileMetaData, group: number, column: string): ColumnChunk | undefined {
  return metadata.row_groups[group]?.columns.find(c => c.meta_data?.path_in_schema[0] === column)
}

export function chunkOf(u: Unit, column: string): ColumnMetaData {
  const m = columnChunk(u.part.metadata, u.group, column)?.meta_data
  if (!m) throw new Error(`column ${column} missing from ${u.part.plan.key}`)
  return m
}

/** Bytes `[start, end)` of the unit's file: from memory when prefetched, else through the read queue. */
export async function bytesOf(u: Unit, start: number, end: number): Promise<Uint8Array> {
  return u.part.resident.view(start, end) ?? u.part.queue.read(u.part.plan.key, start, end)
}

export interface FetchedRuns {
  layout: ChunkLayout
  dictionary: Vector | undefined
  /** Each run's pages, with what their headers must agree with. */
  pages: { bytes: Uint8Array; firstRow: number; check: PageCheck }[]
}

/**
 * The bytes of the pages holding file rows `[a, b)` of each run of one column in the
 * unit's group (offset index), and its dictionary decoded once; all reads are issued
 * together, so they join the current round.
 */
export async function fetchRuns(u: Unit, column: string, runs: readonly [number, number][]): Promise<FetchedRuns> {
  const m = chunkOf(u, column)
  const layout = u.part.layouts.get(column)!
  const groupStart = u.part.groupStarts[u.group]
  const chunkStart = Number(m.dictionary_page_offset ?? m.data_page_offset)
  const chunkEnd = chunkStart + Number(m.total_compressed_size)
  const dataStart = Number(m.data_page_offset)
  const locations = pageLocations(u, column)
  const groupEnd = groupStart + Number(u.part.metadata.row_groups[u.group].num_rows)
  const encodings = m.encoding_stats?.filter(s => s.page_type !== 'DICTIONARY_PAGE').map(s => s.encoding)
  const dictionary = m.dictionary_page_offset !== undefined ? bytesOf(u, chunkStart, dataStart) : undefined
  const data = runs.map(([a, b]) => {
    if (!locations)
      return bytesOf(u, dataStart, chunkEnd).then(bytes => ({ bytes, firstRow: groupStart, check: { endRow: groupEnd, encodings } }))
    let p0 = 0
    while (p0 + 1 < locations.length && groupStart + locations[p0 + 1].first_row_index <= a) p0++
    let p1 = p0
    while (p1 + 1 < locations.length && groupStart + locations[p1 + 1].first_row_index < b) p1++
    const start = locations[p0].offset
    const end = locations[p1].offset + locations[p1].compressed_page_size
    const endRow = p1 + 1 < locations.length ? groupStart + locations[p1 + 1].first_row_index : groupEnd
    return bytesOf(u, start, end).then(bytes => ({
      bytes,
      firstRow: groupStart + locations[p0].first_row_index,
      check: { endRow, encodings },
    }))
  })
  const [dictionaryBytes, pages] = await Promise.all([dictionary, Promise.all(data)])
  return { layout, dictionary: dictionaryBytes && decoded(u, () => decodeDictionary(layout, dictionaryBytes)), pages }
}

/**
 * Decodes bytes of the unit's file: a decoder that fails (a page failing its checksum,
 * a header contradicting the index, bytes that do not decode) found damaged stored
 * bytes, reported naming the object.
 */
export function decoded<T>(u: Unit, decode: () => T): T {
  try {
    return decode()
  } catch (error) {
    throw new CorruptObjectError(u.part.plan.key, `column data does not decode (${(error as Error).message})`, { cause: error })
  }
}

/** Decodes file rows `[a, b)` of each run of one column in the unit's group. */
export async function readRuns(u: Unit, column: string, runs: readonly [number, number][]): Promise<Vector[]> {
  const { layout, dictionary, pages } = await fetchRuns(u, column, runs)
  return runs.map(([a, b], i) => decoded(u, () => decodePages(layout, pages[i].bytes, pages[i].firstRow, a, b, dictionary, pages[i].check)))
}

/** The unit's rows of a dictionary-encoded column as its dictionary and a code per row; null when it is not. */
export async function readCoded(
  u: Unit,
  column: string,
  progress: ScanProgress,
): Promise<{ dictionary: Vector; codes: Int32Array } | null> {
  if (u.part.absent.has(column) || chunkOf(u, column).dictionary_page_offset === undefined) return null
  touch(u, progress)
  const { layout, dictionary, pages } = await fetchRuns(u, column, [[u.start, u.end]])
  const codes = decoded(u, () => decodeCodes(layout, pages[0].bytes, pages[0].firstRow, u.start, u.end, pages[0].check))
  return codes && dictionary ? { dictionary, codes } : null
}

/** The dictionary's values at the codes of `offsets` (-1 = null), in `memory` when given. */
export function takeCodes(dictionary: Vector, codes: Int32Array, offsets: Int32Array, memory?: VectorMemory): Vector {
  // Plain loops: a mapping `Int32Array.from` costs as much as the copy of every value.
  const at = new Int32Array(offsets.length)
  let nulls = false
  for (let i = 0; i < offsets.length; i++) {
    const code = codes[offsets[i]]
    if (code < 0) nulls = true
    else at[i] = code
  }
  const taken = takeVector(dictionary, at, 0, memory)
  if (nulls) {
    const valid = new Uint8Array(offsets.length)
    for (let i = 0; i < offsets.length; i++) valid[i] = codes[offsets[i]] < 0 ? 0 : 1
    // Set on the vector taken, not a copy of it: that one owns the lent memory.
    taken.valid = valid
  }
  return taken
}

/** Locations of the pages of `column` in the unit's group (its offset index), or null. */
export function pageLocations(u: Unit, column: string): PageLocation[] | null {
  const key = `${u.group}/${column}`
  const cached = u.part.pages.get(key)
  if (cached !== undefined) return cached
  const { metadata, resident } = u.part
  const chunk = columnChunk(metadata, u.group, column)
  let locations: PageLocation[] | null = null
  if (chunk?.offset_index_offset !== undefined && chunk.offset_index_length) {
    const at = Number(chunk.offset_index_offset)
    const index = resident.view(at, at + chunk.offset_index_length)
    if (index) locations = readPageLocations({ view: new DataView(index.buffer, index.byteOffset, index.byteLength), offset: 0 })
  }
  u.part.pages.set(key, locations)
  return locations
}

/**
 * Row ranges to read so that `rows` are covered while touching only their pages:
 * matching rows in the same or adjacent pages share one read.
 */
export function pageRuns(
  rows: ArrayLike<number>,
  starts: readonly number[] | null,
  groupStart: number,
  groupRows: number,
  lo: number,
  hi: number,
): [number, number][] {
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
  // From each row's page to the next row past that page's end: a bisection, not a step per row.
  for (let i = 0; i < rows.length;) {
    const rel = rows[i] - groupStart
    while (page + 1 < starts.length && starts[page + 1] <= rel) page++
    if (first >= 0 && page <= last + 1) last = page
    else {
      if (first >= 0) flush()
      first = page
      last = page
    }
    i = page + 1 < starts.length ? firstAtLeast(rows, i + 1, groupStart + starts[page + 1]) : rows.length
  }
  flush()
  return runs
}

export async function readRows(u: Unit, column: string, rows: Int32Array, progress: ScanProgress): Promise<Vector> {
  if (u.part.absent.has(column) || rows.length === 0) return constantVector(u.part.kinds[column], null, rows.length)
  const groupRows = Number(u.part.metadata.row_groups[u.group].num_rows)
  const locations = pageLocations(u, column)
  const starts = locations && locations.map(p => p.first_row_index)
  const runs = pageRuns(rows, starts, u.part.groupStarts[u.group], groupRows, u.start, u.end)
  touch(u, progress)
  const { layout, dictionary, pages } = await fetchRuns(u, column, runs)
  let k = 0
  const parts = runs.map(([a, b], i) => {
    const first = k
    k = firstAtLeast(rows, k, b)
    const { bytes, firstRow, check } = pages[i]
    // Every row of the run: decoded whole; some: only theirs (a page of codes may span the whole group).
    return decoded(u, () =>
      k - first === b - a
        ? decodePages(layout, bytes, firstRow, a, b, dictionary, check)
        : decodePageRows(layout, bytes, firstRow, a, b, rows.subarray(first, k), dictionary, check),
    )
  })
  const whole = concatVectors(parts)
  if (parts.length > 1) for (const part of parts) dropped(u, part)
  return whole
}

/** A vector the scan has copied what it needs from (or does not output): its memory may serve the next decode. */
export function dropped(u: Unit, v: Vector): void {
  u.part.columns?.recycle(v)
}

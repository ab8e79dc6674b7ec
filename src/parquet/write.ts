/**
 * Writes one partition: a dataset's rows over one block range, as Parquet whose
 * schema is derived from the dataset declaration. Returns the bytes and the
 * manifest entry the planner needs to skip footers and row groups it does not need.
 */
import { parquetMetadata } from 'hyparquet'
import { ParquetWriter } from 'hyparquet-writer'
import type { FileMetaData, SchemaElement } from 'hyparquet'
import { columnOf, isStored, type DatasetDecl, type FieldDecl } from '../schema/dataset.ts'
import { KINDS } from '../schema/kinds.ts'
import { isVectorColumn, type ColumnBatch, type ColumnValues, type PackedBatch } from '../columns/batch.ts'
import { sliceVector, valuesOf, type Vector } from '../columns/vector.ts'
import type { ByteSpan, PartitionEntry, RowGroupEntry } from '../manifest/types.ts'
import { crc32 } from '../store/crc32.ts'
import { writeRowGroups, type ColumnRows, type FlatColumn } from './row-groups.ts'
import { ChunkedWriter } from './chunked-writer.ts'
import { bloomFilterOf, vectorBloomFilter, type Hash64 } from './bloom.ts'
import { distinctRows } from './dictionary.ts'
import { isPackedChunk } from './vector-chunk.ts'

export interface LayoutOptions {
  /** Rows per row group (default 10,000: chosen by `npm run bench -- layout`, see BENCHMARKS.md). */
  rowGroupSize?: number
  /**
   * Target uncompressed page size in bytes (default 8 KiB). Smaller pages let a selective
   * query decode and fetch less around each matching row, and give the range key's
   * chunks more than one page, hence a page index. Measured with
   * `npx node bench/lib/lake.ts <dir> 1000000 <pageSize>` (1M logs, 5 files, 10k-row
   * groups), 64 KiB → 8 KiB: (a) rare address + topic0 203 → ~135 ms and 12.1 → 8.7 MB
   * fetched; (b) one block slightly faster; (c) full export ~10 % slower (more pages to
   * decode), which the selective queries this service mostly answers outweigh.
   */
  pageSize?: number
  /** Bloom filter false-positive rate (default 0.01). */
  bloomFpp?: number
  /** Bloom filters on the columns declared with them (default true; a lookup copy needs none). */
  blooms?: boolean
  /** The hash bloom filters take of byte values (bloom.ts; default: hyparquet-writer's own). Same bytes either way. */
  bloomHash?: Hash64
}

export const DEFAULT_LAYOUT: Required<Omit<LayoutOptions, 'bloomHash'>> = {
  rowGroupSize: 10_000,
  pageSize: 8 * 1024,
  bloomFpp: 0.01,
  blooms: true,
}

/** Stored fields of a dataset, once per column (a field may be declared under two names). */
export function storedFields(dataset: DatasetDecl): FieldDecl[] {
  const seen = new Set<string>()
  return dataset.fields.filter(f => {
    if (!isStored(f) || seen.has(columnOf(f))) return false
    seen.add(columnOf(f))
    return true
  })
}

/** Parquet schema of a dataset, derived from its declaration. */
export function parquetSchemaOf(dataset: DatasetDecl): SchemaElement[] {
  const fields = storedFields(dataset)
  return [
    { name: 'root', num_children: fields.length },
    ...fields.map((f): SchemaElement => {
      const p = KINDS[f.kind].parquet
      return {
        name: columnOf(f),
        type: p.type,
        ...(p.typeLength ? { type_length: p.typeLength } : {}),
        ...(p.convertedType ? { converted_type: p.convertedType } : {}),
        repetition_type: f.nullable ? 'OPTIONAL' : 'REQUIRED',
      }
    }),
  ]
}

export interface WrittenPartition {
  bytes: Uint8Array
  /** Manifest entry without `key` (the caller names the object). */
  entry: Omit<PartitionEntry, 'key'>
  metadata: FileMetaData
}

/**
 * A column as the writer takes it: an array as it is; a packed column written from its buffers
 * (u64 and bytes: row-groups.ts), else its values made a row group at a time, so they die young.
 */
function rowsOf(column: ColumnValues | Vector): ColumnRows {
  if (!isVectorColumn(column)) return column as ColumnRows
  const slice = (start: number, end: number) => valuesOf(sliceVector(column, start, Math.min(end, column.length)))
  return isPackedChunk(column) ? { length: column.length, slice, vector: column } : { length: column.length, slice }
}

/** The first null row of a column, or -1. */
function firstNull(column: ColumnValues | Vector): number {
  if (!isVectorColumn(column)) return column.findIndex(v => v === null || v === undefined)
  return column.valid === null ? -1 : column.valid.indexOf(0)
}

/** Encodes a batch (plain or packed) already sorted in the dataset's order. Throws on a missing required value. */
export function writePartition(
  dataset: DatasetDecl,
  batch: ColumnBatch | PackedBatch,
  range: { from: number; to: number },
  layout: LayoutOptions = {},
): WrittenPartition {
  const { rowGroupSize, pageSize, bloomFpp, blooms, bloomHash } = { ...DEFAULT_LAYOUT, ...layout }
  const fields = storedFields(dataset)
  const rows = new Map<string, ColumnRows>()
  const columnData: FlatColumn[] = fields.map(f => {
    const name = columnOf(f)
    const column: ColumnValues | Vector | undefined = batch.columns[name]
    if (!column || column.length !== batch.length) {
      throw new Error(`${dataset.name}: column ${name} has ${column?.length ?? 0} values, expected ${batch.length}`)
    }
    if (!f.nullable) {
      const i = firstNull(column)
      if (i >= 0) throw new Error(`${dataset.name}: column ${name} is null at row ${i}`)
    }
    const data = rowsOf(column)
    rows.set(name, data)
    return {
      name,
      data,
      // Page indexes only where the planner uses them: the range key, for block-range reads.
      columnIndex: name === dataset.rangeKey,
      offsetIndex: true,
      ...(f.bloom && blooms && !bloomHash ? { bloomFilter: { fpp: bloomFpp } } : {}),
    }
  })
  const schema = parquetSchemaOf(dataset)
  const parquet = new ParquetWriter({
    writer: new ChunkedWriter(),
    schema,
    statisticsTruncateLength: Infinity,
    kvMetadata: [{ key: 'edge-chain-data.dataset', value: dataset.storage }],
    createdBy: 'edge-chain-data',
  })
  writeRowGroups(parquet, columnData, rowGroupSize, pageSize)
  clusterByColumn(parquet, fields.map(columnOf))
  if (blooms && bloomHash) addBlooms(parquet, schema, fields, rows, rowGroupSize, bloomFpp, bloomHash)
  parquet.finish()
  const writer = parquet.writer as ChunkedWriter
  const bytes = writer.getBytes()
  writer.release()
  const metadata = parquetMetadata(bytes)
  return { bytes, metadata, entry: withTailChecksums(entryFromMetadata(dataset, metadata, bytes.length, range), bytes) }
}

/**
 * The entry with the CRC-32 of each tail range a reader fetches apart: the page indexes,
 * each column's bloom span and the footer (pages carry their own). The manifest, itself
 * checksummed, is what locates the file, so a reader can trust nothing it has not checked.
 */
export function withTailChecksums(entry: Omit<PartitionEntry, 'key'>, bytes: Uint8Array): Omit<PartitionEntry, 'key'> {
  if (entry.footerOffset === undefined || !entry.blooms) return entry
  const crc = (start: number, end: number) => crc32(bytes.subarray(start, end))
  const indexEnd = Math.min(entry.footerOffset, ...Object.values(entry.blooms).map(b => b.offset))
  return {
    ...entry,
    indexCrc: crc(entry.tailOffset, indexEnd),
    footerCrc: crc(entry.footerOffset, bytes.length),
    blooms: Object.fromEntries(Object.entries(entry.blooms).map(([c, b]) => [c, { ...b, crc: crc(b.offset, b.offset + b.length) }])),
  }
}

/**
 * Gives each bloom-filtered column chunk the filter bloom.ts builds with `hash`, where
 * `finish()` writes what the writer's own BloomBuilder would have left there:
 * `pendingIndexes` holds one entry per column chunk (clusterByColumn, called first,
 * guards the field and keeps each column's chunks in row-group order), and every row
 * group but the last has `rowGroupSize` rows.
 */
function addBlooms(
  parquet: ParquetWriter,
  schema: SchemaElement[],
  fields: FieldDecl[],
  rows: ReadonlyMap<string, ColumnRows>,
  rowGroupSize: number,
  fpp: number,
  hash: Hash64,
): void {
  const groups = new Map<string, number>()
  for (const pending of parquet.pendingIndexes) {
    const name = pending.chunk.meta_data?.path_in_schema[0] ?? ''
    const group = groups.get(name) ?? 0
    groups.set(name, group + 1)
    if (!fields.some(f => f.bloom && columnOf(f) === name)) continue
    const column = rows.get(name)!
    const [start, end] = [group * rowGroupSize, Math.min((group + 1) * rowGroupSize, column.length)]
    const element = schema.find(e => e.name === name)!
    const v = column.vector
    pending.bloomFilter =
      v && v.type !== 'u64'
        ? vectorBloomFilter(v, distinctRows(v, start, end), element, fpp, hash)
        : bloomFilterOf(column.slice(start, end), element, fpp, hash)
  }
}

/**
 * Makes `finish()` write each column's bloom filters (and page indexes) one after the
 * other across row groups instead of row group by row group, so a query fetches the
 * blooms of its filter columns as one range each. `finish()` writes them in the order
 * of `pendingIndexes`, one entry per column chunk, row group by row group (a field of
 * hyparquet-writer 0.17 that test/lake/write.test.ts guards); a stable sort by column
 * keeps row-group order within a column.
 */
function clusterByColumn(parquet: ParquetWriter, columns: string[]): void {
  if (!Array.isArray(parquet.pendingIndexes)) {
    throw new Error('hyparquet-writer no longer has ParquetWriter.pendingIndexes: update clusterByColumn in src/parquet/write.ts')
  }
  const order = new Map(columns.map((c, i) => [c, i]))
  const rank = (p: ParquetWriter['pendingIndexes'][number]) => order.get(p.chunk.meta_data?.path_in_schema[0] ?? '') ?? columns.length
  parquet.pendingIndexes.sort((a, b) => rank(a) - rank(b))
}

/**
 * Manifest facts from a file's metadata: row-group block ranges, where the data pages
 * end, where the footer starts and, when each column's bloom filters are contiguous
 * (files written by `writePartition`), the byte span of each column's blooms.
 */
export function entryFromMetadata(
  dataset: DatasetDecl,
  metadata: FileMetaData,
  byteLength: number,
  range: { from: number; to: number },
): Omit<PartitionEntry, 'key'> {
  let dataEnd = 4
  const rowGroups: RowGroupEntry[] = metadata.row_groups.map(rg => {
    let start = Infinity
    let end = 0
    let from = range.from
    let to = range.to
    for (const chunk of rg.columns) {
      const m = chunk.meta_data
      if (!m) continue
      const chunkStart = Number(m.dictionary_page_offset ?? m.data_page_offset)
      start = Math.min(start, chunkStart, Number(m.data_page_offset))
      end = Math.max(end, chunkStart + Number(m.total_compressed_size))
      if (m.path_in_schema[0] === dataset.rangeKey && m.statistics) {
        const { min_value, max_value } = m.statistics
        if (min_value !== undefined && min_value !== null) from = Number(min_value)
        if (max_value !== undefined && max_value !== null) to = Number(max_value)
      }
    }
    dataEnd = Math.max(dataEnd, end)
    return { from, to, rows: Number(rg.num_rows), offset: start, length: end - start }
  })
  const footerOffset = byteLength - 8 - metadata.metadata_length
  const blooms = bloomSpans(metadata, footerOffset)
  return {
    from: range.from,
    to: range.to,
    rows: Number(metadata.num_rows),
    bytes: byteLength,
    tailOffset: dataEnd,
    ...(blooms ? { footerOffset, blooms } : {}),
    rowGroups,
  }
}

/**
 * Per column, the span of its bloom filters across row groups; undefined unless every
 * column's blooms are contiguous and together fill the bytes just before the footer
 * (then a reader can fetch the page indexes, the footer and any column's blooms apart).
 */
export function bloomSpans(metadata: FileMetaData, footerOffset: number): Record<string, ByteSpan> | undefined {
  const parts = new Map<string, [number, number][]>()
  for (const rg of metadata.row_groups) {
    for (const chunk of rg.columns) {
      const m = chunk.meta_data
      if (!m || m.bloom_filter_offset === undefined || !m.bloom_filter_length) continue
      const column = m.path_in_schema.join('.')
      parts.set(column, [...(parts.get(column) ?? []), [Number(m.bloom_filter_offset), m.bloom_filter_length]])
    }
  }
  const spans: Record<string, ByteSpan> = {}
  let start = footerOffset
  let total = 0
  for (const [column, list] of parts) {
    list.sort((a, b) => a[0] - b[0])
    for (let i = 1; i < list.length; i++) if (list[i][0] !== list[i - 1][0] + list[i - 1][1]) return undefined
    const [last, lastLength] = list[list.length - 1]
    spans[column] = { offset: list[0][0], length: last + lastLength - list[0][0] }
    start = Math.min(start, list[0][0])
    total += spans[column].length
  }
  return total === footerOffset - start ? spans : undefined
}

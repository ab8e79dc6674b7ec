/**
 * Writes one partition: a dataset's rows over one block range, as Parquet whose
 * schema is derived from the dataset declaration. Returns the bytes and the
 * manifest entry the planner needs to skip footers and row groups it does not need.
 */
import { parquetMetadata } from 'hyparquet'
import { parquetWriteBuffer } from 'hyparquet-writer'
import type { ColumnSource } from 'hyparquet-writer'
import type { FileMetaData, SchemaElement } from 'hyparquet'
import { columnOf, isStored, type DatasetDecl, type FieldDecl } from '../schema/dataset.ts'
import { KINDS, type StoredValue } from '../schema/kinds.ts'
import type { PartitionEntry, RowGroupEntry } from '../manifest/types.ts'

export type ColumnValues = (StoredValue | null)[]

/** A dataset's rows in columnar form, keyed by stored column name. */
export interface ColumnBatch {
  length: number
  columns: Record<string, ColumnValues>
}

export interface LayoutOptions {
  /** Rows per row group (default 10,000: chosen by `npm run bench -- layout`, see BENCHMARKS.md). */
  rowGroupSize?: number
  /** Target uncompressed page size in bytes (default 64 KiB). */
  pageSize?: number
  /** Bloom filter false-positive rate (default 0.01). */
  bloomFpp?: number
}

export const DEFAULT_LAYOUT: Required<LayoutOptions> = { rowGroupSize: 10_000, pageSize: 64 * 1024, bloomFpp: 0.01 }

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

/** Encodes a batch already sorted in the dataset's order. Throws on a missing required value. */
export function writePartition(
  dataset: DatasetDecl,
  batch: ColumnBatch,
  range: { from: number; to: number },
  layout: LayoutOptions = {},
): WrittenPartition {
  const { rowGroupSize, pageSize, bloomFpp } = { ...DEFAULT_LAYOUT, ...layout }
  const fields = storedFields(dataset)
  const columnData: ColumnSource[] = fields.map(f => {
    const name = columnOf(f)
    const data = batch.columns[name]
    if (!data || data.length !== batch.length) {
      throw new Error(`${dataset.name}: column ${name} has ${data?.length ?? 0} values, expected ${batch.length}`)
    }
    if (!f.nullable) {
      const i = data.findIndex(v => v === null || v === undefined)
      if (i >= 0) throw new Error(`${dataset.name}: column ${name} is null at row ${i}`)
    }
    return {
      name,
      data: data as ColumnSource['data'],
      // Page indexes only where the planner uses them: the range key, for block-range reads.
      columnIndex: name === dataset.rangeKey,
      offsetIndex: true,
      ...(f.bloom ? { bloomFilter: { fpp: bloomFpp } } : {}),
    }
  })
  const buffer = parquetWriteBuffer({
    columnData,
    schema: parquetSchemaOf(dataset),
    rowGroupSize,
    pageSize,
    statisticsTruncateLength: Infinity,
    kvMetadata: [{ key: 'edge-chain-data.dataset', value: dataset.storage }],
    createdBy: 'edge-chain-data',
  })
  const bytes = new Uint8Array(buffer)
  const metadata = parquetMetadata(buffer)
  return { bytes, metadata, entry: entryFromMetadata(dataset, metadata, bytes.length, range) }
}

/** Manifest facts from a file's metadata: row-group block ranges and where the data pages end. */
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
  return {
    from: range.from,
    to: range.to,
    rows: Number(metadata.num_rows),
    bytes: byteLength,
    tailOffset: dataEnd,
    rowGroups,
  }
}

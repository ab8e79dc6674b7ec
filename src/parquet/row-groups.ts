/**
 * Row groups of flat columns written straight into the file, every page header with the
 * CRC-32 of its body: the bytes hyparquet-writer's `ParquetWriter.write` writes, each page
 * header then given its checksum (the standard PageHeader `crc`, which it leaves out). The
 * encoders, page boundaries and thrift are hyparquet-writer's own; its dictionary choice and
 * snappy are taken by dictionary.ts and snappy-compress.ts, which give the same results faster.
 * What differs is where bytes go. Its writer takes three new buffers a page (levels, values,
 * the compressed page), grown by doubling, and a rewrite of every header then copied the whole
 * file again; here one scratch set serves every page, and each statistic is taken once. Those
 * buffers were array-buffer memory that set off full collections over an ingest unit's rows
 * (src/ingest/README.md, Memory). A packed u64 or byte column's chunks are read from its
 * buffers (vector-chunk.ts): the same decisions and bytes without a value object a row.
 */
import type { ColumnChunk, DecodedArray, Encoding, OffsetIndex, PageHeader, SchemaElement } from 'hyparquet'
import type { ColumnIndex } from 'hyparquet/src/types.js'
import type { ColumnSource, ParquetWriter } from 'hyparquet-writer'
import { BloomBuilder } from 'hyparquet-writer/src/bloom.js'
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js'
import { getPageBoundaries } from 'hyparquet-writer/src/column.js'
import { writePageHeader } from 'hyparquet-writer/src/datapage.js'
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js'
import { writePlain } from 'hyparquet-writer/src/plain.js'
import { unconvert, unconvertMinMax } from 'hyparquet-writer/src/unconvert.js'
import { compareBytes } from '../columns/compare.ts'
import { sliceVector, valuesOf } from '../columns/vector.ts'
import { crc32 } from '../store/crc32.ts'
import { chooseDictionary, chooseVectorDictionary } from './dictionary.ts'
import { snappyInto } from './snappy-compress.ts'
import { vectorPageBoundaries, vectorStatistics, writeVectorPlain, writeVectorRows, type PackedChunk } from './vector-chunk.ts'

type Value = DecodedArray[number]
type Pending = ParquetWriter['pendingIndexes'][number]

/** Buffers reused by every page of one call: the page's body as stored (levels, then compressed values), its values before compression, and a boolean page's runs. */
interface Scratch {
  body: ByteWriter
  values: ByteWriter
  rle: ByteWriter
}

interface Column {
  source: FlatColumn
  element: SchemaElement & { type: NonNullable<SchemaElement['type']> }
  optional: boolean
  /** The column's codec, else the writer's. */
  codec: Codec
}

type Codec = NonNullable<ColumnSource['codec']>

/**
 * A column's values as the writer takes them, a row group at a time: an array, or rows cut from
 * a packed column as each group is written; with `vector`, its chunks are written from the
 * vector's buffers instead (vector-chunk.ts), and `slice` serves only bloom filters.
 */
export interface ColumnRows {
  readonly length: number
  slice(start: number, end: number): DecodedArray
  readonly vector?: PackedChunk
}

/** One chunk's rows: decoded values, or a packed chunk read where its values lie. */
type ChunkRows = { values: DecodedArray; vector?: undefined } | { vector: PackedChunk; values?: undefined }

/** A ColumnSource whose values may be cut a row group at a time. */
export type FlatColumn = Omit<ColumnSource, 'data'> & { data: ColumnRows }

/**
 * Writes `columns` (flat, one per schema leaf, in schema order) as row groups of `rowGroupSize`
 * rows into `parquet`'s writer, and records them where `parquet.finish()` reads them
 * (`row_groups`, `num_rows`, `pendingIndexes`), as `parquet.write` does.
 */
export function writeRowGroups(parquet: ParquetWriter, columns: FlatColumn[], rowGroupSize: number, pageSize: number): void {
  const rows = columns[0]?.data.length ?? 0
  const elements = new Map(parquet.schema.slice(1).map(e => [e.name, e]))
  const resolved = columns.map((source): Column => {
    const element = elements.get(source.name)
    const converted = element?.converted_type
    if (!element?.type || !WRITTEN.has(element.type) || (converted !== undefined && converted !== 'UINT_64' && converted !== 'UTF8')) {
      throw new Error(`parquet: ${source.name} is not a flat column of a type row-groups.ts writes`)
    }
    if (source.data.length !== rows) throw new Error('parquet columns must have the same length')
    if (source.columnIndex && source.offsetIndex === false) throw new Error('parquet ColumnIndex cannot be present without OffsetIndex')
    const codec = source.codec ?? parquet.codec
    if (codec !== 'UNCOMPRESSED' && !parquet.compressors[codec]) throw new Error(`parquet no compressor for codec ${codec}`)
    return { source, element: element as Column['element'], optional: element.repetition_type === 'OPTIONAL', codec }
  })
  const scratch: Scratch = { body: new ByteWriter(), values: new ByteWriter(), rle: new ByteWriter() }
  for (let start = 0; start < rows; start += rowGroupSize) {
    const size = Math.min(rowGroupSize, rows - start)
    const groupStart = parquet.writer.offset
    const chunks: ColumnChunk[] = []
    let uncompressed = 0n
    for (const column of resolved) {
      const { data } = column.source
      const rows: ChunkRows = data.vector
        ? { vector: sliceVector(data.vector, start, start + size) as PackedChunk }
        : { values: data.slice(start, start + size) }
      const result = writeChunk(parquet, column, rows, pageSize, scratch)
      chunks.push(result.chunk)
      parquet.pendingIndexes.push(result)
      uncompressed += result.chunk.meta_data!.total_uncompressed_size
    }
    parquet.num_rows += BigInt(size)
    parquet.row_groups.push({
      columns: chunks,
      total_byte_size: uncompressed,
      num_rows: BigInt(size),
      total_compressed_size: BigInt(parquet.writer.offset - groupStart),
    })
  }
}

/** The physical types the datasets declare (src/schema/kinds.ts); floats would need NaN counts, which this writer does not keep. */
const WRITTEN = new Set(['BOOLEAN', 'INT32', 'INT64', 'BYTE_ARRAY', 'FIXED_LEN_BYTE_ARRAY'])

const UINT64_MAX = 2n ** 64n - 1n
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** One column chunk, as hyparquet-writer's `writeColumn` writes a flat column's. */
function writeChunk(parquet: ParquetWriter, column: Column, rows: ChunkRows, pageSize: number, scratch: Scratch): Pending {
  const { source, element, optional, codec } = column
  const { values, vector } = rows
  const length = vector ? vector.length : values.length
  const { type, type_length } = element
  const writer = parquet.writer
  const stats = source.statistics ?? parquet.statistics
  const offsetStart = writer.offset
  let uncompressedSize = 0

  let bloomFilter: Uint32Array | undefined
  if (source.bloomFilter) {
    const builder = new BloomBuilder(element, typeof source.bloomFilter === 'object' ? source.bloomFilter : undefined)
    for (const v of values ?? valuesOf(vector)) builder.insert(v)
    bloomFilter = builder.finalize()
  }

  // a packed chunk's values are in range already (vectorOf refuses a u64 outside it) and need no unconverting
  const selectPhysical = element.converted_type !== 'UTF8'
  const physical = vector ? undefined : selectPhysical ? unconvert(element, values) : values
  if (physical && type === 'INT64') checkInt64(physical, element.converted_type === 'UINT_64')
  const { dictionary, indexes } = physical
    ? chooseDictionary(physical, type, type_length, source.encoding, !optional)
    : chooseVectorDictionary(vector!, type, type_length, source.encoding, !optional)

  const encodings: Encoding[] = []
  let encoding: Encoding
  let writeValues: DecodedArray | undefined
  let dictionary_page_offset: bigint | undefined
  if (dictionary && indexes) {
    writeValues = indexes
    encoding = 'RLE_DICTIONARY'
    dictionary_page_offset = BigInt(writer.offset)
    const entries = dictionary.length
    uncompressedSize += writeDictionaryPage(
      parquet,
      column,
      entries,
      vector
        ? out => writeVectorRows(out, vector, dictionary as number[])
        : out => writePlain(out, selectPhysical ? dictionary : unconvert(element, dictionary), type, type_length),
      scratch,
    )
    encodings.push('PLAIN')
  } else {
    writeValues = vector ? undefined : selectPhysical ? physical : unconvert(element, values!)
    encoding =
      source.encoding && source.encoding !== 'RLE_DICTIONARY' ? source.encoding : type === 'BOOLEAN' && length > 16 ? 'RLE' : 'PLAIN'
  }
  encodings.push(encoding)

  const pages: { start: number; end: number }[] = writeValues
    ? getPageBoundaries(writeValues, dictionary ? 'INT32' : type, type_length, pageSize)
    : vectorPageBoundaries(vector!, type_length, pageSize)
  const indexed = source.columnIndex === true && pages.length > 1
  const truncate = parquet.statisticsTruncateLength
  let columnIndex: ColumnIndex | undefined = indexed
    ? { null_pages: [], min_values: [], max_values: [], boundary_order: 'UNORDERED', null_counts: [] }
    : undefined
  const offsetIndex: OffsetIndex | undefined = source.offsetIndex !== false && pages.length > 1 ? { page_locations: [] } : undefined
  const chunkStats = stats ? { min: undefined as Value | undefined, max: undefined as Value | undefined, nulls: 0 } : undefined
  let ascending = true
  let descending = true
  let previousMin: Value | undefined
  let previousMax: Value | undefined

  const data_page_offset = BigInt(writer.offset)
  for (const { start, end } of pages) {
    const pageOffset = writer.offset
    uncompressedSize += writeDataPage(parquet, column, encoding, rows, writeValues, start, end, scratch)

    if (columnIndex || chunkStats) {
      const s = vector ? vectorStatistics(vector, start, end, indexes, dictionary?.length) : statistics(values, start, end)
      if (chunkStats) {
        chunkStats.nulls += s.nulls
        if (s.min !== undefined && (chunkStats.min === undefined || compare(s.min, chunkStats.min) < 0)) chunkStats.min = s.min
        if (s.max !== undefined && (chunkStats.max === undefined || compare(s.max, chunkStats.max) > 0)) chunkStats.max = s.max
      }
      if (columnIndex) {
        const nullPage = s.nulls === end - start
        const minBytes = unconvertMinMax(s.min, element, false, truncate)
        const maxBytes = unconvertMinMax(s.max, element, true, truncate)
        if (!nullPage && (!minBytes || !maxBytes)) {
          columnIndex = undefined
        } else {
          columnIndex.null_pages.push(nullPage)
          columnIndex.min_values.push(minBytes ?? new Uint8Array())
          columnIndex.max_values.push(maxBytes ?? new Uint8Array())
          columnIndex.null_counts!.push(BigInt(s.nulls))
          for (const [before, now] of [
            [previousMin, s.min],
            [previousMax, s.max],
          ]) {
            const order = before === undefined || now === undefined ? 0 : compare(before, now)
            if (order > 0) ascending = false
            if (order < 0) descending = false
          }
          previousMin = s.min
          previousMax = s.max
        }
      }
    }
    offsetIndex?.page_locations.push({
      offset: BigInt(pageOffset),
      compressed_page_size: writer.offset - pageOffset,
      first_row_index: BigInt(start),
    })
  }
  if (columnIndex) columnIndex.boundary_order = ascending ? 'ASCENDING' : descending ? 'DESCENDING' : 'UNORDERED'

  return {
    chunk: {
      meta_data: {
        type,
        encodings,
        path_in_schema: [element.name],
        codec,
        num_values: BigInt(length),
        total_compressed_size: BigInt(writer.offset - offsetStart),
        total_uncompressed_size: BigInt(uncompressedSize),
        data_page_offset,
        dictionary_page_offset,
        statistics: chunkStats && {
          min_value: signedZero(chunkStats.min),
          max_value: chunkStats.max,
          null_count: BigInt(chunkStats.nulls),
        },
        encoding_stats: stats
          ? [
              ...(dictionary_page_offset === undefined
                ? []
                : [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }]),
              { page_type: 'DATA_PAGE_V2' as const, encoding, count: pages.length },
            ]
          : undefined,
      },
      file_offset: BigInt(offsetStart),
    },
    columnIndex,
    offsetIndex,
    bloomFilter,
  } as Pending
}

/** hyparquet-writer's INT64 range check, before statistics or encoders see the values. */
function checkInt64(values: DecodedArray, unsigned: boolean): void {
  const [min, max] = unsigned ? [0n, UINT64_MAX] : [INT64_MIN, INT64_MAX]
  for (const value of values as Iterable<bigint | null | undefined>) {
    if (value !== null && value !== undefined && (value < min || value > max))
      throw new RangeError(`parquet INT64 value out of range: ${value}`)
  }
}

/** One data page (v2) of rows [start, end): header with the CRC-32 of the body, then the body. Returns its uncompressed size, header included. */
function writeDataPage(
  parquet: ParquetWriter,
  column: Column,
  encoding: Encoding,
  { values, vector }: ChunkRows,
  writeValues: DecodedArray | undefined,
  start: number,
  end: number,
  { body, values: plain, rle }: Scratch,
): number {
  const { type, type_length } = column.element
  reset(body)
  let nulls = 0
  let levelBytes = 0
  // a packed chunk's PLAIN values are written from its buffers (no writeValues)
  let pageValues =
    writeValues === undefined ? [] : ArrayBuffer.isView(writeValues) ? writeValues.subarray(start, end) : writeValues.slice(start, end)
  if (column.optional) {
    const levels = new Uint8Array(end - start)
    for (let i = start; i < end; i++) {
      const present = vector ? vector.valid === null || vector.valid[i] !== 0 : values[i] !== null && values[i] !== undefined
      levels[i - start] = present ? 1 : 0
      if (!present) nulls++
    }
    levelBytes = writeRleBitPackedHybrid(body, levels, 1)
    if (nulls) pageValues = pageValues.filter((v: Value) => v !== null && v !== undefined)
  }

  reset(plain)
  if (encoding === 'PLAIN') {
    if (writeValues) writePlain(plain, pageValues, type, type_length)
    else writeVectorPlain(plain, vector!, start, end)
  } else if (encoding === 'RLE') {
    reset(rle)
    writeRleBitPackedHybrid(rle, pageValues, 1)
    plain.appendUint32(rle.offset)
    plain.appendBytes(rle.getBytes())
  } else if (encoding === 'RLE_DICTIONARY') {
    let maxValue = 0
    // an index loop: for-of over a typed array makes an object a value
    for (let i = 0; i < pageValues.length; i++) if ((pageValues[i] as number) > maxValue) maxValue = pageValues[i] as number
    const bitWidth = Math.ceil(Math.log2(maxValue + 1))
    plain.appendUint8(bitWidth)
    writeRleBitPackedHybrid(plain, pageValues, bitWidth)
  } else {
    throw new Error(`parquet: ${column.source.name}: encoding ${encoding} is not written by row-groups.ts`)
  }
  const raw = plain.getBytes()
  compressInto(parquet, column.codec, body, raw)
  const headerSize = appendPage(parquet.writer, body, {
    type: 'DATA_PAGE_V2',
    uncompressed_page_size: levelBytes + raw.length,
    data_page_header_v2: {
      num_values: end - start,
      num_nulls: nulls,
      num_rows: end - start,
      encoding,
      definition_levels_byte_length: levelBytes,
      repetition_levels_byte_length: 0,
      is_compressed: true, // as hyparquet-writer writes it, whatever the codec
    },
  })
  return headerSize + levelBytes + raw.length
}

/** The chunk's dictionary page of `entries` values, which `fill` writes PLAIN, with the CRC-32 of its body. Returns its uncompressed size, header included. */
function writeDictionaryPage(
  parquet: ParquetWriter,
  column: Column,
  entries: number,
  fill: (out: ByteWriter) => void,
  { body, values: plain }: Scratch,
): number {
  reset(plain)
  fill(plain)
  const raw = plain.getBytes()
  reset(body)
  compressInto(parquet, column.codec, body, raw)
  const headerSize = appendPage(parquet.writer, body, {
    type: 'DICTIONARY_PAGE',
    uncompressed_page_size: raw.length,
    dictionary_page_header: { num_values: entries, encoding: 'PLAIN' },
  })
  return headerSize + raw.length
}

/** Appends a page: `header` with the size and CRC-32 of `body`, then `body` (the page as stored). Returns the header's size. */
function appendPage(writer: ParquetWriter['writer'], body: ByteWriter, header: Omit<PageHeader, 'compressed_page_size' | 'crc'>): number {
  const start = writer.offset
  writePageHeader(writer, { ...header, compressed_page_size: body.offset, crc: crc32(body.getBytes()) | 0 })
  const headerSize = writer.offset - start
  writer.appendBytes(body.getBytes())
  return headerSize
}

/** `raw` compressed by `codec`, appended to `out`: snappy into `out` itself, other codecs by the writer's compressors. */
function compressInto(parquet: ParquetWriter, codec: Codec, out: ByteWriter, raw: Uint8Array): void {
  if (codec === 'SNAPPY') snappyInto(out, raw)
  else out.appendBytes(parquet.compressors[codec]?.(raw) ?? raw)
}

function reset(w: ByteWriter): void {
  w.index = 0
  w.offset = 0
}

/** Min, max and nulls of values [start, end), ordered as hyparquet-writer orders statistics. */
function statistics(values: DecodedArray, start: number, end: number): { min?: Value; max?: Value; nulls: number } {
  let min: Value | undefined
  let max: Value | undefined
  let nulls = 0
  for (let i = start; i < end; i++) {
    const v = values[i]
    if (v === null || v === undefined) {
      nulls++
      continue
    }
    if (min === undefined || compare(v, min) < 0) min = v
    if (max === undefined || compare(v, max) > 0) max = v
  }
  return { min, max, nulls }
}

/** Parquet's signed-zero rule for a minimum (hyparquet-writer writes -0). */
const signedZero = (v: Value | undefined): Value | undefined => (v === 0 ? -0 : v)

/** Unsigned byte order for bytes, code-point order for text, `<` otherwise: hyparquet-writer's `compareValues`. */
function compare(a: Value, b: Value): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b)
  if (typeof a === 'string' && typeof b === 'string') return compareText(a, b)
  return a < b ? -1 : a > b ? 1 : 0
}

/** UTF-8 byte order, which is code-point order (lone surrogates as U+FFFD, as TextEncoder writes them). */
function compareText(a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  if (i > 0) {
    const previous = a.charCodeAt(i - 1)
    if (previous >= 0xd800 && previous <= 0xdbff) i--
  }
  while (i < a.length && i < b.length) {
    const x = codePoint(a, i)
    const y = codePoint(b, i)
    if (x !== y) return x - y
    i += x > 0xffff ? 2 : 1
  }
  return a.length - b.length
}

function codePoint(s: string, i: number): number {
  const c = s.codePointAt(i) ?? 0xfffd
  return c >= 0xd800 && c <= 0xdfff ? 0xfffd : c
}

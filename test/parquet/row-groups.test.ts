/**
 * `writeRowGroups` writes, byte for byte, what the writer wrote before it: hyparquet-writer's
 * `ParquetWriter.write`, then every page header rewritten with the CRC-32 of its body and every
 * offset the metadata holds moved by the bytes the headers grew (the reference below). Every
 * dataset the service declares, in layouts from one page a chunk to a page every few rows.
 */
import { parquetHeader } from 'hyparquet/src/column.js'
import { ParquetWriter, type ColumnSource } from 'hyparquet-writer'
import { writePageHeader } from 'hyparquet-writer/src/datapage.js'
import { describe, expect, it } from 'vitest'
import { DEX_DATASETS } from '../../src/datasets/dex.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { MOVE_DATASETS } from '../../src/datasets/move.ts'
import { ChunkedWriter } from '../../src/parquet/chunked-writer.ts'
import { writeRowGroups } from '../../src/parquet/row-groups.ts'
import { parquetSchemaOf, storedFields } from '../../src/parquet/write.ts'
import { columnOf, type DatasetDecl } from '../../src/schema/dataset.ts'
import { crc32 } from '../../src/store/crc32.ts'
import { makePools, makeRows, rng, toColumns } from '../query/lake.ts'

const LAYOUTS = [
  { rowGroupSize: 10_000, pageSize: 8192 },
  { rowGroupSize: 50, pageSize: 256 },
  { rowGroupSize: 7, pageSize: 40 },
]

function writer(dataset: DatasetDecl): ParquetWriter {
  return new ParquetWriter({ writer: new ChunkedWriter(), schema: parquetSchemaOf(dataset), statisticsTruncateLength: Infinity })
}

function sources(dataset: DatasetDecl, seed: number, rows: number): ColumnSource[] {
  const r = rng(seed)
  const pools = makePools(rng(seed + 1))
  const blocks = Array.from({ length: Math.ceil(rows / 6) }, (_, i) => 1000 + i)
  const batch = toColumns(dataset, makeRows(dataset, blocks, r, pools))
  return storedFields(dataset).map(f => ({
    name: columnOf(f),
    data: batch.columns[columnOf(f)] as ColumnSource['data'],
    columnIndex: columnOf(f) === dataset.rangeKey,
    offsetIndex: true,
    ...(f.bloom ? { bloomFilter: { fpp: 0.01 } } : {}),
  }))
}

function finished(parquet: ParquetWriter): Uint8Array {
  parquet.finish()
  return (parquet.writer as ChunkedWriter).getBytes()
}

describe('writeRowGroups', () => {
  for (const dataset of [...EVM_DATASETS, ...DEX_DATASETS, ...MOVE_DATASETS]) {
    it(`writes hyparquet-writer's bytes with page checksums: ${dataset.name}`, () => {
      for (const [i, { rowGroupSize, pageSize }] of LAYOUTS.entries()) {
        const columns = sources(dataset, 11 * i + dataset.name.length, 300)
        const reference = writer(dataset)
        reference.write({ columnData: columns, rowGroupSize, pageSize })
        withPageChecksums(reference)
        const ours = writer(dataset)
        writeRowGroups(ours, columns, rowGroupSize, pageSize)
        const [expected, actual] = [finished(reference), finished(ours)]
        expect(actual.length, `${dataset.name} ${rowGroupSize}/${pageSize}`).toBe(expected.length)
        expect(Buffer.compare(actual, expected), `${dataset.name} ${rowGroupSize}/${pageSize}`).toBe(0)
      }
    })
  }

  it('writes no row group for no rows, and refuses columns of unequal length or without a compressor', () => {
    const [dataset] = EVM_DATASETS
    const empty = writer(dataset)
    writeRowGroups(
      empty,
      sources(dataset, 1, 0).map(c => ({ ...c, data: [] })),
      100,
      8192,
    )
    expect(empty.row_groups).toEqual([])
    const columns = sources(dataset, 2, 60)
    expect(() => writeRowGroups(writer(dataset), [columns[0], { ...columns[1], data: columns[1].data.slice(1) }], 100, 8192)).toThrow(
      'same length',
    )
    expect(() => writeRowGroups(writer(dataset), [{ ...columns[0], codec: 'ZSTD' }], 100, 8192)).toThrow('no compressor')
  })
})

/** The reference: every page header `parquet` has written given its CRC-32, and every offset moved to match. */
function withPageChecksums(parquet: ParquetWriter): void {
  const written = (parquet.writer as ChunkedWriter).getBytes()
  const length = written.length
  const out = new ChunkedWriter()
  out.appendBytes(written.subarray(0, 4))
  const moved = new Map<number, number>()
  let offset = 4
  while (offset < length) {
    moved.set(offset, out.offset)
    const reader = { view: new DataView(written.buffer, offset, Math.min(1024, length - offset)), offset: 0 }
    const header = parquetHeader(reader)
    const body = written.subarray(offset + reader.offset, offset + reader.offset + header.compressed_page_size)
    writePageHeader(out, { ...header, crc: crc32(body) | 0 })
    out.appendBytes(body)
    offset += reader.offset + header.compressed_page_size
  }
  moved.set(length, out.offset)
  const at = (o: bigint | number): number => moved.get(Number(o))!
  for (const group of parquet.row_groups) {
    let uncompressed = 0n
    for (const chunk of group.columns) {
      const m = chunk.meta_data!
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
      const end = start + Number(m.total_compressed_size)
      m.total_uncompressed_size += BigInt(at(end) - at(start) - (end - start))
      m.total_compressed_size = BigInt(at(end) - at(start))
      m.data_page_offset = BigInt(at(m.data_page_offset))
      if (m.dictionary_page_offset !== undefined) m.dictionary_page_offset = BigInt(at(m.dictionary_page_offset))
      chunk.file_offset = BigInt(at(start))
      uncompressed += m.total_uncompressed_size
    }
    const first = Number(group.columns[0].file_offset)
    const last = group.columns.at(-1)!.meta_data!
    group.total_byte_size = uncompressed
    group.total_compressed_size = BigInt(
      Number(last.dictionary_page_offset ?? last.data_page_offset) + Number(last.total_compressed_size) - first,
    )
  }
  for (const { offsetIndex } of parquet.pendingIndexes) {
    for (const page of offsetIndex?.page_locations ?? []) {
      const start = Number(page.offset)
      page.compressed_page_size = at(start + page.compressed_page_size) - at(start)
      page.offset = BigInt(at(start))
    }
  }
  parquet.writer = out
}

/**
 * The page header and offset index readers against hyparquet's: headers of every page
 * type, with the fields the decoder skips (page statistics, fields of every Thrift type
 * it does not know), and every page and offset index of partitions written for the real
 * datasets. A header or an index cut short anywhere, or naming a page type or encoding
 * that does not exist, throws.
 */
import { parquetMetadata, readOffsetIndex, type ColumnChunk, type PageHeader } from 'hyparquet'
import { parquetHeader } from 'hyparquet/src/column.js'
import { ByteWriter } from 'hyparquet-writer'
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js'
import { describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import { readPageHeader, readPageLocations } from '../../src/parquet/page-header.ts'
import { writePartition } from '../../src/parquet/write.ts'
import { randomBatch } from '../query/lake.ts'

function thrift(value: Record<string, unknown>): Uint8Array {
  const writer = new ByteWriter()
  serializeTCompactProtocol(writer, value)
  return new Uint8Array(writer.getBytes())
}

const at = (bytes: Uint8Array, offset = 0) => ({ view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset })

/** hyparquet's header without what the decoder does not read (statistics, the index page header). */
function hyparquetHeader(bytes: Uint8Array, offset = 0): { header: PageHeader; end: number } {
  const reader = at(bytes, offset)
  const { statistics: s1, ...v1 } = parquetHeader(reader).data_page_header ?? ({} as never)
  reader.offset = offset
  const h = parquetHeader(reader)
  const { statistics: s2, ...v2 } = h.data_page_header_v2 ?? ({} as never)
  void s1
  void s2
  const header: PageHeader = {
    type: h.type,
    uncompressed_page_size: h.uncompressed_page_size,
    compressed_page_size: h.compressed_page_size,
  }
  if (h.crc !== undefined) header.crc = h.crc
  if (h.data_page_header) header.data_page_header = v1 as PageHeader['data_page_header']
  if (h.dictionary_page_header)
    header.dictionary_page_header = Object.fromEntries(Object.entries(h.dictionary_page_header).filter(([, v]) => v !== undefined)) as never
  if (h.data_page_header_v2) header.data_page_header_v2 = v2 as PageHeader['data_page_header_v2']
  return { header, end: reader.offset }
}

function ours(bytes: Uint8Array, offset = 0): { header: PageHeader; end: number } {
  const reader = at(bytes, offset)
  const header = readPageHeader(reader)
  return { header, end: reader.offset }
}

/** Every column chunk of a logs and a transactions partition written with small pages, and the file's bytes. */
function* writtenChunks(seed: number): Generator<{ bytes: Uint8Array; chunk: ColumnChunk }> {
  for (const dataset of [logs, transactions]) {
    const { bytes } = writePartition(dataset, randomBatch(dataset, 0, 100, seed), { from: 0, to: 99 }, { rowGroupSize: 300, pageSize: 512 })
    const metadata = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
    for (const group of metadata.row_groups) for (const chunk of group.columns) yield { bytes, chunk }
  }
}

const statistics = {
  field_1: new Uint8Array([9, 9]),
  field_2: new Uint8Array([1]),
  field_3: 4n,
  field_4: 2n,
  field_5: new Uint8Array(40),
  field_6: new Uint8Array(3),
  field_7: true,
}
/** Fields of every Thrift type the reader must pass over. */
const unknown = {
  field_20: 1.5,
  field_21: [1, 2, 3],
  field_22: [true, false, true],
  field_23: { field_1: [new Uint8Array(5)], field_2: 7n },
  field_24: false,
  field_25: -3,
}

const HEADERS: Record<string, Record<string, unknown>> = {
  'data page v1 with statistics': {
    field_1: 0,
    field_2: 100,
    field_3: 80,
    field_4: -123456,
    field_5: { field_1: 10, field_2: 8, field_3: 3, field_4: 3, field_5: statistics },
  },
  'data page v2, uncompressed, with statistics': {
    field_1: 3,
    field_2: 5000,
    field_3: 5000,
    field_8: { field_1: 40, field_2: 2, field_3: 40, field_4: 0, field_5: 6, field_6: 0, field_7: false, field_8: statistics },
  },
  'data page v2, compressed by default': {
    field_1: 3,
    field_2: 70000,
    field_3: 1234,
    field_4: 77,
    field_8: { field_1: 1, field_2: 0, field_3: 1, field_4: 8, field_5: 0, field_6: 0 },
  },
  'dictionary page, sorted': { field_1: 2, field_2: 64, field_3: 64, field_7: { field_1: 4, field_2: 0, field_3: true } },
  'fields of every type it does not read': {
    field_1: 3,
    field_2: 10,
    field_3: 10,
    field_8: { field_1: 1, field_2: 0, field_3: 1, field_4: 0, field_5: 0, field_6: 0, ...unknown },
    ...unknown,
  },
}

describe('readPageHeader', () => {
  for (const [name, value] of Object.entries(HEADERS)) {
    it(`reads ${name} as hyparquet does, and ends where it does`, () => {
      const bytes = thrift(value)
      const padded = new Uint8Array(bytes.length + 9)
      padded.set(bytes, 4)
      expect(ours(padded, 4)).toEqual(hyparquetHeader(padded, 4))
    })
    it(`throws on ${name} cut short anywhere`, () => {
      const bytes = thrift(value)
      for (let n = 0; n < bytes.length; n++) expect(() => ours(bytes.subarray(0, n)), `cut at ${n}`).toThrow()
    })
  }

  it('throws on a page type or an encoding that does not exist', () => {
    expect(() => ours(thrift({ field_1: 9, field_2: 1, field_3: 1 }))).toThrow('page type 9')
    expect(() => ours(thrift({ field_1: 3, field_2: 1, field_3: 1, field_8: { field_1: 1, field_4: 99 } }))).toThrow('encoding 99')
    expect(() => ours(thrift({ field_2: 1, field_3: 1 }))).toThrow('lacks its type')
  })

  it('reads every page header of written partitions as hyparquet does', () => {
    let pages = 0
    for (const { bytes, chunk } of writtenChunks(3)) {
      const m = chunk.meta_data!
      let offset = Number(m.dictionary_page_offset ?? m.data_page_offset)
      const end = offset + Number(m.total_compressed_size)
      while (offset < end) {
        const theirs = hyparquetHeader(bytes, offset)
        expect(ours(bytes, offset)).toEqual(theirs)
        offset = theirs.end + theirs.header.compressed_page_size
        pages++
      }
    }
    expect(pages).toBeGreaterThan(100)
  })

  it('reads every offset index of written partitions as hyparquet does, large offsets included, and throws on one cut short', () => {
    let indexes = 0
    for (const { bytes, chunk } of writtenChunks(5)) {
      if (chunk.offset_index_offset === undefined) continue
      const index = bytes.subarray(Number(chunk.offset_index_offset), Number(chunk.offset_index_offset) + chunk.offset_index_length!)
      const theirs = readOffsetIndex(at(index)).page_locations.map(p => ({
        offset: Number(p.offset),
        compressed_page_size: p.compressed_page_size,
        first_row_index: Number(p.first_row_index),
      }))
      expect(readPageLocations(at(index))).toEqual(theirs)
      if (indexes++ % 7 === 0) for (let n = 0; n < index.length; n++) expect(() => readPageLocations(at(index.subarray(0, n)))).toThrow()
    }
    expect(indexes).toBeGreaterThan(40)
    const far = { field_1: [{ field_1: 2n ** 40n + 3n, field_2: 77, field_3: 2n ** 33n }], field_2: [5n, 6n] }
    expect(readPageLocations(at(thrift(far)))).toEqual([{ offset: 2 ** 40 + 3, compressed_page_size: 77, first_row_index: 2 ** 33 }])
  })
})

/**
 * The page checksums the writer adds (standard PageHeader.crc) and what the page decoder
 * makes of pages whose bytes or headers were damaged: CorruptPageError, never other values.
 */
import { parquetHeader } from 'hyparquet/src/column.js'
import { describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { CorruptPageError, decodeDictionary, decodePages, type ChunkLayout } from '../../src/parquet/pages.ts'
import { storedFields, writePartition } from '../../src/parquet/write.ts'
import { shapeOf } from '../../src/columns/vector.ts'
import { makePools, makeRows, rng, toColumns } from '../query/lake.ts'

const rows = makeRows(
  logs,
  Array.from({ length: 200 }, (_, i) => i),
  rng(1),
  makePools(rng(2)),
  8,
)
const written = writePartition(logs, toColumns(logs, rows), { from: 0, to: 199 }, { pageSize: 1024 })

/** The first chunk of `column`: its layout, its data pages' bytes and its dictionary page's. */
function chunk(column: string) {
  const field = storedFields(logs).find(f => f.name === column)!
  const m = written.metadata.row_groups[0].columns.find(c => c.meta_data!.path_in_schema[0] === column)!.meta_data!
  const layout: ChunkLayout = { shape: shapeOf(field.kind), optional: field.nullable === true, codec: m.codec }
  const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
  const data = written.bytes.slice(Number(m.data_page_offset), start + Number(m.total_compressed_size))
  const dictionary = m.dictionary_page_offset === undefined ? undefined : written.bytes.slice(start, Number(m.data_page_offset))
  return { layout, data, dictionary, rows: Number(written.metadata.row_groups[0].num_rows) }
}

describe('page checksums', () => {
  it('decode when intact, and a flipped bit in a page body or a dictionary page is a CorruptPageError', () => {
    const c = chunk('data')
    expect(decodePages(c.layout, c.data, 0, 0, c.rows, undefined, { endRow: c.rows }).length).toBe(c.rows)
    const header = parquetHeader({ view: new DataView(c.data.buffer), offset: 0 })
    expect(header.crc).toBeDefined()
    const damaged = c.data.slice()
    damaged[damaged.length - 2] ^= 0x10
    expect(() => decodePages(c.layout, damaged, 0, 0, c.rows, undefined, { endRow: c.rows })).toThrow(CorruptPageError)
    const t = chunk('topic0')
    expect(t.dictionary).toBeDefined()
    const dictionary = t.dictionary!.slice()
    dictionary[dictionary.length - 1] ^= 1
    expect(() => decodeDictionary(t.layout, dictionary)).toThrow(CorruptPageError)
  })

  it('refuses pages whose headers disagree with the offset index or the chunk’s encodings', () => {
    const c = chunk('block_number')
    const dictionary = c.dictionary && decodeDictionary(c.layout, c.dictionary)
    expect(decodePages(c.layout, c.data, 0, 0, c.rows, dictionary, { endRow: c.rows }).length).toBe(c.rows)
    expect(() => decodePages(c.layout, c.data, 0, 0, c.rows - 1, dictionary, { endRow: c.rows - 1 })).toThrow(CorruptPageError)
    expect(() => decodePages(c.layout, c.data, 0, 0, c.rows, dictionary, { endRow: c.rows, encodings: ['DELTA_BINARY_PACKED'] })).toThrow(
      CorruptPageError,
    )
  })
})

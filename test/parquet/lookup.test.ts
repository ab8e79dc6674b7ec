import { describe, expect, it } from 'vitest'
import { parquetReadObjects } from 'hyparquet'
import { logs } from '../../src/datasets/evm.ts'
import { sortOrder, writeLookup } from '../../src/parquet/lookup.ts'
import { writePartition } from '../../src/parquet/write.ts'
import type { DatasetDecl, LookupDecl } from '../../src/schema/dataset.ts'
import { makePools, makeRows, plain, rng, toColumns, type Row } from '../query/lake.ts'
import { takeBatch, unpackBatch, type ColumnBatch, type PackedBatch } from '../../src/columns/batch.ts'
import { compareValues } from '../../src/columns/compare.ts'
import { vectorOf } from '../../src/columns/vector.ts'

const bytes = (...xs: number[]) => Uint8Array.from(xs)
/** Columns of bigints packed as u64, of bytes as binary. */
const batchOf = (columns: ColumnBatch['columns']): PackedBatch => ({
  length: Object.values(columns)[0].length,
  columns: Object.fromEntries(
    Object.entries(columns).map(([c, vs]) => [c, vectorOf(vs.some(v => typeof v === 'bigint') ? 'u64int' : 'bytes', vs)]),
  ),
})

describe('sortOrder', () => {
  it('puts nulls first and keeps rows with equal values in their order', () => {
    const batch = batchOf({ a: [bytes(2), null, bytes(1), null, bytes(2), bytes(1)] })
    expect(Array.from(sortOrder(batch, ['a']))).toEqual([1, 3, 2, 5, 0, 4])
  })

  it('puts nulls first in a number column and in a later column too', () => {
    expect(Array.from(sortOrder(batchOf({ n: [3n, null, 1n, null] }), ['n']))).toEqual([1, 3, 2, 0])
    const batch = batchOf({ a: [bytes(1), bytes(1), bytes(0), bytes(1)], b: [bytes(5), null, bytes(9), bytes(0)] })
    expect(Array.from(sortOrder(batch, ['a', 'b']))).toEqual([2, 1, 3, 0])
  })

  it('orders bytes as unsigned, byte by byte, a prefix before its extensions', () => {
    const batch = batchOf({ a: [bytes(0x80), bytes(0x7f), bytes(0x00, 0x01), bytes(0x00), bytes(0xff, 0x00), bytes()] })
    expect(Array.from(sortOrder(batch, ['a']))).toEqual([5, 3, 2, 1, 0, 4])
  })

  it('orders bigints by value, beyond 2^63 too', () => {
    const batch = batchOf({ n: [(1n << 64n) - 1n, 5n, 1n << 63n, 0n] })
    expect(Array.from(sortOrder(batch, ['n']))).toEqual([3, 1, 2, 0])
  })

  it('breaks ties by the next column, then by row', () => {
    const batch = batchOf({
      a: [bytes(1), bytes(0), bytes(1), bytes(0), bytes(1)],
      n: [2n, 9n, 1n, 9n, 1n],
    })
    expect(Array.from(sortOrder(batch, ['a', 'n']))).toEqual([1, 3, 2, 4, 0])
    expect(Array.from(sortOrder(batch, ['n', 'a']))).toEqual([2, 4, 0, 1, 3])
  })

  it('orders random byte values, short and long, sharing their first bytes or not, as a comparison of whole values does', () => {
    const r = rng(9)
    const value = () =>
      r() < 0.1 ? null : Uint8Array.from({ length: Math.floor(r() * 10) }, (_, k) => (k < 5 && r() < 0.8 ? 0 : Math.floor(r() * 3) * 127))
    for (let round = 0; round < 20; round++) {
      const batch = batchOf({ a: Array.from({ length: 300 }, value), n: Array.from({ length: 300 }, () => BigInt(Math.floor(r() * 3))) })
      const plainOf = unpackBatch(batch)
      const expected = Array.from({ length: 300 }, (_, i) => i).sort((i, j) => {
        for (const c of ['a', 'n']) {
          const [x, y] = [plainOf.columns[c][i], plainOf.columns[c][j]]
          const d = x === null ? (y === null ? 0 : -1) : y === null ? 1 : compareValues(x!, y!)
          if (d !== 0) return d
        }
        return i - j
      })
      expect(Array.from(sortOrder(batch, ['a', 'n']))).toEqual(expected)
    }
  })

  it('of no rows is empty', () => {
    expect(sortOrder(batchOf({ a: [] }), ['a']).length).toBe(0)
  })
})

describe('takeBatch', () => {
  it('reorders every column alike and leaves the input as it was', () => {
    const batch = batchOf({ a: [bytes(1), null, bytes(3)], n: [10n, 20n, 30n] })
    const out = takeBatch(batch, Int32Array.from([2, 0, 1]))
    expect(unpackBatch(out)).toEqual({ length: 3, columns: { a: [bytes(3), bytes(1), null], n: [30n, 10n, 20n] } })
    expect(unpackBatch(batch).columns.n).toEqual([10n, 20n, 30n])
  })
})

describe('writeLookup', () => {
  const GROUP = 7
  const dataset: DatasetDecl & { lookup: LookupDecl } = { ...logs, lookup: { column: 'address', rowGroupSize: GROUP } }
  const r = rng(21)
  const rows = makeRows(
    logs,
    Array.from({ length: 40 }, (_, i) => 500 + i),
    r,
    makePools(r),
  )
  const written = writeLookup(dataset, toColumns(logs, rows), { from: 500, to: 539 })

  async function readBack(): Promise<Row[]> {
    const buf = written.bytes.buffer.slice(written.bytes.byteOffset, written.bytes.byteOffset + written.bytes.length) as ArrayBuffer
    return (await parquetReadObjects({ file: buf, utf8: false })) as Row[]
  }
  /** A row as comparable text, every stored column. */
  const text = (row: Row) => JSON.stringify(Object.keys(toColumns(logs, [row]).columns).map(c => plain(row[c])))

  it('holds the same rows, sorted by the lookup column and then the dataset order', async () => {
    expect(rows.length).toBeGreaterThan(4 * GROUP)
    const back = await readBack()
    expect(back.map(text).sort()).toEqual(rows.map(text).sort())
    // Equal-width addresses: hex order is byte order.
    const key = (row: Row) => [plain(row.address) as string, row.block_number as bigint, row.log_index as bigint] as const
    for (let i = 1; i < back.length; i++) {
      const [a, b] = [key(back[i - 1]), key(back[i])]
      expect(a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] < b[2])))).toBe(true)
    }
    expect(rows.map(key).some((k, i, all) => i > 0 && k[0] < all[i - 1][0])).toBe(true)
  })

  it('writes row groups of rowGroupSize rows whose address bounds are their first and last rows', async () => {
    const back = await readBack()
    const groups = written.metadata.row_groups
    expect(groups.length).toBe(Math.ceil(rows.length / GROUP))
    expect(groups.map(g => Number(g.num_rows))).toEqual(groups.map((_, i) => Math.min(GROUP, rows.length - i * GROUP)))
    groups.forEach((g, i) => {
      const stats = g.columns.find(c => c.meta_data?.path_in_schema[0] === 'address')!.meta_data!.statistics!
      expect([plain(stats.min_value as Uint8Array), plain(stats.max_value as Uint8Array)]).toEqual([
        plain(back[i * GROUP].address),
        plain(back[Math.min(rows.length, (i + 1) * GROUP) - 1].address),
      ])
    })
  })

  it('writes no bloom filter, where the block-ordered partition of the same rows has them', () => {
    const chunks = written.metadata.row_groups.flatMap(g => g.columns)
    expect(chunks.filter(c => c.meta_data?.bloom_filter_offset !== undefined)).toEqual([])
    expect(Object.keys(written.entry.blooms ?? {})).toEqual([])
    const ordered = writePartition(dataset, toColumns(logs, rows), { from: 500, to: 539 })
    expect(Object.keys(ordered.entry.blooms ?? {})).toContain('address')
  })

  it('records the range and row count, and a tail after the last data page', () => {
    expect(written.entry).toMatchObject({ from: 500, to: 539, rows: rows.length, bytes: written.bytes.length })
    const dataEnd = Math.max(
      ...written.metadata.row_groups.flatMap(g =>
        g.columns.map(
          c => Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset) + Number(c.meta_data!.total_compressed_size),
        ),
      ),
    )
    expect(written.entry.tailOffset).toBe(dataEnd)
  })
})

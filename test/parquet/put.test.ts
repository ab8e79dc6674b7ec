import { createHash } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { blocks, logs } from '../../src/datasets/evm.ts'
import { putPartition } from '../../src/parquet/put.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { ObjectStore, PutOptions } from '../../src/store/types.ts'
import { makePools, makeRows, plain, rng, toColumns, type Row } from '../query/lake.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

afterAll(removeTempDirs)

/** A temp store that records every put. */
async function recorded(): Promise<{ store: ObjectStore; puts: { key: string; options?: PutOptions }[] }> {
  const { store: inner } = await tempStore()
  const puts: { key: string; options?: PutOptions }[] = []
  return { puts, store: { ...inner, put: (key, body, options) => (puts.push({ key, options }), inner.put(key, body, options)) } }
}

const rowsOf = (dataset: DatasetDecl, from: number, to: number, seed: number): Row[] => {
  const r = rng(seed)
  return makeRows(
    dataset,
    Array.from({ length: to - from + 1 }, (_, i) => from + i),
    r,
    makePools(r),
    30,
  )
}

async function stored(store: ObjectStore, key: string): Promise<Uint8Array> {
  const got = await store.get(key)
  if (!got) throw new Error(`nothing at ${key}`)
  return got.body
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
const buffer = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer
/** Logs with lookup groups of 128 rows, so a partition of a few thousand rows gets a copy (real logs need 16 × 1,024). */
const LOGS = { ...logs, lookup: { column: 'address', rowGroupSize: 128 } }

const text = (row: Row) =>
  JSON.stringify(
    Object.keys(row)
      .sort()
      .map(c => plain(row[c])),
  )

describe('putPartition', () => {
  it('stores a logs partition and its lookup copy under content keys, and the entry describes both', async () => {
    const { store, puts } = await recorded()
    const rows = rowsOf(logs, 2000, 2149, 1)
    expect(rows.length).toBeGreaterThan(16 * 128)
    const { entry, skipped } = await putPartition(store, ETH, LOGS, toColumns(logs, rows), { from: 2000, to: 2149 })
    expect(skipped).toBe(0)
    expect(puts.map(p => p.key)).toEqual([entry.key, entry.lookup!.key])
    expect(puts.every(p => p.options?.contentType === 'application/vnd.apache.parquet')).toBe(true)
    expect((await store.list('evm-1/')).map(o => o.key).sort()).toEqual([entry.key, entry.lookup!.key].sort())

    const partition = await stored(store, entry.key)
    expect(entry).toMatchObject({ from: 2000, to: 2149, rows: rows.length, bytes: partition.length })
    expect(entry.key).toBe(`evm-1/logs/000000002000-000000002149-${sha256(partition).slice(0, 16)}.parquet`)

    const lookup = entry.lookup!
    const copy = await stored(store, lookup.key)
    expect(lookup.column).toBe('address')
    expect(lookup.key).toBe(`evm-1/logs/by-address/000000002000-000000002149-${sha256(copy).slice(0, 16)}.parquet`)
    expect(lookup.bytes).toBe(copy.length)
    expect(lookup.tailOffset).toBeGreaterThan(4)
    expect(lookup.tailOffset).toBeLessThan(lookup.bytes)
    // The tail alone opens the copy: it ends where its last column chunk ends.
    const metadata = parquetMetadata(buffer(copy.subarray(lookup.tailOffset)))
    const dataEnd = Math.max(
      ...metadata.row_groups.flatMap(g =>
        g.columns.map(
          c => Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset) + Number(c.meta_data!.total_compressed_size),
        ),
      ),
    )
    expect(dataEnd).toBe(lookup.tailOffset)
    const groups = Math.ceil(rows.length / 128)
    expect(metadata.row_groups.map(g => Number(g.num_rows))).toEqual(
      Array.from({ length: groups }, (_, i) => (i < groups - 1 ? 128 : rows.length - 128 * (groups - 1))),
    )
    const back = (await parquetReadObjects({ file: buffer(copy), utf8: false })) as Row[]
    expect(back.map(text).sort()).toEqual(rows.map(text).sort())
  })

  it('skips both puts when run again on the same rows, returning the same entry', async () => {
    const { store, puts } = await recorded()
    const batch = toColumns(logs, rowsOf(logs, 0, 199, 2))
    expect(batch.length).toBeGreaterThan(16 * 128)
    const first = await putPartition(store, ETH, LOGS, batch, { from: 0, to: 199 })
    expect(puts.length).toBe(2)
    const again = await putPartition(store, ETH, LOGS, batch, { from: 0, to: 199 })
    expect(again.skipped).toBe(2)
    expect(again.entry).toEqual(first.entry)
    expect(puts.length).toBe(2)

    // A lost lookup copy is written again, the partition still skipped.
    await store.delete(first.entry.lookup!.key)
    const repaired = await putPartition(store, ETH, LOGS, batch, { from: 0, to: 199 })
    expect(repaired.skipped).toBe(1)
    expect(puts.slice(2).map(p => p.key)).toEqual([first.entry.lookup!.key])
    expect((await store.head(first.entry.lookup!.key))?.size).toBe(first.entry.lookup!.bytes)
  })

  it('writes one object and no lookup entry for a dataset without a lookup copy', async () => {
    const { store, puts } = await recorded()
    expect(blocks.lookup).toBeUndefined()
    const rows = rowsOf(blocks, 10, 29, 3)
    const { entry, skipped } = await putPartition(store, ETH, blocks, toColumns(blocks, rows), { from: 10, to: 29 })
    expect(skipped).toBe(0)
    expect(entry).not.toHaveProperty('lookup')
    expect(puts.map(p => p.key)).toEqual([entry.key])
    expect(entry.key).toMatch(/^evm-1\/blocks\/000000000010-000000000029-[0-9a-f]{16}\.parquet$/)
    expect((await store.list('evm-1/')).map(o => o.key)).toEqual([entry.key])
  })

  it('writes no lookup copy of a partition too small for one to be read (fewer than 16 groups of rows)', async () => {
    const { store, puts } = await recorded()
    const batch = toColumns(logs, rowsOf(logs, 0, 199, 2))
    expect(batch.length).toBeLessThan(16 * logs.lookup!.rowGroupSize)
    const { entry } = await putPartition(store, ETH, logs, batch, { from: 0, to: 199 })
    expect(entry).not.toHaveProperty('lookup')
    expect(puts.map(p => p.key)).toEqual([entry.key])
    const copied = await putPartition(store, ETH, LOGS, batch, { from: 0, to: 199 })
    expect(copied.entry.lookup).toBeDefined()
  })

  it('writes no lookup copy of an empty batch', async () => {
    const { store, puts } = await recorded()
    const { entry } = await putPartition(store, ETH, logs, toColumns(logs, []), { from: 7, to: 9 })
    expect(entry.rows).toBe(0)
    expect(entry).not.toHaveProperty('lookup')
    expect(puts.map(p => p.key)).toEqual([entry.key])
    expect(await store.list('evm-1/logs/by-address/')).toEqual([])
  })
})

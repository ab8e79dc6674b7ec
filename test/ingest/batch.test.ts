import { describe, expect, it } from 'vitest'
import { BatchBuilder, concatBatches, sliceRange, sortBatch } from '../../src/ingest/batch.ts'
import { packBatch, unpackBatch } from '../../src/columns/batch.ts'
import { logs } from '../../src/datasets/evm.ts'
import { storedFields } from '../../src/parquet/write.ts'
import { columnOf } from '../../src/schema/dataset.ts'

const row = (block: bigint, index: bigint) =>
  Object.fromEntries(storedFields(logs).map(f => [columnOf(f), f.name === 'block_number' ? block : f.name === 'log_index' ? index : null]))

describe('BatchBuilder', () => {
  it('refuses a row missing a stored column or carrying an unknown one', () => {
    const b = new BatchBuilder(logs)
    const { data: _dropped, ...missing } = row(1n, 0n)
    expect(() => b.push(missing)).toThrow('logs: row has no value for column data')
    expect(() => new BatchBuilder(logs).push({ ...row(1n, 0n), colour: 'red' })).toThrow(
      'logs: row has columns the declaration does not store: colour',
    )
  })

  it('sorts by the declaration order and slices by block', () => {
    const b = new BatchBuilder(logs)
    for (const [blk, i] of [
      [2n, 1n],
      [1n, 5n],
      [2n, 0n],
      [1n, 4n],
    ])
      b.push(row(blk, i))
    const batch = b.finish()
    expect(batch.columns.block_number).toEqual([1n, 1n, 2n, 2n])
    expect(batch.columns.log_index).toEqual([4n, 5n, 0n, 1n])
    expect(sortBatch(logs, batch)).toBe(batch)
    const packed = packBatch(storedFields(logs), batch)
    const slice = (from: number, to: number) => unpackBatch(sliceRange(packed, 'block_number', from, to))
    expect(slice(2, 2).columns.log_index).toEqual([0n, 1n])
    expect(slice(3, 9).length).toBe(0)
    expect(sliceRange(packed, 'block_number', 1, 2)).toBe(packed)
    expect(concatBatches([slice(1, 1), slice(2, 2)])).toEqual(batch)
  })
})

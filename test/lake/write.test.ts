import { describe, expect, it } from 'vitest'
import { parquetReadObjects } from 'hyparquet'
import { logs } from '../../src/datasets/evm.ts'
import { writePartition, parquetSchemaOf } from '../../src/lake/write.ts'

describe('writePartition', () => {
  it('round-trips a logs batch', async () => {
    const n = 25
    const b = (len: number, x: number) => new Uint8Array(len).fill(x)
    const columns = {
      block_number: Array.from({ length: n }, (_, i) => 100n + BigInt(Math.floor(i / 5))),
      block_hash: Array.from({ length: n }, (_, i) => b(32, Math.floor(i / 5))),
      transaction_index: Array.from({ length: n }, (_, i) => BigInt(i % 5)),
      transaction_hash: Array.from({ length: n }, (_, i) => b(32, i)),
      log_index: Array.from({ length: n }, (_, i) => BigInt(i % 5)),
      address: Array.from({ length: n }, (_, i) => b(20, i % 3)),
      topic0: Array.from({ length: n }, (_, i) => (i % 4 === 0 ? null : b(32, 7))),
      topic1: Array.from({ length: n }, () => null),
      topic2: Array.from({ length: n }, () => null),
      topic3: Array.from({ length: n }, () => null),
      data: Array.from({ length: n }, (_, i) => b(i, 1)),
      removed: Array.from({ length: n }, () => false),
      block_timestamp: Array.from({ length: n }, () => 1700000000n),
    }
    const w = writePartition(logs, { length: n, columns }, { from: 100, to: 104 }, { rowGroupSize: 10 })
    expect(w.entry.rows).toBe(25)
    expect(w.entry.rowGroups.map(g => [g.from, g.to, g.rows])).toEqual([[100, 101, 10], [102, 103, 10], [104, 104, 5]])
    expect(w.entry.tailOffset).toBeLessThan(w.entry.bytes)
    const buf = w.bytes.buffer.slice(w.bytes.byteOffset, w.bytes.byteOffset + w.bytes.length) as ArrayBuffer
    const rows = await parquetReadObjects({ file: buf, utf8: false })
    expect(rows[3].block_number).toBe(100n)
    expect(rows[4].topic0).toBe(null)
    expect(rows[5].topic0).toEqual(b(32, 7))
    expect(rows[7].data).toEqual(b(7, 1))
    expect(parquetSchemaOf(logs).find(e => e.name === 'address')).toMatchObject({ type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20 })
  })
})

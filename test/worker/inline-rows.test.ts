import { describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { ByteWriter } from '../../src/index/bytes.ts'
import { decodeRows, rowFieldsOf, sliceColumns, sliceWriter } from '../../src/index/rows.ts'

describe('inline rows in workerd', () => {
  it('writes and reads a slice of repeated values', () => {
    const fields = rowFieldsOf(logs)
    const contract = Uint8Array.from({ length: 20 }, (_, i) => i + 1)
    const n = 40
    const word = new Uint8Array(32).fill(7, 24)
    const columns = Object.fromEntries(fields.map(f => [f.column, new Array(n).fill(null)]))
    for (let i = 0; i < n; i++) {
      columns.block_number[i] = 19_000_000n + BigInt(i * 3)
      columns.block_hash[i] = Uint8Array.from({ length: 32 }, (_, j) => (i * 31 + j) & 255)
      columns.transaction_index[i] = BigInt(i % 5)
      columns.transaction_hash[i] = Uint8Array.from({ length: 32 }, (_, j) => (i * 17 + j * 3) & 255)
      columns.log_index[i] = BigInt(i)
      columns.address[i] = contract
      columns.topic0[i] = new Uint8Array(32).fill(0xdd)
      columns.data[i] = word
      columns.removed[i] = false
    }
    const batch = { length: n, columns }
    const out = new ByteWriter()
    const rows = {
      columns: sliceColumns(fields, [batch]),
      part: new Uint32Array(n),
      row: Uint32Array.from({ length: n }, (_, i) => i),
      lo: 0,
      hi: n,
    }
    sliceWriter(fields, 'address')(rows, out)
    const bytes = out.finish()
    expect(bytes[0]).toBe(0)
    expect(bytes.length).toBeLessThan(n * 90)
    const back = decodeRows(fields, 'address', contract, bytes, n)
    expect(back.length).toBe(n)
    for (const f of fields) expect(back.columns[f.column]).toEqual(columns[f.column])
  })
})

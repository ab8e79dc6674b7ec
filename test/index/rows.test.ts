import { describe, expect, it } from 'vitest'
import { DEX_DATASETS } from '../../src/datasets/dex.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { MOVE_DATASETS } from '../../src/datasets/move.ts'
import { decodeRows, encodeRows, rowCodecId, rowFieldsOf } from '../../src/index/rows.ts'
import { IndexFormatError } from '../../src/index/bytes.ts'
import { indexedColumns, type DatasetDecl } from '../../src/schema/dataset.ts'
import { KINDS, type StoredValue } from '../../src/schema/kinds.ts'
import { makePools, makeRows, plain, randomBytes, rng, toColumns, type Row } from '../query/lake.ts'

const indexed = [...EVM_DATASETS, ...MOVE_DATASETS, ...DEX_DATASETS].filter(d => indexedColumns(d).length > 0)

/** Rows at the edges of every kind: nulls where allowed, the largest u64, empty and long byte strings, zero and full-width quantities. */
function edgeRows(d: DatasetDecl): Row[] {
  const r = rng(3)
  return [0, 1, 2].map(n => {
    const row: Row = {}
    for (const f of rowFieldsOf(d)) {
      const decl = d.fields.find(x => (x.column ?? x.name) === f.column)!
      const width = KINDS[f.kind].width
      let v: StoredValue | null
      if (n === 0 && decl.nullable) v = null
      else if (f.kind === 'u64hex' || f.kind === 'u64int') v = [0n, (1n << 64n) - 1n, 1n << 53n][n]
      else if (f.kind === 'bytes') v = [new Uint8Array(0), randomBytes(r, 70_000), Uint8Array.of(0)][n]
      else if (f.kind === 'bool') v = n === 1
      else if (f.kind === 'string') v = ['', 'x'.repeat(5000), 'é€😀'][n]
      else if (f.kind === 'json') v = ['{}', JSON.stringify({ a: 'b'.repeat(300) }), '[1,null]'][n]
      else v = [new Uint8Array(width!), new Uint8Array(width!).fill(255), randomBytes(r, width!)][n]
      row[f.column] = v
    }
    return row
  })
}

const plainRows = (rows: Row[], columns: string[]) => rows.map(row => Object.fromEntries(columns.map(c => [c, plain(row[c] ?? null)])))

describe('inline row codec', () => {
  it('covers every dataset with an indexed column', () => {
    expect(indexed.map(d => d.name)).toEqual(expect.arrayContaining(['logs', 'transactions', 'blocks']))
    expect(indexed.some(d => d.family === 'move')).toBe(true)
  })

  for (const d of indexed) {
    it(`round-trips ${d.family} ${d.name}: random rows, nulls, big integers, empty and long bytes`, () => {
      const fields = rowFieldsOf(d)
      const columns = fields.map(f => f.column)
      const rows = [...makeRows(d, [1, 2, 3, 4, 5], rng(7), makePools(rng(8)), 6), ...edgeRows(d)]
      const batch = toColumns(d, rows)
      const order = rows.map((_, i) => rows.length - 1 - i)
      const bytes = encodeRows(fields, batch, order)
      const back = decodeRows(fields, bytes, rows.length)
      expect(back.length).toBe(rows.length)
      const decoded = Array.from({ length: back.length }, (_, i) => Object.fromEntries(columns.map(c => [c, back.columns[c][i]])))
      expect(plainRows(decoded, columns)).toEqual(
        plainRows(
          order.map(i => rows[i]),
          columns,
        ),
      )
      // slices concatenate: the rows of two encodings are the rows of both
      const first = encodeRows(fields, batch, [0, 1])
      const second = encodeRows(fields, batch, [2])
      const joined = new Uint8Array([...first, ...second])
      expect(
        plainRows(
          [0, 1, 2].map(i => Object.fromEntries(columns.map(c => [c, decodeRows(fields, joined, 3).columns[c][i]]))),
          columns,
        ),
      ).toEqual(plainRows(rows.slice(0, 3), columns))
    })
  }

  it('refuses bytes that are not the rows they claim, and names the declaration in its id', () => {
    const [logs] = indexed.filter(d => d.name === 'logs')
    const fields = rowFieldsOf(logs)
    const rows = makeRows(logs, [1, 2], rng(1), makePools(rng(2)), 4)
    const bytes = encodeRows(
      fields,
      toColumns(logs, rows),
      rows.map((_, i) => i),
    )
    expect(() => decodeRows(fields, bytes, rows.length + 1)).toThrow(IndexFormatError)
    expect(() => decodeRows(fields, bytes.subarray(0, bytes.length - 1), rows.length)).toThrow(IndexFormatError)
    expect(() => decodeRows(fields, new Uint8Array([...bytes, 0]), rows.length)).toThrow(IndexFormatError)
    expect(rowCodecId(fields)).toMatch(/^[0-9a-f]{16}$/)
    expect(rowCodecId(fields.slice(1))).not.toBe(rowCodecId(fields))
    expect(() =>
      encodeRows(fields, { length: 1, columns: { [fields[0].column]: ['not a value' as unknown as StoredValue] } }, [0]),
    ).toThrow(RangeError)
  })
})

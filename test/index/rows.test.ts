import { describe, expect, it } from 'vitest'
import { DEX_DATASETS } from '../../src/datasets/dex.ts'
import { logs } from '../../src/datasets/evm.ts'
import { moveDecodedTransactions, moveTransactions } from '../../src/datasets/move.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { MOVE_DATASETS } from '../../src/datasets/move.ts'
import {
  decodeRows,
  decodeSlice,
  sliceWriter,
  rowCodecId,
  rowFieldsOf,
  sliceColumns,
  sliceIds,
  sliceNumbers,
  valueCheck,
  type RowField,
  type SliceIds,
} from '../../src/index/rows.ts'
import { ByteWriter } from '../../src/index/bytes.ts'
import type { ColumnBatch } from '../../src/columns/batch.ts'
import { vectorOf } from '../../src/columns/vector.ts'
import { IndexFormatError } from '../../src/index/bytes.ts'
import { columnOf, indexedColumns, type DatasetDecl } from '../../src/schema/dataset.ts'
import { bytesToInt, intToBytes, KINDS, type StoredValue } from '../../src/schema/kinds.ts'
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
const rowsOf = (b: ColumnBatch, columns: string[]): Row[] =>
  Array.from({ length: b.length }, (_, i) => Object.fromEntries(columns.map(c => [c, b.columns[c][i]])))

/** The slice of rows `order` of `batch` for `column` (check as a slice writer takes it); the same with u64s converted and values numbered first, as a build does. */
function slice(fields: readonly RowField[], column: string, batch: ColumnBatch, order: number[], check?: number | null): Uint8Array {
  const encode = (build: boolean) => {
    const w = new ByteWriter()
    const rows = {
      columns: sliceColumns(fields, [batch]),
      part: new Uint32Array(order.length),
      row: Uint32Array.from(order),
      lo: 0,
      hi: order.length,
    }
    const built = { ...rows, numbers: sliceNumbers(fields, [batch]), ids: sliceIds(fields, [batch]) }
    sliceWriter(fields, column)(build ? built : rows, w, check)
    return w.finish()
  }
  const bytes = encode(false)
  expect(encode(true)).toEqual(bytes)
  return bytes
}

/** Field f's ids of batch p, row by row. */
const idsOf = (ids: SliceIds, p: number, f: number): number[] =>
  Array.from({ length: ids.of[p].length / ids.stride }, (_, r) => ids.of[p][r * ids.stride + f])

describe('inline slice codec', () => {
  it('covers every dataset with an indexed column', () => {
    expect(indexed.map(d => d.name)).toEqual(expect.arrayContaining(['logs', 'transactions', 'blocks']))
    expect(indexed.some(d => d.family === 'move')).toBe(true)
  })

  for (const d of indexed) {
    it(`round-trips ${d.family} ${d.name}: random rows, nulls, big integers, empty and long bytes, per indexed column`, () => {
      const fields = rowFieldsOf(d)
      const columns = fields.map(f => f.column)
      const rows = [...makeRows(d, [1, 2, 3, 4, 5], rng(7), makePools(rng(8)), 6), ...edgeRows(d)]
      for (const column of indexedColumns(d)) {
        // every row given the first row's value of the looked-up column, as a slice holds one value
        const value = rows.find(r => r[column] !== null)?.[column] ?? (typeof rows[0][column] === 'string' ? 'x' : new Uint8Array(32))
        const held = rows.map(r => ({ ...r, [column]: value }))
        const batch = toColumns(d, held)
        const order = held.map((_, i) => held.length - 1 - i)
        const bytes = slice(fields, column, batch, order)
        const want = plainRows(
          order.map(i => held[i]),
          columns,
        )
        expect(plainRows(rowsOf(decodeRows(fields, column, value as Uint8Array | string, bytes, held.length), columns), columns)).toEqual(
          want,
        )
        // the looked-up column is left out, and its value's check stands for it
        const { batch: bare, check } = decodeSlice(fields, column, bytes, held.length)
        expect(bare.columns[column]).toBeUndefined()
        expect(check).toBe(valueCheck(value as Uint8Array | string))
        // rows of another value under the same key are not these
        const other = typeof value === 'string' ? `${value}!` : Uint8Array.from(value as Uint8Array, x => x ^ 1)
        expect(decodeRows(fields, column, other, bytes, held.length).length).toBe(0)
        // a single row, and the rows without compression (all-distinct random rows)
        expect(
          plainRows(
            rowsOf(decodeRows(fields, column, value as Uint8Array | string, slice(fields, column, batch, [2]), 1), columns),
            columns,
          ),
        ).toEqual(plainRows([held[2]], columns))
      }
    })
  }

  it('stores the looked-up column when the slice holds two values (a key collision), and re-encodes decoded rows alike', () => {
    const fields = rowFieldsOf(logs)
    const columns = fields.map(f => f.column)
    const rows = makeRows(logs, [1, 2, 3], rng(4), makePools(rng(5)), 5)
    const batch = toColumns(logs, rows)
    const order = rows.map((_, i) => i)
    const bytes = slice(fields, 'address', batch, order)
    const { batch: back, check } = decodeSlice(fields, 'address', bytes, rows.length)
    expect(check).toBeNull()
    expect(plainRows(rowsOf(back, columns), columns)).toEqual(plainRows(rows, columns))
    // whatever value is looked up, the rows come back as stored: the query's filter picks its own
    expect(decodeRows(fields, 'address', new Uint8Array(20), bytes, rows.length).length).toBe(rows.length)
    // decoded rows re-encode to the same slice (what a merge does)
    expect(slice(fields, 'address', back, order, null)).toEqual(bytes)
  })

  it('writes what repeats once: a contract’s transfers in one slice, ABI words without their zeros', () => {
    const fields = rowFieldsOf(logs)
    const rows = makeRows(
      logs,
      Array.from({ length: 40 }, (_, i) => 1000 + i * 7),
      rng(9),
      makePools(rng(10)),
      2,
    )
    const contract = rows[0].address
    const same = rows.map(r => ({ ...r, address: contract, topic0: rows[0].topic0, data: new Uint8Array(32).fill(0, 0, 24) }))
    const bytes = slice(
      fields,
      'address',
      toColumns(logs, same),
      same.map((_, i) => i),
    )
    expect(bytes[0]).toBe(0)
    const rowByRow = same.length * (20 + 32 * 4 + 32 + 32)
    expect(bytes.length).toBeLessThan(rowByRow * 0.7)
    expect(decodeRows(fields, 'address', contract as Uint8Array, bytes, same.length).length).toBe(same.length)
  })

  it('refuses bytes that are not the rows they claim, and names the layout in its id', () => {
    const fields = rowFieldsOf(logs)
    const rows = makeRows(logs, [1, 2], rng(1), makePools(rng(2)), 4)
    const batch = toColumns(logs, rows)
    const one = rows.map(r => ({ ...r, topic0: rows[0].topic0 }))
    for (const bytes of [slice(fields, 'address', batch, [0, 1, 2]), slice(fields, 'topic0', toColumns(logs, one), [0, 1, 2])]) {
      expect(() => decodeSlice(fields, 'address', bytes, 4)).toThrow(IndexFormatError)
      expect(() => decodeSlice(fields, 'address', bytes.subarray(0, bytes.length - 1), 3)).toThrow(IndexFormatError)
      expect(() => decodeSlice(fields, 'address', new Uint8Array([...bytes, 0]), 3)).toThrow(IndexFormatError)
    }
    expect(() => decodeSlice(fields, 'address', Uint8Array.of(9, 0), 1)).toThrow(IndexFormatError)
    expect(() => decodeSlice(fields, 'address', Uint8Array.of(1, 200, 0), 1)).toThrow(IndexFormatError)
    expect(rowCodecId(fields)).toMatch(/^[0-9a-f]{16}$/)
    expect(rowCodecId(fields.slice(1))).not.toBe(rowCodecId(fields))
    expect(rowCodecId(fields.map(f => (f.column === 'data' ? { ...f, kind: 'string' as const } : f)))).not.toBe(rowCodecId(fields))
    expect(() =>
      slice(fields, 'address', { length: 1, columns: { [fields[0].column]: ['not a value' as unknown as StoredValue] } }, [0]),
    ).toThrow(RangeError)
    // a negative or too large u64 is refused, with or without the numbers a build converts first
    for (const bad of [-1n, 1n << 64n]) {
      const batch = { length: 1, columns: { block_number: [bad] } }
      for (const numbers of [undefined, sliceNumbers(fields, [batch])]) {
        const rows = { columns: sliceColumns(fields, [batch]), numbers, part: [0], row: [0], lo: 0, hi: 1 }
        expect(() => sliceWriter(fields, 'address')(rows, new ByteWriter())).toThrow(RangeError)
      }
    }
  })

  it("writes a signed integer (`int`) in two's complement without its sign-extension bytes, and reads back the same bytes", () => {
    const fields: RowField[] = [
      { column: 'block', kind: 'u64int' },
      { column: 'n', kind: 'int' },
    ]
    const max = (1n << 263n) - 1n
    const cases: [bigint, number][] = [
      [0n, 1],
      [-1n, 1],
      [1n, 2],
      [-128n, 2],
      [-129n, 2],
      [-257n, 3],
      [255n, 2],
      [10n ** 18n, 9],
      [-(10n ** 18n), 9],
      [max, 34],
      [-max - 1n, 34],
    ]
    for (const [n, size] of cases) {
      const batch: ColumnBatch = { length: 1, columns: { block: [1n], n: [intToBytes(n)] } }
      const bytes = slice(fields, 'block', batch, [0])
      // flags (a u64 lookup column is stored), the block (1), the integer's tag (1), then the integer
      expect(bytes.length - 3).toBe(size)
      expect(bytesToInt(decodeSlice(fields, 'block', bytes, 1).batch.columns.n[0] as Uint8Array)).toBe(n)
    }
    expect(rowCodecId(fields)).not.toBe(rowCodecId([fields[0], { column: 'n', kind: 'u256pad' as const }]))
  })

  it("writes the same slices from a build's value ids as from the values, over batches that share values", () => {
    for (const d of indexed) {
      const fields = rowFieldsOf(d)
      const r = rng(21)
      const pools = makePools(rng(22))
      const batches = [3, 1, 4].map(seed => toColumns(d, makeRows(d, [seed, seed + 1, seed + 2], rng(seed), pools, 20)))
      const refs = Array.from({ length: 300 }, () => Math.floor(r() * batches.length)).filter(p => batches[p].length > 0)
      const part = Uint32Array.from(refs)
      const row = Uint32Array.from(refs, p => Math.floor(r() * batches[p].length))
      const rows = { columns: sliceColumns(fields, batches), part, row, lo: 0, hi: refs.length }
      const ids = sliceIds(fields, batches)
      for (const column of [...indexedColumns(d), 'none']) {
        for (const [lo, hi] of [
          [0, refs.length],
          [10, 11],
          [50, 60],
        ]) {
          const encode = (withIds: boolean) => {
            const w = new ByteWriter()
            sliceWriter(fields, column)({ ...rows, lo, hi, ...(withIds ? { ids } : {}) }, w)
            return w.finish()
          }
          expect(encode(true)).toEqual(encode(false))
        }
      }
      // equal values share an id across batches; a value of the wrong width is refused alike
      const address = fields.find(f => KINDS[f.kind].width === 20)
      if (!address) continue
      const a = address.column
      const f = fields.indexOf(address)
      const wrong = { length: 1, columns: { [a]: [new Uint8Array(19)] } }
      const both = [
        { length: 2, columns: { [a]: [Uint8Array.of(...new Uint8Array(20).fill(1)), null] } },
        wrong,
        { length: 1, columns: { [a]: [new Uint8Array(20).fill(1)] } },
      ]
      const numbered = sliceIds(fields, both)
      expect([0, 1, 2].flatMap(p => idsOf(numbered, p, f))).toEqual([0, -1, -2, 0])
      expect(numbered.counts[f]).toBe(1)
      const refuse = (withIds: boolean) => () =>
        sliceWriter(fields, 'none')(
          { columns: sliceColumns(fields, both), part: [1], row: [0], lo: 0, hi: 1, ...(withIds ? { ids: numbered } : {}) },
          new ByteWriter(),
        )
      expect(refuse(false)).toThrow(RangeError)
      expect(refuse(true)).toThrow(RangeError)
    }
  })

  it('writes a column the batch lacks as nulls', () => {
    const fields = rowFieldsOf(logs)
    const address = new Uint8Array(20).fill(7)
    const bytes = slice(fields, 'address', { length: 1, columns: { block_number: [5n], address: [address] } }, [0])
    const back = decodeRows(fields, 'address', address, bytes, 1)
    expect(back.columns.block_number).toEqual([5n])
    expect(back.columns.address).toEqual([address])
    expect(back.columns.topic0).toEqual([null])
    expect(back.columns.removed).toEqual([null])
  })

  it('gives both Move declarations of one storage the same layout (integers in one, hex in the other)', () => {
    expect(rowFieldsOf(moveDecodedTransactions).map(f => f.column)).toEqual(rowFieldsOf(moveTransactions).map(f => f.column))
    expect(rowCodecId(rowFieldsOf(moveDecodedTransactions))).toBe(rowCodecId(rowFieldsOf(moveTransactions)))
    expect(moveDecodedTransactions.fields.filter(f => !f.virtual).map(columnOf)).toEqual(expect.arrayContaining(['version']))
  })
})

describe('sliceNumbers and sliceIds of packed columns', () => {
  it('give what they give of the same values plain: numbers below 2^52, NaN above, -1 for null; equal ids for equal bytes', () => {
    const fields = [
      { column: 'n', kind: 'u64int' as const },
      { column: 'h', kind: 'hash' as const },
      { column: 'd', kind: 'bytes' as const },
    ]
    const h = (x: number) => new Uint8Array(32).fill(x)
    const plain: ColumnBatch = {
      length: 7,
      columns: {
        n: [0n, 2n ** 52n - 1n, 2n ** 52n, 2n ** 53n + 1n, 2n ** 64n - 1n, null, 7n],
        h: [h(1), h(2), h(1), null, h(3), h(2), h(1)],
        d: [
          Uint8Array.of(1, 2),
          Uint8Array.of(),
          null,
          Uint8Array.of(1, 2),
          Uint8Array.of(9, 9, 9, 9, 9),
          Uint8Array.of(1),
          Uint8Array.of(),
        ],
      },
    }
    const packed = {
      length: 7,
      columns: Object.fromEntries(fields.map(f => [f.column, vectorOf(f.kind, plain.columns[f.column])])),
    }
    const numbers = sliceNumbers(fields, [packed])[0][0]!
    expect(Array.from(numbers)).toEqual([0, 2 ** 52 - 1, NaN, NaN, NaN, -1, 7])
    expect(Array.from(numbers)).toEqual(Array.from(sliceNumbers(fields, [plain])[0][0]!))
    const [a, b] = [sliceIds(fields, [plain]), sliceIds(fields, [packed])]
    expect(b.counts).toEqual(a.counts)
    expect(b.stride).toBe(fields.length)
    expect(Array.from(b.of[0])).toEqual(Array.from(a.of[0]))
    expect(idsOf(b, 0, 1)).toEqual([0, 1, 0, -1, 2, 1, 0])
  })
})

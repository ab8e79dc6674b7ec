import { describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import type { DatasetDecl, FieldDecl } from '../../src/schema/dataset.ts'
import { KINDS, type Operator, type StoredValue } from '../../src/schema/kinds.ts'
import {
  decideVirtual,
  lowerBound,
  pruningFilterOf,
  rowTest,
  selectCodes,
  selectRows,
  statisticsExclude,
  valueTest,
} from '../../src/query/filter.ts'
import { vectorOf, type U64Vector } from '../../src/columns/vector.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import type { Predicate } from '../../src/query/types.ts'
import { compareBytes } from '../../src/columns/compare.ts'

const field = (d: DatasetDecl, name: string): FieldDecl => d.fields.find(f => f.name === name)!
const pred = (d: DatasetDecl, name: string, op: Operator, ...values: (StoredValue | null)[]): Predicate => ({
  field: field(d, name),
  op,
  values,
})
const b = (...xs: number[]) => new Uint8Array(xs)

describe('valueTest', () => {
  it('treats null in eq/in as IS NULL, OR-ed with the listed values', () => {
    const isNull = valueTest(pred(logs, 'topic0', 'in', null))
    expect([isNull(null), isNull(b(1))]).toEqual([true, false])
    const nullOr = valueTest(pred(transactions, 'to', 'in', null, b(1, 2)))
    expect([nullOr(null), nullOr(b(1, 2)), nullOr(b(1, 3))]).toEqual([true, true, false])
    const notNull = valueTest(pred(transactions, 'to', 'eq', b(1, 2)))
    expect(notNull(null)).toBe(false)
  })

  it('orders u256 values as big-endian unsigned numbers and never matches null', () => {
    const big = new Uint8Array(32)
    big[0] = 1 // 2^248
    const small = new Uint8Array(32)
    small[31] = 255
    const gte = valueTest(pred(transactions, 'gas_price', 'gte', small))
    expect([gte(big), gte(small), gte(new Uint8Array(32)), gte(null)]).toEqual([true, true, false, false])
    const lte = valueTest(pred(transactions, 'value', 'lte', small))
    expect([lte(big), lte(small), lte(new Uint8Array(32))]).toEqual([false, true, true])
  })

  it('compares u64 values as bigints, beyond 2^63 too', () => {
    const gte = valueTest(pred(logs, 'block_number', 'gte', 1n << 63n))
    expect([gte((1n << 64n) - 1n), gte(1n << 63n), gte((1n << 63n) - 1n)]).toEqual([true, true, false])
    const within = valueTest(pred(logs, 'log_index', 'in', 1n, 5n))
    expect([within(5n), within(2n)]).toEqual([true, false])
  })

  it('matches long lists of byte values exactly (bucketed lookup)', () => {
    const values = Array.from({ length: 50 }, (_, i) => b(0, 0, 0, i % 3, i))
    const test = valueTest(pred(logs, 'address', 'in', ...values))
    expect(test(b(0, 0, 0, 2, 5))).toBe(true)
    expect(test(b(0, 0, 0, 1, 5))).toBe(false)
    expect(test(b(0, 0, 0, 2))).toBe(false)
    const short = b(7)
    expect(valueTest(pred(logs, 'data', 'in', ...values, short))(b(7))).toBe(true)
  })

  it('compares bytes lexicographically, shorter prefix first', () => {
    expect(compareBytes(b(1, 2), b(1, 3))).toBeLessThan(0)
    expect(compareBytes(b(2), b(1, 9))).toBeGreaterThan(0)
    expect(compareBytes(b(1), b(1, 0))).toBeLessThan(0)
    expect(compareBytes(b(4, 4), b(4, 4))).toBe(0)
  })
})

describe('decideVirtual', () => {
  it('decides chain and null fields once, keeping stored predicates', () => {
    const address = pred(logs, 'address', 'eq', b(1))
    expect(decideVirtual([pred(logs, 'chain', 'in', 1n, 10n), address], 1)).toEqual({ stored: [address], never: false })
    expect(decideVirtual([pred(logs, 'chain', 'eq', 10n), address], 1).never).toBe(true)
    expect(decideVirtual([pred(logs, 'chain', 'gte', 2n)], 1).never).toBe(true)
    expect(decideVirtual([pred(transactions, 'raw', 'in', null)], 1).never).toBe(false)
    expect(decideVirtual([pred(transactions, 'raw', 'eq', 'x')], 1).never).toBe(true)
  })
})

const addr = (x: number) => new Uint8Array(20).fill(x)

describe('selectRows', () => {
  it('returns the offsets within bounds where every predicate holds', () => {
    const columns = {
      address: vectorOf('address', [addr(1), addr(2), addr(1), null, addr(1)]),
      log_index: vectorOf('u64int', [0n, 1n, 2n, 3n, 4n]),
    }
    const rows = selectRows([pred(logs, 'address', 'eq', addr(1)), pred(logs, 'log_index', 'gte', 1n)], columns, 0, 5)
    expect(Array.from(rows)).toEqual([2, 4])
    expect(Array.from(selectRows([pred(logs, 'address', 'in', null)], columns, 0, 3))).toEqual([])
    expect(Array.from(selectRows([pred(logs, 'address', 'in', null)], columns, 0, 5))).toEqual([3])
    expect(Array.from(selectRows([], columns, 1, 3))).toEqual([1, 2])
  })

  it('finds range bounds in sorted keys by bisection', () => {
    const keys = vectorOf('u64int', [5n, 5n, 6n, 8n, 8n, 9n]) as U64Vector
    expect(lowerBound(keys, 0, 6, 6n)).toBe(2)
    expect(lowerBound(keys, 0, 6, 7n)).toBe(3)
    expect(lowerBound(keys, 0, 6, 10n)).toBe(6)
    expect(lowerBound(keys, 0, 6, 0n)).toBe(0)
  })
})

describe('rowTest', () => {
  const random = mulberry32(7)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]
  const u64s = [0n, 1n, 0xffffffffn, 0x100000000n, (1n << 53n) + 1n, (1n << 64n) - 1n]
  const bytesOf = (width: number) => {
    const pool = Array.from({ length: 8 }, (_, k) =>
      Uint8Array.from({ length: width }, (_, j) => (j < width - 2 ? k % 3 : (k * 37 + j) & 0xff)),
    )
    return () => pick(pool)
  }
  const makers: Record<string, { field: FieldDecl; make: () => StoredValue }> = {
    u64: { field: { name: 'n', kind: 'u64int', nullable: true }, make: () => pick(u64s) },
    fixed32: { field: { name: 'h', kind: 'u256pad', nullable: true }, make: bytesOf(32) },
    fixed20: { field: { name: 'a', kind: 'address', nullable: true }, make: bytesOf(20) },
    bytes: {
      field: { name: 'd', kind: 'bytes', nullable: true },
      make: () => pick([new Uint8Array(0), Uint8Array.of(1), Uint8Array.of(1, 2)]),
    },
    string: { field: { name: 's', kind: 'string', nullable: true }, make: () => pick(['', 'a', 'b', 'é']) },
    bool: { field: { name: 'f', kind: 'bool', nullable: true }, make: () => pick([true, false]) },
  }
  for (const [name, { field: f, make }] of Object.entries(makers)) {
    it(`agrees with valueTest on every row of a ${name} vector, nulls included`, () => {
      const values = Array.from({ length: 200 }, () => (random() < 0.15 ? null : make()))
      const vector = vectorOf(f.kind, values)
      const ops = KINDS[f.kind].operators
      for (let trial = 0; trial < 40; trial++) {
        const op = pick(ops)
        const count = op === 'in' ? 1 + Math.floor(random() * 7) : 1
        const listed = Array.from({ length: count }, () => (op !== 'gte' && op !== 'lte' && random() < 0.2 ? null : make()))
        const p: Predicate = { field: f, op, values: listed }
        const exact = valueTest(p)
        const test = rowTest(p, vector)
        values.forEach((v, i) => expect(test(i), `${op} ${i}`).toBe(exact(v)))
      }
    })
  }
})

describe('pruningFilterOf', () => {
  it('pushes the range and what hyparquet prunes correctly, keeps byte order for the scanner, and says which', () => {
    const address = pred(logs, 'address', 'eq', b(1))
    const topics = pred(logs, 'topic0', 'in', b(2), b(3))
    const nullable = pred(logs, 'topic1', 'in', null, b(4))
    const index = pred(logs, 'log_index', 'gte', 3n)
    const value = pred(transactions, 'value', 'gte', new Uint8Array(32))
    const data = pred(logs, 'data', 'lte', b(5))
    const chain = pred(logs, 'chain', 'eq', 1n)
    const { filter, pushed, byteOrder } = pruningFilterOf([address, topics, nullable, index, value, data, chain], 'block_number', [10, 20])
    expect(pushed).toEqual([address, topics, index, value])
    expect(byteOrder).toEqual([value])
    expect(filter).toEqual({
      $and: [
        { block_number: { $gte: 10n, $lte: 20n } },
        { address: { $eq: b(1) } },
        { topic0: { $in: [b(2), b(3)] } },
        { log_index: { $gte: 3n } },
      ],
    })
  })
})

describe('statisticsExclude', () => {
  it('rules out a row group only when its byte bounds prove no row meets the bound', () => {
    /** 32 bytes, big-endian: `first` in byte 0, `last` in byte 31. */
    const u = (last: number, first = 0) => Object.assign(new Uint8Array(32), { 0: first, 31: last })
    const gte = pred(transactions, 'value', 'gte', u(5))
    const lte = pred(transactions, 'value', 'lte', u(5))
    expect(statisticsExclude(gte, u(1), u(4))).toBe(true)
    expect(statisticsExclude(gte, u(1), u(5))).toBe(false)
    expect(statisticsExclude(lte, u(6), u(9))).toBe(true)
    expect(statisticsExclude(lte, u(5), u(9))).toBe(false)
    // Unsigned, first byte first: 0x01…00 is above 0x00…ff.
    expect(statisticsExclude(gte, u(0), u(255))).toBe(false)
    expect(statisticsExclude(pred(transactions, 'value', 'gte', u(0, 1)), u(0), u(255))).toBe(true)
    expect(statisticsExclude(lte, u(0, 1), u(0, 1))).toBe(true)
    // Missing or textual bounds prove nothing.
    expect(statisticsExclude(gte, undefined, undefined)).toBe(false)
    expect(statisticsExclude(gte, 'a', 'b')).toBe(false)
  })
})

describe('selectCodes', () => {
  it('keeps the same rows as selectRows on the decoded column, nulls included', () => {
    const random = mulberry32(11)
    const dictionary = vectorOf('address', [addr(1), addr(2), addr(3), addr(4)])
    const codes = Int32Array.from({ length: 300 }, () => Math.floor(random() * 5) - 1)
    const decoded = vectorOf(
      'address',
      Array.from(codes, c => (c < 0 ? null : addr(c + 1))),
    )
    const cases: Predicate[][] = [
      [pred(logs, 'address', 'eq', addr(2))],
      [pred(logs, 'address', 'in', addr(1), addr(4), null)],
      [pred(logs, 'address', 'in', null)],
      [pred(logs, 'address', 'in', addr(1), addr(3)), pred(logs, 'address', 'eq', addr(3))],
      [pred(logs, 'address', 'eq', addr(9))],
    ]
    const sizes = cases.map(predicates => {
      const expected = Array.from(selectRows(predicates, { address: decoded }, 20, 280))
      expect(Array.from(selectCodes(predicates, dictionary, codes, 20, 280))).toEqual(expected)
      return expected.length
    })
    expect(sizes.slice(0, 3).every(n => n > 0)).toBe(true)
    expect(sizes[4]).toBe(0)
  })
})

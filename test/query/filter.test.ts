import { describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import type { DatasetDecl, FieldDecl } from '../../src/schema/dataset.ts'
import type { Operator, StoredValue } from '../../src/schema/kinds.ts'
import { compareBytes, decideVirtual, lowerBound, pruningFilterOf, selectRows, valueTest } from '../../src/query/filter.ts'
import type { Predicate } from '../../src/query/types.ts'

const field = (d: DatasetDecl, name: string): FieldDecl => d.fields.find(f => f.name === name)!
const pred = (d: DatasetDecl, name: string, op: Operator, ...values: (StoredValue | null)[]): Predicate => ({ field: field(d, name), op, values })
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

describe('selectRows', () => {
  it('returns the offsets within bounds where every predicate holds', () => {
    const columns = {
      address: [b(1), b(2), b(1), undefined, b(1)],
      log_index: new BigUint64Array([0n, 1n, 2n, 3n, 4n]),
    }
    const rows = selectRows([pred(logs, 'address', 'eq', b(1)), pred(logs, 'log_index', 'gte', 1n)], columns, 0, 5)
    expect(Array.from(rows)).toEqual([2, 4])
    expect(Array.from(selectRows([pred(logs, 'address', 'in', null)], columns, 0, 3))).toEqual([])
    expect(Array.from(selectRows([], columns, 1, 3))).toEqual([1, 2])
  })

  it('finds range bounds in sorted keys by bisection', () => {
    const keys = new BigUint64Array([5n, 5n, 6n, 8n, 8n, 9n])
    expect(lowerBound(keys, 0, 6, 6n)).toBe(2)
    expect(lowerBound(keys, 0, 6, 7n)).toBe(3)
    expect(lowerBound(keys, 0, 6, 10n)).toBe(6)
    expect(lowerBound(keys, 0, 6, 0n)).toBe(0)
  })
})

describe('pruningFilterOf', () => {
  it('pushes the range and what hyparquet prunes correctly, and says which', () => {
    const address = pred(logs, 'address', 'eq', b(1))
    const topics = pred(logs, 'topic0', 'in', b(2), b(3))
    const nullable = pred(logs, 'topic1', 'in', null, b(4))
    const index = pred(logs, 'log_index', 'gte', 3n)
    const value = pred(transactions, 'value', 'gte', new Uint8Array(32))
    const chain = pred(logs, 'chain', 'eq', 1n)
    const { filter, pushed } = pruningFilterOf([address, topics, nullable, index, value, chain], 'block_number', [10, 20])
    expect(pushed).toEqual([address, topics, index])
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

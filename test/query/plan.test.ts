import { describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import type { PartitionEntry, RowGroupEntry } from '../../src/manifest/types.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { planPartition, planScan } from '../../src/query/plan.ts'
import { ETH } from '../support/chains.ts'

const group = (from: number, to: number, rows = 100): RowGroupEntry => ({ from, to, rows, offset: 4, length: 1 })
const partition = (key: string, from: number, to: number, rowGroups: RowGroupEntry[]): PartitionEntry => ({
  key,
  from,
  to,
  rows: rowGroups.reduce((n, g) => n + g.rows, 0),
  bytes: 1000,
  tailOffset: 900,
  rowGroups,
})
const field = (name: string): FieldDecl => logs.fields.find(f => f.name === name)!

const parts = [
  partition('a', 0, 99, [group(0, 40), group(40, 80), group(81, 99)]),
  partition('b', 100, 199, [group(100, 120), group(150, 160)]),
  partition('c', 300, 399, [group(300, 399)]),
]

describe('planPartition', () => {
  it('keeps the partitions and row groups whose blocks meet the range, and marks groups wholly inside', () => {
    expect(parts.map(p => planPartition(p, [70, 155]))).toEqual([
      { key: 'a', bytes: 1000, tailOffset: 900, rowGroups: [1, 2], inside: [false, true], rowStart: 100, rowEnd: 300 },
      { key: 'b', bytes: 1000, tailOffset: 900, rowGroups: [0, 1], inside: [true, false], rowStart: 0, rowEnd: 200 },
      null,
    ])
  })

  it('skips a partition whose span meets the range but whose row groups do not', () => {
    expect(planPartition(parts[1], [125, 145])).toBeNull()
  })

  it('carries the footer offset and bloom spans only when the manifest has both', () => {
    const blooms = { address: { offset: 700, length: 100 } }
    expect(planPartition({ ...parts[2], footerOffset: 800, blooms }, [300, 300])).toMatchObject({ footerOffset: 800, blooms })
    expect(planPartition({ ...parts[2], footerOffset: 800 }, [300, 300])).not.toHaveProperty('footerOffset')
  })
})

describe('planScan', () => {
  it('keeps the range', () => {
    expect(planScan({ chain: ETH, dataset: logs, predicates: [], fields: [field('address')] }, [70, 155]).range).toEqual([70, 155])
  })

  it('reads filter columns, output columns and the range key; drops virtual fields', () => {
    const address = { field: field('address'), op: 'eq' as const, values: [new Uint8Array(20)] }
    const chain = { field: field('chain'), op: 'eq' as const, values: [1n] }
    const plan = planScan(
      { chain: ETH, dataset: logs, predicates: [address, chain], fields: [field('chain'), field('data'), field('address')] },
      [0, 500],
    )
    expect({ filter: plan.filterColumns, output: plan.outputColumns, all: plan.columns, sorted: plan.sortedByRange }).toEqual({
      filter: ['address'],
      output: ['data', 'address'],
      all: ['block_number', 'address', 'data'],
      sorted: true,
    })
    expect(plan.predicates).toEqual([address])
    expect(plan.pushed).toEqual([address])
    expect(plan.empty).toBe(false)
    expect(plan.pruningFilter).toEqual({ $and: [{ block_number: { $gte: 0n, $lte: 500n } }, { address: { $eq: new Uint8Array(20) } }] })
  })

  it('orders filter columns by likely selectivity: bloom-filtered equality, other equality, order', () => {
    const p = (name: string, op: 'eq' | 'in' | 'gte', values: unknown[]) => ({ field: field(name), op, values: values as never[] })
    const predicates = [
      p('log_index', 'gte', [1n]),
      p('topic1', 'in', [null]),
      p('removed', 'eq', [true]),
      p('topic0', 'eq', [new Uint8Array(32)]),
    ]
    const plan = planScan({ chain: ETH, dataset: logs, predicates, fields: [] }, [0, 500])
    expect(plan.filterColumns).toEqual(['topic0', 'topic1', 'removed', 'log_index'])
  })

  it('plans nothing when a virtual predicate excludes every row', () => {
    const plan = planScan(
      { chain: ETH, dataset: logs, predicates: [{ field: field('chain'), op: 'eq', values: [2n] }], fields: [field('address')] },
      [0, 500],
    )
    expect(plan.empty).toBe(true)
  })

  it('names the columns whose bloom filters pruning reads: pushed equality only', () => {
    const p = (name: string, op: 'eq' | 'in' | 'gte', values: unknown[]) => ({ field: field(name), op, values: values as never[] })
    const predicates = [
      p('address', 'in', [new Uint8Array(20)]),
      p('topic0', 'eq', [new Uint8Array(32)]),
      p('topic1', 'in', [null]),
      p('block_number', 'gte', [3n]),
    ]
    expect(planScan({ chain: ETH, dataset: logs, predicates, fields: [] }, [0, 500]).bloomColumns).toEqual(['address', 'topic0'])
    expect(planScan({ chain: ETH, dataset: logs, predicates: [], fields: [] }, [0, 500]).bloomColumns).toEqual([])
  })
})

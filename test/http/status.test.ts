import { describe, expect, it } from 'vitest'
import { STATUS_FIELDS, statusBatch } from '../../src/http/status.ts'
import { shapeOf, valuesOf } from '../../src/columns/vector.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'

const ok: Record<string, StoredValue | null> = {
  type: 'Chain',
  chain: 1n,
  chain_code: 'ETH',
  chain_name: 'ethereum-mainnet',
  service: 'chain',
  entity: 'block',
  latest_block_height: 18_500_000n,
  finalized_block_height: 18_500_000n,
  timestamp: 1_700_000_000n,
  status: 'Ok',
  lag: null,
  label: 'synthetic local data',
  datasets: '{"blocks":{"coverage":[[0,18500000]],"latest_block":18500000,"rows":18500001}}',
  error: null,
}

const noData: Record<string, StoredValue | null> = {
  ...ok,
  chain: 8453n,
  chain_code: 'BASE',
  chain_name: 'base-mainnet',
  latest_block_height: null,
  finalized_block_height: null,
  timestamp: null,
  status: 'NoData',
  label: null,
  datasets: '{}',
}

describe('statusBatch', () => {
  it('packs each status field into a vector of its kind holding the records in order', () => {
    const batch = statusBatch([ok, noData])
    expect(batch.length).toBe(2)
    expect(Object.keys(batch.columns)).toEqual(STATUS_FIELDS.map(f => f.name))
    for (const f of STATUS_FIELDS) {
      const v = batch.columns[f.name]
      expect(v.type, f.name).toBe(shapeOf(f.kind).type)
      expect(valuesOf(v), f.name).toEqual([ok[f.name], noData[f.name]])
    }
  })

  it('marks absent values null', () => {
    const unlabelled = Object.fromEntries(Object.entries(ok).filter(([name]) => name !== 'label'))
    const batch = statusBatch([unlabelled])
    expect(valuesOf(batch.columns.label)).toEqual([null])
    expect(batch.columns.label.valid).toEqual(Uint8Array.of(0))
  })

  it('gives an empty batch for no records', () => {
    const batch = statusBatch([])
    expect(batch.length).toBe(0)
    for (const f of STATUS_FIELDS) expect(batch.columns[f.name].length, f.name).toBe(0)
  })
})

import { describe, expect, it } from 'vitest'
import { runIndexBench } from '../../bench/lib/value-index.ts'
import { MERGE_FACTOR } from '../../src/index/tiers.ts'

describe('runIndexBench', () => {
  it('measures every indexed column, extrapolates to Ethereum scale and prints the tables', async () => {
    const lines: string[] = []
    const report = await runIndexBench({ partitions: 2, groups: 2 }, line => lines.push(line))
    expect(report.columns.map(c => `${c.dataset}.${c.column}`)).toEqual([
      'logs.address',
      'logs.topic0',
      'logs.topic1',
      'logs.topic2',
      'logs.topic3',
      'transactions.hash',
      'transactions.from',
      'transactions.to',
    ])
    const hash = report.columns.find(c => c.column === 'hash')!
    expect(hash.distinctShare).toBe(1)
    expect(hash.keys).toBe(40_000)
    for (const c of report.columns) {
      expect(c.bytesPerRowMerged).toBeGreaterThan(0)
      expect(c.buildMsPerMillionRows).toBeGreaterThan(0)
      expect(report.ethereum[`${c.dataset}.${c.column}`]).toBeCloseTo(c.bytesPerRowMerged * (c.dataset === 'logs' ? 5e9 : 2.5e9))
    }
    const { lookup } = report
    expect(lookup.segmentsMax).toBeLessThanOrEqual(1 + Math.log(lookup.rowGroups) / Math.log(MERGE_FACTOR))
    expect(lookup.writeAmplification).toBeGreaterThan(1)
    for (const w of Object.values(lookup.worst)) {
      expect(w.one.warmReads).toBeCloseTo(lookup.segmentsMax)
      expect(w.one.coldReads).toBeGreaterThan(w.one.warmReads)
      expect(w.twenty.coldReads).toBeGreaterThan(w.one.coldReads)
    }
    expect(lines.filter(l => l.startsWith('| logs.') || l.startsWith('| transactions.')).length).toBe(16)
    expect(lines.some(l => l.startsWith('Ethereum scale'))).toBe(true)
  })
})

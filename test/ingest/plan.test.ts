import { describe, expect, it } from 'vitest'
import { blockCount, planUnits } from '../../src/ingest/plan.ts'

describe('planUnits', () => {
  it('cuts an empty lake at multiples of the span', () => {
    const units = planUnits([5, 25], { blocks: [], logs: [] }, 10)
    expect(units.map(u => u.range)).toEqual([
      [5, 9],
      [10, 19],
      [20, 25],
    ])
    expect(units[1].pieces).toEqual({ blocks: [[10, 19]], logs: [[10, 19]] })
  })

  it('skips what the manifest covers and plans the gaps', () => {
    const units = planUnits(
      [0, 29],
      {
        blocks: [
          [0, 9],
          [15, 17],
        ],
      },
      10,
    )
    expect(units.map(u => u.range)).toEqual([
      [10, 14],
      [18, 19],
      [20, 29],
    ])
    expect(units.flatMap(u => u.pieces.blocks)).toEqual([
      [10, 14],
      [18, 19],
      [20, 29],
    ])
  })

  it('fetches once for datasets at different points, each writing only its own gaps', () => {
    const units = planUnits([0, 19], { blocks: [[0, 4]], logs: [] }, 10)
    expect(units).toEqual([
      { range: [0, 9], pieces: { blocks: [[5, 9]], logs: [[0, 9]] } },
      { range: [10, 19], pieces: { blocks: [[10, 19]], logs: [[10, 19]] } },
    ])
  })

  it('plans nothing when everything is covered, and one-block units for a sparse request', () => {
    expect(planUnits([3, 8], { blocks: [[0, 10]] }, 10)).toEqual([])
    expect(planUnits([17000000, 17000000], { blocks: [[18000000, 18000000]] }, 10_000)).toEqual([
      { range: [17000000, 17000000], pieces: { blocks: [[17000000, 17000000]] } },
    ])
  })

  it('is the same plan for the same manifest (what makes a rerun write the same partitions)', () => {
    const coverage = {
      blocks: [
        [0, 3],
        [12, 12],
      ] as [number, number][],
      transactions: [[0, 3]] as [number, number][],
    }
    expect(planUnits([0, 40], coverage, 8)).toEqual(planUnits([0, 40], structuredClone(coverage), 8))
  })

  it('counts blocks', () => {
    expect(
      blockCount([
        [0, 9],
        [20, 20],
      ]),
    ).toBe(11)
  })
})

import { describe, expect, it } from 'vitest'
import { pageRuns } from '../../src/query/unit.ts'

describe('pageRuns', () => {
  // A group of 100 rows starting at file row 1000, pages starting at rows 0, 30, 60, 90.
  const starts = [0, 30, 60, 90]
  it('reads only the pages holding matching rows, merging rows in the same or adjacent pages', () => {
    expect(pageRuns([1005, 1010], starts, 1000, 100, 1000, 1100)).toEqual([[1000, 1030]])
    expect(pageRuns([1005, 1035], starts, 1000, 100, 1000, 1100)).toEqual([[1000, 1060]])
    expect(pageRuns([1005, 1065, 1095], starts, 1000, 100, 1000, 1100)).toEqual([
      [1000, 1030],
      [1060, 1100],
    ])
  })
  it('clips runs to the unit and falls back to the matching span without an offset index', () => {
    expect(pageRuns([1040], starts, 1000, 100, 1035, 1050)).toEqual([[1035, 1050]])
    expect(pageRuns([1040, 1044], null, 1000, 100, 1000, 1100)).toEqual([[1040, 1045]])
    expect(pageRuns([], starts, 1000, 100, 1000, 1100)).toEqual([])
  })
})

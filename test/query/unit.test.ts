import { describe, expect, it } from 'vitest'
import { valuesOf, vectorOf } from '../../src/columns/vector.ts'
import { firstAtLeast } from '../../src/parquet/pages.ts'
import { pageRuns, takeCodes } from '../../src/query/unit.ts'

/** A small seeded generator (mulberry32), so a failure repeats. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** pageRuns by its definition: every page holding a row, adjacent pages merged, clipped to [lo, hi). */
function pageRunsByDefinition(rows: number[], starts: number[], groupStart: number, groupRows: number, lo: number, hi: number) {
  const pageOf = (row: number) => starts.findLastIndex(s => s <= row - groupStart)
  const pages = [...new Set(rows.map(pageOf))]
  const runs: [number, number][] = []
  for (const p of pages) {
    const end = groupStart + (p + 1 < starts.length ? starts[p + 1] : groupRows)
    const last = runs[runs.length - 1]
    if (last && last[1] >= groupStart + starts[p]) last[1] = end
    else runs.push([groupStart + starts[p], end])
  }
  return runs.map(([a, b]) => [Math.max(a, lo), Math.min(b, hi)])
}

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
  it('finds the same runs as its definition for random rows, pages and units, sparse and dense', () => {
    const next = random(7)
    for (let t = 0; t < 500; t++) {
      const groupStart = Math.floor(next() * 5000)
      const groupRows = 1 + Math.floor(next() * 400)
      const starts = [0]
      while (starts[starts.length - 1] < groupRows - 1 && next() < 0.9) starts.push(starts[starts.length - 1] + 1 + Math.floor(next() * 40))
      if (starts[starts.length - 1] >= groupRows) starts.pop()
      const lo = groupStart + Math.floor(next() * groupRows * 0.3)
      const hi = Math.max(lo + 1, groupStart + groupRows - Math.floor(next() * groupRows * 0.3))
      const density = [0.01, 0.1, 0.5, 1][t % 4]
      const rows: number[] = []
      for (let r = lo; r < hi; r++) if (next() < density) rows.push(r)
      expect(pageRuns(rows, starts, groupStart, groupRows, lo, hi), `case ${t}`).toEqual(
        rows.length ? pageRunsByDefinition(rows, starts, groupStart, groupRows, lo, hi) : [],
      )
    }
  })
})

describe('firstAtLeast', () => {
  it('finds the first index from a start whose value reaches the bound', () => {
    const values = Int32Array.of(1, 3, 3, 7, 9)
    expect([0, 1, 3, 4, 8, 9, 10].map(b => firstAtLeast(values, 0, b))).toEqual([0, 0, 1, 3, 4, 4, 5])
    expect(firstAtLeast(values, 2, 1)).toBe(2)
    expect(firstAtLeast(values, 5, 1)).toBe(5)
  })
})

describe('takeCodes', () => {
  const dictionary = vectorOf('address', [new Uint8Array(20).fill(1), new Uint8Array(20).fill(2), new Uint8Array(20).fill(3)])
  it("takes the dictionary's values at the picked rows' codes", () => {
    const codes = Int32Array.of(2, 0, 1, 1, 2)
    expect(valuesOf(takeCodes(dictionary, codes, Int32Array.of(0, 2, 4))).map(v => (v as Uint8Array)[0])).toEqual([3, 2, 3])
  })
  it('makes a row whose code is -1 null, and only then gives the vector validity', () => {
    const codes = Int32Array.of(-1, 0, 2, -1)
    const taken = takeCodes(dictionary, codes, Int32Array.of(0, 1, 2, 3))
    expect(valuesOf(taken).map(v => v && (v as Uint8Array)[0])).toEqual([null, 1, 3, null])
    expect(takeCodes(dictionary, codes, Int32Array.of(1, 2)).valid).toBeNull()
  })
})

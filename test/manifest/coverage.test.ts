import { describe, expect, it } from 'vitest'
import { alignedChunks, intersectRanges, mergeRanges, subtractRanges } from '../../src/manifest/coverage.ts'

describe('coverage arithmetic', () => {
  it('merges touching and overlapping ranges', () => {
    expect(
      mergeRanges([
        [10, 20],
        [0, 4],
        [5, 7],
        [19, 30],
        [40, 40],
      ]),
    ).toEqual([
      [0, 7],
      [10, 30],
      [40, 40],
    ])
  })

  it('finds the gaps of a range', () => {
    expect(
      subtractRanges(
        [0, 100],
        [
          [10, 20],
          [30, 40],
        ],
      ),
    ).toEqual([
      [0, 9],
      [21, 29],
      [41, 100],
    ])
    expect(subtractRanges([12, 15], [[10, 20]])).toEqual([])
    expect(subtractRanges([5, 25], [[10, 20]])).toEqual([
      [5, 9],
      [21, 25],
    ])
    expect(subtractRanges([5, 9], [])).toEqual([[5, 9]])
  })

  it('intersects a range with coverage', () => {
    expect(
      intersectRanges(
        [15, 35],
        [
          [10, 20],
          [30, 40],
          [50, 60],
        ],
      ),
    ).toEqual([
      [15, 20],
      [30, 35],
    ])
  })

  it('cuts ranges at aligned boundaries so reruns make the same partitions', () => {
    expect(alignedChunks([95, 230], 100)).toEqual([
      [95, 99],
      [100, 199],
      [200, 230],
    ])
    expect(alignedChunks([100, 100], 100)).toEqual([[100, 100]])
  })

  it('agrees with a brute-force reference on random ranges', () => {
    let seed = 7
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
    for (let t = 0; t < 200; t++) {
      const have = Array.from({ length: rnd(5) }, () => {
        const a = rnd(100)
        return [a, a + rnd(10)] as [number, number]
      })
      const want: [number, number] = [rnd(50), 50 + rnd(60)]
      const covered = new Set(have.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)))
      const expand = (rs: [number, number][]) => rs.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i))
      const all = Array.from({ length: want[1] - want[0] + 1 }, (_, i) => want[0] + i)
      expect(expand(subtractRanges(want, have))).toEqual(all.filter(x => !covered.has(x)))
      expect(expand(intersectRanges(want, have))).toEqual(all.filter(x => covered.has(x)))
    }
  })
})

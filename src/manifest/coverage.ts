/** Pure arithmetic on sorted, inclusive block ranges: coverage, gaps and overlaps. */
import type { BlockRange } from './types.ts'

/** Sorts and merges touching or overlapping ranges. */
export function mergeRanges(ranges: readonly BlockRange[]): BlockRange[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0])
  const out: BlockRange[] = []
  for (const [from, to] of sorted) {
    const last = out[out.length - 1]
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}

/** The parts of `want` not covered by `have` (both inclusive; `have` merged). */
export function subtractRanges(want: BlockRange, have: readonly BlockRange[]): BlockRange[] {
  const gaps: BlockRange[] = []
  let cursor = want[0]
  for (const [from, to] of mergeRanges(have)) {
    if (to < cursor) continue
    if (from > want[1]) break
    if (from > cursor) gaps.push([cursor, from - 1])
    cursor = Math.max(cursor, to + 1)
    if (cursor > want[1]) break
  }
  if (cursor <= want[1]) gaps.push([cursor, want[1]])
  return gaps
}

/** The parts of `want` covered by `have`. */
export function intersectRanges(want: BlockRange, have: readonly BlockRange[]): BlockRange[] {
  const out: BlockRange[] = []
  for (const [from, to] of mergeRanges(have)) {
    const a = Math.max(from, want[0])
    const b = Math.min(to, want[1])
    if (a <= b) out.push([a, b])
  }
  return out
}

export const overlaps = (a: BlockRange, b: BlockRange): boolean => a[0] <= b[1] && b[0] <= a[1]

/** Cuts a range at multiples of `span`, so the same blocks always land in the same partition. */
export function alignedChunks([from, to]: BlockRange, span: number): BlockRange[] {
  const out: BlockRange[] = []
  for (let a = from; a <= to;) {
    const end = Math.min(to, (Math.floor(a / span) + 1) * span - 1)
    out.push([a, end])
    a = end + 1
  }
  return out
}

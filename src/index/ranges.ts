/** Block-range sets (sorted, merged, inclusive ranges): where an index answers and where a planner must scan. */
import type { BlockRange } from '../manifest/types.ts'

/** The union of `ranges`, sorted, touching and overlapping ones merged. */
export function unionRanges(ranges: readonly BlockRange[]): BlockRange[] {
  const out: BlockRange[] = []
  for (const [from, to] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = out[out.length - 1]
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}

/** The blocks in both sets. */
export function intersectRanges(a: readonly BlockRange[], b: readonly BlockRange[]): BlockRange[] {
  const out: BlockRange[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const from = Math.max(a[i][0], b[j][0])
    const to = Math.min(a[i][1], b[j][1])
    if (from <= to) out.push([from, to])
    if (a[i][1] < b[j][1]) i++
    else j++
  }
  return out
}

/** Whether any range of the set meets [from, to]. */
export const meets = (ranges: readonly BlockRange[], from: number, to: number): boolean => ranges.some(([a, b]) => a <= to && b >= from)

/** The blocks of `a` not in `b`. */
export function subtractRanges(a: readonly BlockRange[], b: readonly BlockRange[]): BlockRange[] {
  const out: BlockRange[] = []
  const cut = unionRanges(b)
  for (const [from, to] of unionRanges(a)) {
    let at = from
    for (const [x, y] of cut) {
      if (y < at || x > to) continue
      if (x > at) out.push([at, x - 1])
      at = Math.max(at, y + 1)
    }
    if (at <= to) out.push([at, to])
  }
  return out
}

/**
 * Which blocks an ingest run still has to write: per dataset, the requested range
 * minus what the manifest already covers, cut at multiples of the partition span.
 * Units group those pieces so one fetch serves every dataset that needs the blocks.
 * Pure: the same manifest and request always give the same units, which is what
 * makes a rerun after a crash write the same partitions.
 */
import { alignedChunks, mergeRanges, subtractRanges } from '../manifest/coverage.ts'
import type { BlockRange } from '../manifest/types.ts'

export interface IngestUnit {
  /** Blocks fetched once for the unit: inside one partition-span window. */
  range: BlockRange
  /** Per dataset (storage name), the partitions to write: sub-ranges of `range`. */
  pieces: Record<string, BlockRange[]>
}

/** Units for `want`, given each dataset's covered ranges, in block order. */
export function planUnits(want: BlockRange, coverage: Record<string, readonly BlockRange[]>, span: number): IngestUnit[] {
  const chunks = Object.fromEntries(
    Object.entries(coverage).map(([dataset, have]) => [dataset, subtractRanges(want, have).flatMap(g => alignedChunks(g, span))]),
  )
  const all = Object.values(chunks).flat()
  const units = mergeRanges(all).flatMap(r => alignedChunks(r, span))
  return units.map(range => ({
    range,
    pieces: Object.fromEntries(
      Object.entries(chunks)
        .map(([dataset, list]) => [dataset, list.filter(c => c[0] >= range[0] && c[1] <= range[1])] as const)
        .filter(([, list]) => list.length > 0),
    ),
  }))
}

/** Blocks in a list of ranges. */
export const blockCount = (ranges: readonly BlockRange[]): number => ranges.reduce((n, [a, b]) => n + b - a + 1, 0)

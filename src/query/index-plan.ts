/**
 * Planning with the value index: which of a query's predicates the dataset's index answers
 * (an `eq`/`in` on an indexed column), the candidate partitions and row groups it names, and
 * the block ranges left to the per-partition path (the manifest walk, bloom filters): outside
 * the index's coverage, and where a looked-up value is hot. Both paths give the same rows;
 * the index only decides which partitions are opened and which row groups are read.
 */
import { chainKey } from '../chains/registry.ts'
import type { BlockRange, DatasetIndex } from '../manifest/types.ts'
import { indexPrefix } from '../index/format.ts'
import { indexCoverage, intersectCandidates, lookupValues, planLookup } from '../index/lookup.ts'
import { intersectRanges, meets, subtractRanges, unionRanges } from '../index/ranges.ts'
import { valueKey } from '../index/hash.ts'
import type { IndexCache } from '../index/read.ts'
import type { Candidate, Candidates, IndexValue, InlineSegment, ValueIndex } from '../index/types.ts'
import { columnOf } from '../schema/dataset.ts'
import type { ChainRef } from '../manifest/types.ts'
import type { Predicate } from './types.ts'

/**
 * Most index objects one predicate may cost cold (a long `__in` list over many segments);
 * past it the predicate is left to the per-partition path, which then costs less.
 */
export const MAX_INDEX_READS = 256

/** What the index decided for a query. */
export interface IndexedScan {
  /**
   * Segments whose inline rows answer the query (one looked-up predicate's values are each
   * absent or stored with their rows there): their slices are read instead of partitions.
   */
  inline: InlineSegment[]
  /** Partitions that may hold matches, in block order, with the ordinals of their row groups that may. */
  candidates: Candidate[]
  /** Blocks read the per-partition way: outside the index's coverage, or where a value is hot. */
  fallback: BlockRange[]
  /** Indexed columns looked up. */
  columns: string[]
  /** Per looked-up column, the blocks where one of its values was hot (scanned instead). */
  hot: { column: string; ranges: BlockRange[] }[]
  /** Index objects read (cache hits are free) and their bytes. */
  reads: number
  bytes: number
}

/** The predicates the index can answer: `eq`/`in` on an indexed column, without `%00`. */
export function indexablePredicates(predicates: readonly Predicate[]): Predicate[] {
  return predicates.filter(
    p =>
      p.field.index &&
      (p.op === 'eq' || p.op === 'in') &&
      p.values.length > 0 &&
      p.values.every(v => v instanceof Uint8Array || typeof v === 'string'),
  )
}

/**
 * Looks the indexable predicates of a query up in the dataset's index over `range`. Null when
 * the index cannot help: no index, no indexable predicate, or no indexed block in the range.
 */
export async function planIndexed(
  store: Parameters<typeof lookupValues>[0],
  chain: ChainRef,
  storage: string,
  dataset: DatasetIndex,
  predicates: readonly Predicate[],
  range: BlockRange,
  cache?: IndexCache,
  rows?: string,
): Promise<IndexedScan | null> {
  const segments = dataset.index?.segments ?? []
  if (segments.length === 0) return null
  const index: ValueIndex = { prefix: indexPrefix(chainKey(chain), storage), segments }
  const usable = indexablePredicates(predicates).filter(p => {
    const keys = [...new Set((p.values as IndexValue[]).map(valueKey))]
    return planLookup(index, columnOf(p.field), keys, range).length <= MAX_INDEX_READS
  })
  if (usable.length === 0) return null
  const columns = [...new Set(usable.map(p => columnOf(p.field)))]
  const covered = columns.reduce<BlockRange[]>((c, column) => intersectRanges(c, indexCoverage(segments, column)), [range])
  if (covered.length === 0) return null

  const results = await Promise.all(
    usable.map(p => lookupValues(store, index, columnOf(p.field), p.values as IndexValue[], { range, cache, rows })),
  )
  const inline = chooseInline(results.map(r => r.inline)).filter(s =>
    s.ranges.every(([a, b]) => !meets(subtractRanges([range], covered), a, b)),
  )
  const answered = unionRanges(inline.flatMap(s => s.ranges))
  const both = results.slice(1).reduce<Candidates>((a, b) => intersectCandidates(a, b), results[0])
  const scan = subtractRanges(intersectRanges(unionRanges(both.scan), covered), answered)
  const fallback = unionRanges([...subtractRanges([range], covered), ...scan])
  return {
    inline,
    candidates: both.partitions.filter(
      c => c.rowGroups.length > 0 && !meets(fallback, c.entry.from, c.entry.to) && !meets(answered, c.entry.from, c.entry.to),
    ),
    fallback,
    columns,
    hot: usable
      .map((p, i) => ({ column: columnOf(p.field), ranges: unionRanges(results[i].hot.flatMap(h => h.ranges)) }))
      .filter(h => h.ranges.length > 0),
    reads: results.reduce((n, r) => n + r.reads, 0),
    bytes: results.reduce((n, r) => n + r.bytes, 0),
  }
}

/**
 * Per segment, the inline answer of the predicate with the fewest rows there (an AND needs the
 * rows of one side only: the other predicates are applied to them), in segment order.
 */
function chooseInline(perPredicate: readonly InlineSegment[][]): InlineSegment[] {
  const best = new Map<number, InlineSegment>()
  for (const list of perPredicate)
    for (const s of list) {
      const held = best.get(s.segment)
      if (!held || s.rows < held.rows) best.set(s.segment, s)
    }
  return [...best.values()].sort((a, b) => a.segment - b.segment)
}

/**
 * The merge policy that keeps a dataset's segment count logarithmic in its length, like an
 * LSM tree: segments are kept oldest first with sizes (row groups) falling geometrically;
 * after appending a segment, while the second newest is at most F times the newest, the two
 * merge. Sizes then satisfy size[i] > F × size[i + 1], so there are at most 1 + log_F(N / n)
 * segments for N row groups appended n at a time. The cascade is worked out on sizes first and
 * done as one merge of all the segments it takes in, so nothing is written twice in one step.
 */
import type { ObjectStore } from '../store/types.ts'
import type { BuiltSegment, SegmentSpec } from './build.ts'
import { bucketKey, packKey, rowsKey, tableKey } from './format.ts'
import { mergeSegments } from './merge.ts'
import { intersectRanges, unionRanges } from './ranges.ts'
import { segmentSource, storeReader } from './read.ts'
import type { IndexObject, SegmentDescriptor } from './types.ts'

/** F: 4 keeps ≤ 5 segments at 2,500 partitions for a write amplification of ~11 (README). */
export const MERGE_FACTOR = 4

/** How many of the newest segments (sizes oldest first, the appended one last) the policy merges into one; 1: none. */
export function mergeCount(sizes: readonly number[], factor = MERGE_FACTOR): number {
  const stack = [...sizes]
  let n = 1
  while (stack.length >= 2 && stack[stack.length - 2] <= factor * stack[stack.length - 1]) {
    stack[stack.length - 2] += stack.pop()!
    n++
  }
  return n
}

/** Every object key of segment `d`: what to delete once no published root lists it. */
export function segmentKeys(prefix: string, d: SegmentDescriptor): string[] {
  const keys = d.table ? [tableKey(prefix, d, d.table)] : []
  for (const [column, c] of Object.entries(d.columns)) {
    for (let b = 0; b < c.buckets; b++) keys.push(bucketKey(prefix, d, column, b), ...(c.rows ? [rowsKey(prefix, d, column, b)] : []))
    if (c.pack !== undefined) keys.push(packKey(prefix, d, column))
  }
  return keys
}

/** The outcome of appending a segment: the list to publish and what it cost. */
export interface TierUpdate {
  /** The dataset's segments after the append, oldest first: publish these with the partitions. */
  segments: SegmentDescriptor[]
  /** Segments merged away. Delete their objects (`segmentKeys`) only after readers of older roots are done, and only if no root lists them again. */
  obsolete: SegmentDescriptor[]
  objectsWritten: number
  bytesWritten: number
}

/**
 * Appends `built` (a segment over newly published partitions) to `segments` and applies the
 * merge policy: writes either the new segment's objects or those of the one merge it
 * triggers (reading the merged segments' buckets one at a time). Nothing is published here.
 */
export async function maintainTiers(
  store: ObjectStore,
  spec: SegmentSpec,
  segments: readonly SegmentDescriptor[],
  built: BuiltSegment,
  factor = MERGE_FACTOR,
): Promise<TierUpdate> {
  const overlap = intersectRanges(unionRanges(segments.flatMap(s => s.coverage)), built.descriptor.coverage)
  if (overlap.length > 0) throw new RangeError(`blocks ${JSON.stringify(overlap)} are indexed already`)
  const writer = parallelPuts(store)
  const all = [...segments, built.descriptor]
  const n = mergeCount(
    all.map(s => s.rowGroups),
    factor,
  )
  if (n === 1) {
    for (const o of built.objects) await writer.put(o)
    await writer.done()
    return { segments: all, obsolete: [], ...writer.written }
  }
  const read = storeReader(store, new Map(built.objects.map(o => [o.key, o.bytes])))
  const merging = all.slice(all.length - n)
  const merged = await mergeSegments(
    spec,
    merging.map(d => segmentSource(read, spec.prefix, d)),
    writer.put,
  )
  await writer.done()
  return { segments: [...all.slice(0, all.length - n), merged], obsolete: merging.slice(0, -1), ...writer.written }
}

/** Puts with up to `concurrency` in flight (a big merge writes thousands of buckets); the first failure fails the rest. */
function parallelPuts(store: ObjectStore, concurrency = 16) {
  const inflight = new Set<Promise<void>>()
  const written = { objectsWritten: 0, bytesWritten: 0 }
  let failure: { error: unknown } | undefined
  const check = () => {
    if (failure) throw failure.error
  }
  return {
    written,
    put: async (o: IndexObject): Promise<void> => {
      check()
      while (inflight.size >= concurrency) await Promise.race(inflight)
      check()
      const p: Promise<void> = store.put(o.key, o.bytes, { contentType: 'application/octet-stream' }).then(
        () => {
          written.objectsWritten++
          written.bytesWritten += o.bytes.length
          inflight.delete(p)
        },
        error => {
          failure ??= { error }
          inflight.delete(p)
        },
      )
      inflight.add(p)
    },
    done: async (): Promise<void> => {
      await Promise.all(inflight)
      check()
    },
  }
}

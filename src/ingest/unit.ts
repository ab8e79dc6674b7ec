/**
 * One unit's partitions, encoded and not yet stored: fetch the unit's verified rows
 * from the source, then one partition per dataset piece. Pure CPU apart from the
 * source's reads, so the Node ingester runs it in worker threads (pool.ts) and the
 * loop (run.ts) only stores the bytes and publishes.
 */
import type { ChainRef } from '../manifest/types.ts'
import { encodePartition, type EncodedPartition } from '../parquet/put.ts'
import type { LayoutOptions } from '../parquet/write.ts'
import { sliceRange } from './batch.ts'
import type { BuiltSegment } from '../index/build.ts'
import { buildSegments, type WrittenPartition } from '../index/publish.ts'
import type { IngestUnit } from './plan.ts'
import type { ChainSource } from './source.ts'

/** A unit built: per dataset (storage name) its encoded partitions in piece order, and the index segment over them. */
export interface EncodedUnit {
  partitions: Record<string, EncodedPartition[]>
  /** Absent for a dataset without indexed fields. */
  segments: Record<string, BuiltSegment>
}

/** Builds a unit's partitions: in this thread (`localBuilder`) or in worker threads (pool.ts). */
export interface UnitBuilder {
  build(unit: IngestUnit): Promise<EncodedUnit>
}

/** Where an encoded object sits in an EncodedUnit: a partition of `storage` (`part`, piece order) or its index segment (no `part`). */
export interface ObjectsAt {
  storage: string
  part?: number
}

/**
 * Fetches `unit.range` from the source and encodes every piece. `encoded` is given each partition's
 * and segment's objects as soon as they are written, in the unit's order (pool.ts hands their bytes
 * to the main thread there and then).
 */
export async function buildUnit(
  source: ChainSource,
  chain: ChainRef,
  unit: IngestUnit,
  layout?: LayoutOptions,
  encoded?: (at: ObjectsAt, objects: { bytes: Uint8Array }[]) => void,
): Promise<EncodedUnit> {
  // Each dataset's rows are let go once encoded: the collections while later datasets encode then mark fewer of them.
  const batches = new Map(Object.entries(await source.fetch(unit.range)))
  const out: EncodedUnit = { partitions: {}, segments: {} }
  for (const [storage, pieces] of Object.entries(unit.pieces)) {
    const dataset = source.datasets.find(d => d.storage === storage)
    if (!dataset) throw new Error(`the source has no dataset stored as ${storage}`)
    const batch = batches.get(storage)
    if (!batch) throw new Error(`the source gave no ${storage} rows for blocks ${unit.range[0]}-${unit.range[1]}`)
    batches.delete(storage)
    const written: WrittenPartition[] = []
    for (const [from, to] of pieces) {
      const part = sliceRange(batch, dataset.rangeKey, from, to)
      const partition = await encodePartition(chain, dataset, part, { from, to }, layout)
      written.push({ entry: partition.entry, batch: part })
      const parts = (out.partitions[storage] ??= [])
      encoded?.({ storage, part: parts.length }, partition.objects)
      parts.push(partition)
    }
    const segment = buildSegments(chain, [{ dataset, partitions: written }]).get(storage)
    if (segment) {
      encoded?.({ storage }, segment.built.objects)
      out.segments[storage] = segment.built
    }
  }
  return out
}

/** Builds units in this thread. */
export const localBuilder = (source: ChainSource, chain: ChainRef, layout?: LayoutOptions): UnitBuilder => ({
  build: unit => buildUnit(source, chain, unit, layout),
})

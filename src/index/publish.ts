/**
 * The writers' side of the index: the partitions a writer has just stored, with the rows it
 * still holds, become one segment per dataset, merged into the tier shape and published in
 * the same root write as the partitions (`publishIndexed`). Every writer (the ingester, live
 * compaction, the benchmark and test lakes, `reindex`) goes through here, so an index never
 * points at unpublished data and published data is never missing from an index that covers it.
 */
import { chainKey } from '../chains/registry.ts'
import { publish, type IndexChange, type PublishOptions, type PublishResult } from '../manifest/publish.ts'
import { loadRetired } from '../manifest/retired.ts'
import type { ChainRef, ManifestRoot, PartitionEntry } from '../manifest/types.ts'
import { columnOf, indexedColumns, isStored, type DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { isVectorColumn, type ColumnBatch, type PackedBatch } from '../columns/batch.ts'
import { sliceVector } from '../columns/vector.ts'
import { buildSegment, INLINE_ROWS, type BuiltSegment, type PartitionInput, type SegmentSpec } from './build.ts'
import { indexPrefix } from './format.ts'
import { indexCoverage } from './lookup.ts'
import { meets } from './ranges.ts'
import { rowFieldsOf } from './rows.ts'
import { sweepRetired, type SweepOptions } from './retire.ts'
import { maintainTiers } from './tiers.ts'
import type { IndexValue } from './types.ts'

/** A partition a writer has stored, with its rows in the order written (packed or plain). */
export interface WrittenPartition {
  entry: PartitionEntry
  batch: ColumnBatch | PackedBatch
}

/** A dataset's partitions of one publication. */
export interface DatasetWrites {
  dataset: DatasetDecl
  partitions: WrittenPartition[]
}

/**
 * Where a dataset's index lives and what it indexes; null when it declares no indexed field.
 * `inlineRows`: most rows of a value stored inline (default `INLINE_ROWS`; 0: none), for the
 * columns whose declaration sets no caps of its own (`index: { inlineRows, inlineBytes }`).
 */
export function indexSpecOf(chain: ChainRef, dataset: DatasetDecl, inlineRows = INLINE_ROWS): SegmentSpec | null {
  const columns = indexedColumns(dataset)
  if (columns.length === 0) return null
  const spec: SegmentSpec = { prefix: indexPrefix(chainKey(chain), dataset.storage), columns }
  if (inlineRows <= 0) return spec
  const declared = dataset.fields.flatMap(f =>
    typeof f.index === 'object' && isStored(f) ? [[columnOf(f), { max: f.index.inlineRows, maxBytes: f.index.inlineBytes }] as const] : [],
  )
  return {
    ...spec,
    rows: { fields: rowFieldsOf(dataset), max: inlineRows, ...(declared.length ? { columns: Object.fromEntries(declared) } : {}) },
  }
}

/**
 * The index input of a written partition: its values cut into the file's row groups (of packed
 * rows, slices of the vectors), and its rows (for inline rows).
 */
export function partitionInput(spec: SegmentSpec, { entry, batch }: WrittenPartition): PartitionInput {
  let start = 0
  const rowGroups = entry.rowGroups.map(g => {
    const [from, to] = [start, start + g.rows]
    start = to
    return Object.fromEntries(
      spec.columns.map(c => {
        const column = batch.columns[c]
        if (column === undefined) return [c, []]
        return [c, isVectorColumn(column) ? sliceVector(column, from, to) : (column.slice(from, to) as (IndexValue | null)[])]
      }),
    )
  })
  if (start !== batch.length) throw new Error(`partition ${entry.key}: row groups hold ${start} rows, the batch ${batch.length}`)
  return { entry, rowGroups, rows: batch }
}

/** The built segment of each dataset's partitions (none for a dataset without indexed fields). */
export function buildSegments(
  chain: ChainRef,
  writes: readonly DatasetWrites[],
  inlineRows?: number,
): Map<string, { spec: SegmentSpec; built: BuiltSegment }> {
  const out = new Map<string, { spec: SegmentSpec; built: BuiltSegment }>()
  for (const { dataset, partitions } of writes) {
    const spec = indexSpecOf(chain, dataset, inlineRows)
    if (!spec || partitions.length === 0) continue
    const sorted = [...partitions].sort((a, b) => a.entry.from - b.entry.from)
    out.set(dataset.storage, {
      spec,
      built: buildSegment(
        spec,
        sorted.map(p => partitionInput(spec, p)),
      ),
    })
  }
  return out
}

/**
 * The `index` step of a publication: appends each built segment to the root's list and
 * merges by the tier policy (objects written, nothing published); the segments merged away
 * are retired, and the retired ones past their grace period deleted (retire.ts). A segment
 * whose blocks the root's index already covers (a rerun publishing the same partitions) is
 * not added again.
 */
export function indexStep(
  store: ObjectStore,
  segments: Map<string, { spec: SegmentSpec; built: BuiltSegment }>,
  sweep: SweepOptions = {},
): (root: ManifestRoot) => Promise<Record<string, IndexChange>> {
  return async root => {
    const out: Record<string, IndexChange> = {}
    for (const [storage, { spec, built }] of segments) {
      const current = root.datasets[storage]?.index
      const covered = indexCoverage(current?.segments ?? [], spec.columns[0])
      if (built.descriptor.coverage.some(([a, b]) => meets(covered, a, b))) continue
      const listed = await loadRetired(store, current?.retired)
      const retired = await sweepRetired(store, spec.prefix, listed, sweep)
      const tiers = await maintainTiers(store, spec, current?.segments ?? [], built)
      const since = new Date(sweep.now ?? Date.now()).toISOString()
      const swept = retired.length !== listed.length || retired.some((r, i) => r !== listed[i])
      out[storage] = {
        segments: tiers.segments,
        // Unchanged, the root keeps naming the list it has: nothing to write.
        ...(swept || tiers.obsolete.length ? { retired: [...retired, ...tiers.obsolete.map(segment => ({ since, segment }))] } : {}),
      }
    }
    return out
  }
}

/** Publishes partitions already stored together with their index, in one root write. */
export function publishIndexed(
  store: ObjectStore,
  chain: ChainRef,
  writes: readonly DatasetWrites[],
  options: Omit<PublishOptions, 'index'> & { sweep?: SweepOptions; inlineRows?: number } = {},
): Promise<PublishResult> {
  const { sweep, inlineRows, ...rest } = options
  return publish(store, chain, additionsOf(writes), { ...rest, index: indexStep(store, buildSegments(chain, writes, inlineRows), sweep) })
}

/** The manifest entries of a publication, by storage dataset. */
export const additionsOf = (writes: readonly DatasetWrites[]): Record<string, PartitionEntry[]> =>
  Object.fromEntries(writes.map(w => [w.dataset.storage, w.partitions.map(p => p.entry)]))

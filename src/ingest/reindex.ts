/**
 * Builds or rebuilds the value index of a lake already written (`npm run reindex`): the indexed
 * columns of every published partition are read (only those column chunks), built into
 * segments a group of partitions at a time, merged into the tier shape as they are appended,
 * and published in one root write. Segments a writer appended meanwhile are kept when they
 * index blocks this run did not see.
 */
import { parquetMetadataAsync, parquetRead, type AsyncBuffer, type FileMetaData } from 'hyparquet'
import type { ColumnBatch } from '../columns/batch.ts'
import { buildSegment, inlineRowsNeeded, type PartitionInput } from '../index/build.ts'
import type { RowField } from '../index/rows.ts'
import type { Kind, StoredValue } from '../schema/kinds.ts'
import { indexSpecOf } from '../index/publish.ts'
import { meets, unionRanges } from '../index/ranges.ts'
import { maintainTiers, segmentKeys } from '../index/tiers.ts'
import type { IndexValue } from '../index/types.ts'
import { publishIndex } from '../manifest/publish.ts'
import { ManifestReader } from '../manifest/read.ts'
import { loadRetired, RetiredListGone } from '../manifest/retired.ts'
import { readRoot } from './run.ts'
import type { ChainRef, ManifestRoot, PartitionEntry, SegmentDescriptor } from '../manifest/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import { CorruptObjectError, type ObjectStore } from '../store/types.ts'

export interface ReindexOptions {
  store: ObjectStore
  chain: ChainRef
  /** Datasets to index (one per storage); those without indexed fields are skipped. */
  datasets: readonly DatasetDecl[]
  /** Rows read into one segment before it is built and appended (default 2,000,000: memory). */
  segmentRows?: number
  onProgress?: (p: { dataset: string; partitions: number; of: number; rows: number }) => void
}

export interface ReindexReport {
  dataset: string
  partitions: number
  rows: number
  segments: number
  /** Stored bytes of the published index. */
  bytes: number
  ms: number
}

/** Reads ranges of a stored object on demand: hyparquet fetches only the column chunks asked for. */
async function objectBuffer(store: ObjectStore, key: string, size: number): Promise<AsyncBuffer> {
  return {
    byteLength: size,
    async slice(start: number, end?: number) {
      const got = await store.get(key, { offset: start, length: (end ?? size) - start })
      if (!got) throw new CorruptObjectError(key, 'is listed in the manifest but missing')
      return got.body.slice().buffer as ArrayBuffer
    },
  }
}

/** A stored partition being indexed: its index input and the open file, for the rows of rare values. */
interface StoredPartition {
  input: PartitionInput
  file: AsyncBuffer
  metadata: FileMetaData
}

/** The index input of a stored partition: its indexed columns row group by row group. */
async function storedInput(store: ObjectStore, entry: PartitionEntry, columns: readonly string[]): Promise<StoredPartition> {
  const file = await objectBuffer(store, entry.key, entry.bytes)
  const metadata = await parquetMetadataAsync(file)
  const stored = new Set(metadata.schema.map(e => e.name))
  const present = columns.filter(c => stored.has(c))
  const rowGroups: Record<string, (IndexValue | null)[]>[] = []
  let start = 0
  for (const g of metadata.row_groups) {
    const end = start + Number(g.num_rows)
    const group: Record<string, (IndexValue | null)[]> = Object.fromEntries(columns.map(c => [c, []]))
    if (present.length && end > start) {
      await parquetRead({
        file,
        metadata,
        columns: present,
        rowStart: start,
        rowEnd: end,
        utf8: false,
        onComplete: rows => {
          for (const row of rows as unknown[][]) present.forEach((c, i) => group[c].push(row[i] as IndexValue | null))
        },
      })
    }
    rowGroups.push(group)
    start = end
  }
  return { input: { entry, rowGroups }, file, metadata }
}

/**
 * The rows `needed` of a stored partition (those a build stores inline), every stored field,
 * read from the row groups that hold them only; the other rows are left empty (never encoded).
 */
async function neededRows(
  { input, file, metadata }: StoredPartition,
  fields: readonly RowField[],
  needed: Set<number>,
): Promise<ColumnBatch> {
  const rows = input.entry.rows
  const columns: ColumnBatch['columns'] = Object.fromEntries(fields.map(f => [f.column, new Array(rows).fill(null)]))
  const stored = new Set(metadata.schema.map(e => e.name))
  const present = fields.filter(f => stored.has(f.column))
  let start = 0
  for (const g of metadata.row_groups) {
    const end = start + Number(g.num_rows)
    const from = start
    if ([...needed].some(r => r >= from && r < end)) {
      await parquetRead({
        file,
        metadata,
        columns: present.map(f => f.column),
        rowStart: from,
        rowEnd: end,
        utf8: false,
        onComplete: got => {
          ;(got as unknown[][]).forEach((row, i) => {
            if (needed.has(from + i)) present.forEach((f, j) => (columns[f.column][from + i] = storedValue(f.kind, row[j])))
          })
        },
      })
    }
    start = end
  }
  return { length: rows, columns }
}

const utf8 = new TextDecoder()

/** A value as hyparquet reads it (binary text as bytes) in the writers' in-memory form. */
function storedValue(kind: Kind, v: unknown): StoredValue | null {
  if (v === null || v === undefined) return null
  if ((kind === 'string' || kind === 'json') && v instanceof Uint8Array) return utf8.decode(v)
  return v as StoredValue
}

/**
 * Deletes the objects of segments this run merged away, except any a published segment (live
 * or retired) shares; `root` is the one this run published, or a newer one when a writer
 * replaced its retired list meanwhile.
 */
async function deleteUnlisted(
  store: ObjectStore,
  chain: ChainRef,
  storage: string,
  prefix: string,
  unlisted: SegmentDescriptor[],
  root: ManifestRoot,
) {
  for (let attempt = 0; ; attempt++) {
    const index = root.datasets[storage]?.index
    try {
      const retired = await loadRetired(store, index?.retired)
      const listed = new Set([...(index?.segments ?? []), ...retired.map(r => r.segment)].flatMap(s => segmentKeys(prefix, s)))
      for (const key of unlisted.flatMap(s => segmentKeys(prefix, s))) if (!listed.has(key)) await store.delete(key)
      return
    } catch (err) {
      if (!(err instanceof RetiredListGone) || attempt >= 3) throw err
      root = (await readRoot(store, chain)) ?? root
    }
  }
}

/** Rebuilds the value index of each dataset of `chain` over every partition its manifest lists. */
export async function reindex(opts: ReindexOptions): Promise<ReindexReport[]> {
  const { store, chain } = opts
  const reports: ReindexReport[] = []
  const root = await readRoot(store, chain)
  if (!root) throw new Error(`chain ${chain.code} has no manifest in this store`)
  const manifest = new ManifestReader(store)
  for (const dataset of opts.datasets) {
    const spec = indexSpecOf(chain, dataset)
    const index = root.datasets[dataset.storage]
    if (!spec || !index || index.coverage.length === 0) continue
    const started = Date.now()
    const of = index.shards.reduce((n, s) => n + s.partitions, 0)
    const walk = manifest.scanPartitions(root, dataset.storage, [0, Number.MAX_SAFE_INTEGER], store)
    let segments: SegmentDescriptor[] = []
    // merged away before any root listed them: deleted once this run's list is published
    const unlisted: SegmentDescriptor[] = []
    let group: StoredPartition[] = []
    let groupRows = 0
    let partitions = 0
    let rows = 0
    const flush = async () => {
      if (group.length === 0) return
      const inputs = group.map(p => p.input)
      if (spec.rows) {
        const needed = inlineRowsNeeded(spec, inputs)
        for (const [i, p] of group.entries()) inputs[i] = { ...p.input, rows: await neededRows(p, spec.rows.fields, needed[i]) }
      }
      const tiers = await maintainTiers(store, spec, segments, buildSegment(spec, inputs))
      segments = tiers.segments
      unlisted.push(...tiers.obsolete)
      group = []
      groupRows = 0
    }
    for await (const entry of walk.partitions) {
      group.push(await storedInput(store, entry, spec.columns))
      groupRows += entry.rows
      rows += entry.rows
      partitions++
      opts.onProgress?.({ dataset: dataset.storage, partitions, of, rows })
      if (groupRows >= (opts.segmentRows ?? 2_000_000)) await flush()
    }
    await flush()
    const mine = unionRanges(segments.flatMap(s => s.coverage))
    const published = await publishIndex(store, chain, async current => ({
      // a segment a writer appended since this run read the root indexes partitions it did not see
      [dataset.storage]: [
        ...segments,
        ...(current.datasets[dataset.storage]?.index?.segments ?? []).filter(s => !s.coverage.some(([a, b]) => meets(mine, a, b))),
      ],
    }))
    const final = published.datasets[dataset.storage].index!.segments
    await deleteUnlisted(store, chain, dataset.storage, spec.prefix, unlisted, published)
    reports.push({
      dataset: dataset.storage,
      partitions,
      rows,
      segments: final.length,
      bytes: final.reduce((n, s) => n + Object.values(s.columns).reduce((m, c) => m + c.bytes + (c.rows?.bytes ?? 0), 0), 0),
      ms: Date.now() - started,
    })
  }
  return reports
}

/**
 * The query engine between the HTTP layer and the encoders: resolves the block
 * range against the manifest, plans, and scans, returning ordered RowBatches with
 * the I/O it cost.
 *
 * The manifest shards of the range are read one after another while the scan
 * advances (`ManifestReader.scanPartitions`), so a whole-chain query holds about two
 * shards, not the whole-chain manifest.
 *
 * Stats: `partitionsTotal` counts every partition of the dataset (from the root),
 * `rowGroupsTotal` the row groups of the partitions whose block span meets the range,
 * in the shards loaded so far (the other partitions are skipped by the manifest
 * without being opened). `partitionsRead` counts partitions opened, `rowGroupsRead`
 * row groups whose data pages were read, `rowsScanned` rows decoded before row-level
 * filtering, `requests`/`bytesFetched` every object-store
 * read of this query, manifest included (a manifest cached by the reader costs none).
 * The numbers are live: they grow while batches are consumed. With `limit` the
 * promise resolves once the limited result is known, so they are final; without
 * it the promise resolves once the first batch is ready (or the scan found
 * nothing), so they cover the planning and the reads up to that batch only.
 */
import { intersectRanges } from '../manifest/coverage.ts'
import type { ManifestReader, PartitionWalk } from '../manifest/read.ts'
import type { BlockRange } from '../manifest/types.ts'
import type { Candidate } from '../index/types.ts'
import { planIndexed } from './index-plan.ts'
import { inlinePieces, type InlinePiece } from './inline-rows.ts'
import { IndexCache } from '../index/read.ts'
import { rowCodecId, rowFieldsOf } from '../index/rows.ts'
import { columnOf, type FieldDecl } from '../schema/dataset.ts'
import { countingStore } from '../store/counting.ts'
import type { ObjectStore } from '../store/types.ts'
import type { RowBatch } from '../columns/batch.ts'
import { takeBlocks } from '../columns/blocks.ts'
import { streamOf } from '../columns/stream.ts'
import { InvalidRangeError, NoDataError } from './errors.ts'
import { planIndexedPartition, planPartition, planScan, type PartitionPlan } from './plan.ts'
import { scanPlan, type ScanOptions } from './scan.ts'
import type { PlannedQuery, Predicate, QuerySpec, ScanStats } from './types.ts'
import type { ScanProgress } from './unit.ts'

export interface EngineContext {
  store: ObjectStore
  manifest: ManifestReader
  /** Tuning of the scan (look-ahead, batch size); defaults suit both runtimes. */
  scan?: ScanOptions
  /** Value-index objects kept across queries (an isolate's or server's); without it each query reads its own. */
  index?: IndexCache
  /** Plan without the value index (the per-partition path everywhere): for comparisons and tests. */
  noIndex?: boolean
}

/** What the value index did for a query (absent when it was not used). */
export interface IndexUse {
  /** Indexed columns looked up. */
  columns: string[]
  /** Per column, blocks where a looked-up value was hot: scanned the per-partition way. */
  hot: { column: string; ranges: BlockRange[] }[]
  /** Index objects read and their bytes (inline rows' slices included). */
  reads: number
  bytes: number
  /** Rows read from the index's inline rows (before the other filters), where no partition was opened. */
  rows: number
}

export interface QueryResult extends PlannedQuery {
  /** Filters applied by pruning as well as to rows, spelled as query parameters (e.g. `address__in`). */
  pushed: string[]
  index?: IndexUse
}

const spell = (p: Predicate) => (p.op === 'eq' ? p.field.name : `${p.field.name}__${p.op}`)

/**
 * Runs a query. Throws NoDataError when nothing of the dataset is stored in the
 * range (its coverage attached) and InvalidRangeError when from > to once `latest`
 * is resolved (`latest` = the highest covered block of the dataset).
 *
 * With `limit`, at most `limit` rows are returned, cut at a block boundary so a
 * block is never split, and `nextFrom` is the first block not returned when more
 * rows remain. When the first block alone has more than `limit` rows, that whole
 * block is returned (a response can then exceed `limit`), because a block cannot
 * be resumed from the middle.
 */
export async function runQuery(ctx: EngineContext, spec: QuerySpec): Promise<QueryResult> {
  const io = countingStore(ctx.store)
  const storage = spec.dataset.storage
  const root = await ctx.manifest.root(spec.chain, io)
  const coverage = root?.datasets[storage]?.coverage ?? []
  if (!root || coverage.length === 0) {
    throw new NoDataError(`no ${spec.dataset.name} stored for chain ${spec.chain.code}`, coverage)
  }
  const latest = coverage[coverage.length - 1][1]
  const range: BlockRange = [spec.from === 'latest' ? latest : spec.from, spec.to === 'latest' ? latest : spec.to]
  // Polling from the block after the last one seen, up to the head: nothing new yet is an empty answer, not an error.
  if (spec.to === 'latest' && range[0] > latest)
    return {
      range,
      served: [],
      latest,
      stats: statsOf(io, { partitionsRead: 0, rowGroupsRead: 0, rowsScanned: 0 }, 0, () => 0),
      pushed: [],
      batches: streamOf([]),
    }
  if (range[0] > range[1]) throw new InvalidRangeError(`from_block ${range[0]} is after to_block ${range[1]}`, range)
  const served = intersectRanges(range, coverage)
  if (served.length === 0) {
    throw new NoDataError(`no ${spec.dataset.name} stored in blocks ${range[0]}-${range[1]}`, coverage, range)
  }

  const rangeField = spec.limit === undefined ? undefined : rangeFieldOf(spec)
  const fields = rangeField && !spec.fields.includes(rangeField) ? [...spec.fields, rangeField] : spec.fields
  const plan = planScan({ ...spec, fields }, range)
  const dataset = root.datasets[storage]
  const fieldsOfRows = rowFieldsOf(spec.dataset)
  // inline rows hold no field declared `inline: false`: a query reading one opens the partitions
  const inRows = new Set(fieldsOfRows.map(f => f.column))
  const rowsCodec = [...plan.columns, ...plan.lookupOrder].every(c => inRows.has(c)) ? rowCodecId(fieldsOfRows) : undefined
  // this query's view of the shared cache (it never waits on another query's read), or a cache
  // of its own: either way its lookups and inline rows read each index object once
  const cache = ctx.index?.scoped() ?? new IndexCache()
  const indexed =
    ctx.noIndex || plan.empty ? null : await planIndexed(io, spec.chain, storage, dataset, plan.predicates, range, cache, rowsCodec)
  const inline = indexed?.inline.length
    ? await inlinePieces(io, plan, fieldsOfRows, indexed.inline, cache)
    : { pieces: [], rows: 0, reads: 0, bytes: 0 }
  const walks = (indexed ? indexed.fallback : [range]).map(r => ctx.manifest.scanPartitions(root, storage, r, io))
  const partitionsTotal = dataset.shards.reduce((n, s) => n + s.partitions, 0)
  const indexedGroups = indexed?.candidates.reduce((n, c) => n + c.entry.rowGroupCount, 0) ?? 0
  const progress: ScanProgress = { partitionsRead: 0, rowGroupsRead: 0, rowsScanned: 0 }
  const stats = statsOf(io, progress, partitionsTotal, () => walks.reduce((n, w) => n + w.loaded.rowGroups, indexedGroups))
  const scanOptions = spec.limit === undefined ? ctx.scan : { rampUp: true, ...ctx.scan }
  const partitions = inBlockOrder(indexed?.candidates ?? [], inline.pieces, walks, range)
  const batches = scanPlan(io, plan, partitions, fields, spec.chain.id, progress, scanOptions)
  const pushed = plan.pushed.map(spell)
  const index = indexed
    ? {
        index: {
          columns: indexed.columns,
          hot: indexed.hot,
          reads: indexed.reads + inline.reads,
          bytes: indexed.bytes + inline.bytes,
          rows: inline.rows,
        },
      }
    : {}

  if (spec.limit === undefined || !rangeField) {
    return { range, served, latest, stats, pushed, ...index, batches: await primed(batches) }
  }
  const cut = await takeBlocks(batches, spec.limit, rangeField.name)
  const output = cut.batches.map(b => project(b, spec.fields))
  const shown = cut.nextFrom === undefined ? served : intersectRanges([range[0], cut.nextFrom - 1], served)
  return { range, served: shown, latest, nextFrom: cut.nextFrom, stats, pushed, ...index, batches: streamOf(output) }
}

/** Live statistics of a query: the scan's progress and the store's counts, read when headers or benchmarks ask. */
function statsOf(
  io: ReturnType<typeof countingStore>,
  progress: ScanProgress,
  partitionsTotal: number,
  rowGroupsTotal: () => number,
): ScanStats {
  return {
    partitionsTotal,
    get partitionsRead() {
      return progress.partitionsRead
    },
    get rowGroupsTotal() {
      return rowGroupsTotal()
    },
    get rowGroupsRead() {
      return progress.rowGroupsRead
    },
    get requests() {
      return io.counts.requests
    },
    get bytesFetched() {
      return io.counts.bytesFetched
    },
    get rowsScanned() {
      return progress.rowsScanned
    },
  }
}

/**
 * The partitions to scan in block order: those the index named, the rows it answered itself
 * (inline pieces), and the partitions of the manifest walks over the blocks it left (all
 * disjoint, partition-aligned, in order). A walk's shards are loaded only when the scan
 * reaches its blocks.
 */
async function* inBlockOrder(
  indexed: readonly Candidate[],
  pieces: readonly InlinePiece[],
  walks: PartitionWalk[],
  range: BlockRange,
): AsyncGenerator<PartitionPlan | InlinePiece> {
  const known: (PartitionPlan | InlinePiece)[] = [...indexed.map(planIndexedPartition), ...pieces]
  const fromOf = (x: PartitionPlan | InlinePiece, i: number) => ('values' in x ? x.from : indexed[i].entry.from)
  const order = known.map((x, i) => ({ x, from: fromOf(x, i) })).sort((a, b) => a.from - b.from)
  let next = 0
  for (const walk of walks) {
    for await (const p of walk.partitions) {
      while (next < order.length && order[next].from < p.from) yield order[next++].x
      const plan = planPartition(p, range)
      if (plan) yield plan
    }
  }
  while (next < order.length) yield order[next++].x
}

/** The output field holding the range key (needed to cut at block boundaries). */
function rangeFieldOf(spec: QuerySpec): FieldDecl {
  const key = spec.dataset.rangeKey
  const field =
    spec.fields.find(f => f.virtual === undefined && columnOf(f) === key) ??
    spec.dataset.fields.find(f => f.virtual === undefined && columnOf(f) === key)
  if (!field) throw new Error(`dataset ${spec.dataset.name} declares no field for its range key ${key}`)
  return field
}

/** Starts the scan and waits for its first batch, so storage failures surface before a response starts. */
async function primed(batches: AsyncGenerator<RowBatch>): Promise<AsyncIterable<RowBatch>> {
  const first = await batches.next()
  return (async function* () {
    try {
      if (first.done) return
      yield first.value
      yield* batches
    } finally {
      await batches.return(undefined)
    }
  })()
}

function project(b: RowBatch, fields: readonly FieldDecl[]): RowBatch {
  const columns: RowBatch['columns'] = {}
  for (const f of fields) columns[f.name] = b.columns[f.name]
  return { length: b.length, columns }
}

/**
 * The ingest loop: resolve the range, plan what the manifest lacks, and per unit
 * fetch verified rows → write one partition per dataset → put the objects → publish
 * all datasets' partitions in one manifest generation. Killed anywhere and run again,
 * it plans the same units, writes byte-identical partitions under the same keys
 * (existing ones are not rewritten) and publishes what was missing.
 */
import type { Chain } from '../chains/registry.ts'
import { DEFAULT_SHARD_SPAN, publish } from '../manifest/publish.ts'
import { rootKey } from '../manifest/keys.ts'
import { parseRoot } from '../manifest/read.ts'
import type { BlockRange, ChainRef, ManifestRoot, PartitionEntry } from '../manifest/types.ts'
import type { BuiltSegment, SegmentSpec } from '../index/build.ts'
import { indexSpecOf, indexStep } from '../index/publish.ts'
import { DEX_DATASETS, dexTokens } from '../datasets/dex.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { putEncoded } from '../parquet/put.ts'
import type { LayoutOptions } from '../parquet/write.ts'
import { evmSource } from './evm-source.ts'
import type { Keccak256 } from './keccak.ts'
import { blockCount, planUnits, type IngestUnit } from './plan.ts'
import { createRpcClient, semaphore, type RpcOptions } from './rpc.ts'
import { lakePositions, PositionTracker } from './positions.ts'
import type { ChainSource } from './source.ts'
import { localBuilder, type UnitBuilder } from './unit.ts'

/** Blocks per partition by default; must divide the manifest's shard span. */
export const DEFAULT_PARTITION_BLOCKS = 10_000

/** Blocks per partition the ingester writes for `chain` unless told otherwise: the registry's, else the default. */
export const partitionBlocksOf = (chain: Chain): number => chain.partitionBlocks ?? DEFAULT_PARTITION_BLOCKS

export interface IngestOptions {
  chain: Chain
  /** JSON-RPC node of an EVM chain; ignored when `source` is given. */
  rpcUrl?: string
  /** Any other source (the Move-VM family); default: an EVM source over `rpcUrl`. */
  source?: ChainSource
  from: number
  /** Last block, or `latest`: the head minus `confirmations`. */
  to: number | 'latest'
  store: ObjectStore
  /** Dataset names (or storage names) to ingest; default all the source's datasets. */
  datasets?: string[]
  /** Blocks to stay behind the head with `to: 'latest'` (default: the chain's, from the registry). */
  confirmations?: number
  /** Blocks per partition (default: the chain's in the registry, else DEFAULT_PARTITION_BLOCKS). */
  partitionBlocks?: number
  layout?: LayoutOptions
  /** Units fetched and written at once (default 1; each unit fetches in parallel on its own). */
  concurrency?: number
  /**
   * Builds each unit's partitions (fetch, verify, transform, encode); default: in this
   * thread from `source`. The Node CLI passes a pool of worker threads (pool.ts) and a
   * `concurrency` to keep them all busy.
   */
  builder?: UnitBuilder
  /** keccak for the EVM source made from `rpcUrl` (default: JavaScript; keccak.ts). */
  keccak?: Keccak256
  /** Options of the JSON-RPC client made for `rpcUrl`. */
  rpc?: RpcOptions
  log?: (line: string) => void
  onProgress?: (p: Progress) => void
  /** Label of the chain's data in the manifest (see ManifestRoot.label). */
  label?: string
}

export interface Progress {
  /** The unit just published. */
  range: BlockRange
  blocks: number
  totalBlocks: number
  rows: Record<string, number>
  bytes: Record<string, number>
  elapsedMs: number
  blocksPerSecond: number
  rowsPerSecond: number
  /** Estimated time left, from the rate so far. */
  etaMs: number
  generation: number
}

export interface IngestReport {
  chain: string
  from: number
  to: number
  /** Units written and published by this run (0 when everything was covered already). */
  units: number
  blocks: number
  rows: Record<string, number>
  bytes: Record<string, number>
  /** Partition objects already in the store under the same key and size (a rerun after a crash). */
  putsSkipped: number
  elapsedMs: number
  generation: number
  coverage: Record<string, BlockRange[]>
}

export const chainRefOf = (chain: Chain): ChainRef => ({ family: chain.family, id: chain.id, code: chain.code })

/** Reads the chain's manifest root, or null before the first publication. */
export async function readRoot(store: ObjectStore, chain: ChainRef): Promise<ManifestRoot | null> {
  const got = await store.get(rootKey(chain))
  return got ? parseRoot(got.body) : null
}

function pickDatasets(source: ChainSource, names: string[] | undefined): DatasetDecl[] {
  if (!names?.length) return [...source.datasets]
  return names
    .map(name => {
      const d = source.datasets.find(x => x.name === name || x.storage === name)
      if (!d) throw new Error(`unknown dataset "${name}": this chain has ${source.datasets.map(x => x.name).join(', ')}`)
      return d
    })
    .filter((d, i, all) => all.findIndex(x => x.storage === d.storage) === i)
}

/** Ingests `from`..`to` of a chain into the store; resumable and idempotent. */
export async function runIngest(opts: IngestOptions): Promise<IngestReport> {
  const started = Date.now()
  const log = opts.log ?? (() => {})
  const chain = chainRefOf(opts.chain)
  const source = opts.source ?? evmSourceFor(opts)
  const builder = opts.builder ?? localBuilder(source, chain, opts.layout)
  const datasets = pickDatasets(source, opts.datasets)
  const span = opts.partitionBlocks ?? partitionBlocksOf(opts.chain)
  if (!Number.isSafeInteger(opts.from) || opts.from < 0) throw new Error(`invalid from block: ${opts.from}`)
  if (!Number.isSafeInteger(span) || span < 1) throw new Error(`invalid partition size: ${span}`)

  const head = await source.head()
  const confirmations = opts.confirmations ?? opts.chain.confirmations
  const to = opts.to === 'latest' ? head - confirmations : opts.to
  if (opts.to !== 'latest') {
    if (!Number.isSafeInteger(to) || to < opts.from) throw new Error(`invalid range: from ${opts.from} to ${opts.to}`)
    if (to > head) throw new Error(`block ${to} is past the node's head ${head}`)
  }

  const root = await readRoot(opts.store, chain)
  const shardSpan = root?.shardSpan ?? DEFAULT_SHARD_SPAN
  if (shardSpan % span !== 0) throw new Error(`partition size ${span} must divide the manifest shard span ${shardSpan}`)
  const coverage = Object.fromEntries(datasets.map(d => [d.storage, root?.datasets[d.storage]?.coverage ?? []]))
  const units = to < opts.from ? [] : planUnits([opts.from, to], coverage, span)
  if (to < opts.from) log(`nothing to ingest: head ${head} minus ${confirmations} confirmations is below block ${opts.from}`)

  const report: IngestReport = {
    chain: opts.chain.code,
    from: opts.from,
    to,
    units: 0,
    blocks: 0,
    rows: Object.fromEntries(datasets.map(d => [d.storage, 0])),
    bytes: Object.fromEntries(datasets.map(d => [d.storage, 0])),
    putsSkipped: 0,
    elapsedMs: 0,
    generation: root?.generation ?? 0,
    coverage,
  }
  const totalBlocks = blockCount(units.map(u => u.range))
  const byStorage = new Map(datasets.map(d => [d.storage, d]))
  const publishing = semaphore(1)

  async function ingestUnit(unit: IngestUnit): Promise<void> {
    const encoded = await builder.build(unit)
    const entries: Record<string, PartitionEntry[]> = {}
    const segments = new Map<string, { spec: SegmentSpec; built: BuiltSegment }>()
    const rows: Record<string, number> = {}
    const bytes: Record<string, number> = {}
    for (const storage of Object.keys(unit.pieces)) {
      if (!byStorage.has(storage)) throw new Error(`unit has blocks for ${storage}, which this run does not ingest`)
      entries[storage] = []
      const spec = indexSpecOf(chain, byStorage.get(storage)!)
      const built = encoded.segments[storage]
      if (spec && built) segments.set(storage, { spec, built })
      for (const partition of encoded.partitions[storage] ?? []) {
        report.putsSkipped += await putEncoded(opts.store, partition)
        entries[storage].push(partition.entry)
        rows[storage] = (rows[storage] ?? 0) + partition.entry.rows
        bytes[storage] = (bytes[storage] ?? 0) + partition.entry.bytes
      }
      if (entries[storage].length !== unit.pieces[storage].length)
        throw new Error(`${storage}: built ${entries[storage].length} partitions for ${unit.pieces[storage].length} pieces`)
    }
    // The unit's index segment was built with its partitions; only the tier merge and the root write are serialised.
    const published = await publishing(() =>
      publish(opts.store, chain, entries, { label: opts.label, index: indexStep(opts.store, segments) }),
    )
    report.units++
    report.blocks += unit.range[1] - unit.range[0] + 1
    for (const k of Object.keys(rows)) {
      report.rows[k] += rows[k]
      report.bytes[k] += bytes[k]
    }
    report.generation = Math.max(report.generation, published.root.generation)
    for (const d of datasets) report.coverage[d.storage] = published.root.datasets[d.storage]?.coverage ?? []
    const elapsedMs = Date.now() - started
    const allRows = Object.values(report.rows).reduce((a, b) => a + b, 0)
    const rate = report.blocks / Math.max(elapsedMs, 1)
    opts.onProgress?.({
      range: unit.range,
      blocks: report.blocks,
      totalBlocks,
      rows: { ...report.rows },
      bytes: { ...report.bytes },
      elapsedMs,
      blocksPerSecond: rate * 1000,
      rowsPerSecond: (allRows / Math.max(elapsedMs, 1)) * 1000,
      etaMs: (totalBlocks - report.blocks) / rate,
      generation: report.generation,
    })
  }

  await runBounded(units, Math.max(1, opts.concurrency ?? 1), ingestUnit)
  report.elapsedMs = Date.now() - started
  return report
}

function evmSourceFor(opts: IngestOptions): ChainSource {
  if (opts.chain.family !== 'evm')
    throw new Error(`${opts.chain.code} is a ${opts.chain.family} chain: pass its source (no JSON-RPC ingestion)`)
  if (!opts.rpcUrl) throw new Error('rpcUrl is required for an EVM chain')
  return evmSource(createRpcClient(opts.rpcUrl, { concurrency: 4, ...opts.rpc }), {
    keccak: opts.keccak,
    chain: { family: 'evm', id: opts.chain.id },
    store: opts.store,
    positions: new PositionTracker(lakePositions(opts.store, opts.chain)),
    dex: wantsDex(opts.datasets),
  })
}

/** Whether a `datasets` choice (names or storage names; none: all) includes a DEX dataset, so the EVM source decodes them. */
export function wantsDex(datasets: string[] | undefined): boolean {
  return !datasets?.length || datasets.some(n => [...DEX_DATASETS, dexTokens].some(d => d.name === n || d.storage === n))
}

/** Runs `task` over `items`, at most `n` at once, in order; after the first failure starts no more and rethrows it. */
async function runBounded<T>(items: readonly T[], n: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]
      try {
        await task(item)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker))
  if (failure) throw failure.error
}

/**
 * What the value index costs, measured on seeded synthetic data shaped like Ethereum
 * (skewed contract and event popularity, a long tail of wallets, unique transaction hashes),
 * and what that means at full-chain scale: index bytes, build and merge time per million
 * rows, and the reads of a whole-history lookup at 2,500 partitions. `runIndexBench()` prints
 * the figures `src/index/README.md` quotes.
 */
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import {
  BUCKET_BYTES,
  buildSegment,
  hotCap,
  inlineTable,
  log2BucketsFor,
  PACK_BYTES,
  type PartitionInput,
  type SegmentSpec,
} from '../../src/index/build.ts'
import { encodeTable } from '../../src/index/format.ts'
import { packPays } from '../../src/index/lookup.ts'
import { mergeSegments } from '../../src/index/merge.ts'
import { segmentSource, storeReader } from '../../src/index/read.ts'
import { MERGE_FACTOR, mergeCount } from '../../src/index/tiers.ts'
import type { IndexedPartition } from '../../src/index/types.ts'
import type { ObjectStore } from '../../src/store/types.ts'

/** How one column's values are drawn: Zipf ranks over a universe (or unique), some rows without a value. */
interface ValueModel {
  column: string
  width: 20 | 32
  /** Zipf exponent and universe size; `unique`: every row its own value (hashes). */
  zipf?: { s: number; n: number }
  /** Share of rows with no value (null topics, contract creations). */
  nulls?: number
}

const LOGS: readonly ValueModel[] = [
  { column: 'address', width: 20, zipf: { s: 1.3, n: 5_000_000 } },
  { column: 'topic0', width: 32, zipf: { s: 1.7, n: 100_000 } },
  { column: 'topic1', width: 32, zipf: { s: 1.05, n: 300_000_000 }, nulls: 0.1 },
  { column: 'topic2', width: 32, zipf: { s: 1.05, n: 300_000_000 }, nulls: 0.25 },
  { column: 'topic3', width: 32, zipf: { s: 1.1, n: 50_000_000 }, nulls: 0.8 },
]

const TRANSACTIONS: readonly ValueModel[] = [
  { column: 'hash', width: 32 },
  { column: 'from', width: 20, zipf: { s: 1.05, n: 200_000_000 } },
  { column: 'to', width: 20, zipf: { s: 1.2, n: 30_000_000 }, nulls: 0.005 },
]

/** A Zipf(s, n) rank in [1, n] from a uniform draw (inverse of the continuous power-law CDF). */
const zipfRank = (u: number, s: number, n: number) => Math.min(n, Math.floor((1 + u * (n ** (1 - s) - 1)) ** (1 / (1 - s))))

/** The values of one column of one row group, packed `width` bytes apart, and which rows have none. */
interface GroupValues {
  bytes: Uint8Array
  absent: Uint8Array
  distinct: number
}

function drawGroup(model: ValueModel, seed: number, rows: number): GroupValues {
  const r = mulberry32(seed)
  const bytes = new Uint8Array(rows * model.width)
  const view = new DataView(bytes.buffer)
  const absent = new Uint8Array(rows)
  const seen = new Set<number>()
  for (let i = 0; i < rows; i++) {
    if (model.nulls && r() < model.nulls) {
      absent[i] = 1
      continue
    }
    const rank = model.zipf ? zipfRank(r(), model.zipf.s, model.zipf.n) : Math.floor(r() * 2 ** 32) + Math.floor(r() * 2 ** 20) * 2 ** 32
    seen.add(rank)
    view.setFloat64(i * model.width, rank)
    view.setUint32(i * model.width + model.width - 4, model.column.length * 7919)
  }
  return { bytes, absent, distinct: seen.size }
}

function* valuesOf(g: GroupValues, width: number): Generator<Uint8Array | null> {
  for (let i = 0; i < g.absent.length; i++) yield g.absent[i] ? null : g.bytes.subarray(i * width, (i + 1) * width)
}

const pad = (n: number) => String(n).padStart(12, '0')

/** A manifest entry shaped like a 10,000-block partition of the lake. */
function syntheticEntry(dataset: string, p: number, groups: number, groupRows: number): PartitionEntry {
  const from = 20_000_000 + p * 10_000
  const bytes = groups * groupRows * 90 + 400_000
  return {
    key: `evm-1/${dataset}/${pad(from)}-${pad(from + 9_999)}-${(p * 2654435761).toString(16).padStart(16, '0').slice(-16)}.parquet`,
    from,
    to: from + 9_999,
    rows: groups * groupRows,
    bytes,
    tailOffset: bytes - 400_000,
    footerOffset: bytes - 40_000,
    blooms: { address: { offset: bytes - 360_000, length: 80_000 } },
    rowGroups: Array.from({ length: groups }, (_, g) => ({
      from: from + g,
      to: from + g,
      rows: groupRows,
      offset: 4 + g * groupRows * 90,
      length: groupRows * 90,
    })),
  }
}

/** One column of synthetic partitions, drawn up front so that only the build is timed. */
function syntheticPartitions(
  dataset: string,
  model: ValueModel,
  seed: number,
  partitions: number,
  groups: number,
  groupRows: number,
): { inputs: PartitionInput[]; distinct: number } {
  let distinct = 0
  const inputs = Array.from({ length: partitions }, (_, p) => ({
    entry: syntheticEntry(dataset, p, groups, groupRows),
    rowGroups: Array.from({ length: groups }, (_, g) => {
      const drawn = drawGroup(model, seed * 1_000_003 + (p * groups + g) * 31 + model.column.length, groupRows)
      distinct += drawn.distinct
      return { [model.column]: { [Symbol.iterator]: () => valuesOf(drawn, model.width) } }
    }),
  }))
  return { inputs, distinct: distinct / (partitions * groups) }
}

/** An ObjectStore over a Map, for merging in memory. */
function mapStore(objects: Map<string, Uint8Array>): ObjectStore {
  return {
    get: async key => {
      const body = objects.get(key)
      return body ? { key, size: body.length, etag: '', body, offset: 0 } : null
    },
    head: async () => null,
    put: async (key, body) => {
      objects.set(key, body)
      return { key, size: body.length, etag: '' }
    },
    list: async () => [],
    delete: async key => {
      objects.delete(key)
    },
  }
}

/** Measured figures of one indexed column. */
export interface ColumnFigures {
  dataset: string
  column: string
  rows: number
  /** Distinct values per row group over rows per row group. */
  distinctShare: number
  /** Keys and hot keys of the merged segment. */
  keys: number
  hot: number
  /** Index bytes per row: one segment per partition, and all partitions merged into one. */
  bytesPerRowSmall: number
  bytesPerRowMerged: number
  buildMsPerMillionRows: number
  mergeMsPerMillionRows: number
}

/** What a whole-history lookup costs on a lake shaped like Ethereum at 2,500 partitions. */
export interface LookupFigures {
  partitions: number
  rowGroups: number
  segmentsMax: number
  segmentsFinal: number
  /** Row groups written over row groups appended, over the 2,500 appends. */
  writeAmplification: number
  /** In the state with the most reads over the appends, per column: reads and bytes of 1 and 20 values, cold (tables too) and warm (tables cached). */
  worst: Record<string, { one: Cost; twenty: Cost }>
  tableBytesPerPartition: number
}

interface Cost {
  coldReads: number
  warmReads: number
  coldBytes: number
  warmBytes: number
}

export interface IndexBenchReport {
  columns: ColumnFigures[]
  lookup: LookupFigures
  /** Bytes at Ethereum scale (5 billion logs, 2.5 billion transactions) at the merged bytes per row. */
  ethereum: Record<string, number>
}

/** Rows per row group and row groups per partition of the modelled lake (BENCHMARKS.md), and the chain's rows. */
const GROUP_ROWS = 10_000
const LOGS_ROWS = 5e9
const TRANSACTIONS_ROWS = 2.5e9
/** Row groups per logs partition along the chain: 1 early, 280 (2.8 M logs per 10,000 blocks) today. */
const groupsAlongChain = (i: number) => Math.max(1, Math.round(280 * Math.min(1, (i / 2500) ** 1.5 * 1.2)))

async function measure(
  dataset: string,
  models: readonly ValueModel[],
  partitions: number,
  groups: number,
  seed: number,
): Promise<ColumnFigures[]> {
  const rows = partitions * groups * GROUP_ROWS
  const out: ColumnFigures[] = []
  for (const m of models) {
    const { inputs, distinct } = syntheticPartitions(dataset, m, seed, partitions, groups, GROUP_ROWS)
    const spec: SegmentSpec = { prefix: `evm-1/index/${dataset}`, columns: [m.column] }
    const objects = new Map<string, Uint8Array>()
    let buildMs = 0
    let small = 0
    const built = inputs.map(input => {
      const t = performance.now()
      const b = buildSegment(spec, [input])
      buildMs += performance.now() - t
      for (const o of b.objects) objects.set(o.key, o.bytes)
      small += b.descriptor.columns[m.column].bytes
      return b.descriptor
    })
    const store = mapStore(objects)
    const read = storeReader(store)
    let mergedBytes = 0
    const t = performance.now()
    const merged = await mergeSegments(
      spec,
      built.map(d => segmentSource(read, spec.prefix, d)),
      async o => {
        if (!o.key.includes('/_partitions/')) mergedBytes += o.bytes.length
        objects.set(o.key, o.bytes)
      },
    )
    const mergeMs = performance.now() - t
    let keys = 0
    let hot = 0
    const source = segmentSource(read, spec.prefix, merged)
    for (let b = 0; b < merged.columns[m.column].buckets; b++) {
      const e = await source.bucket(m.column, b)
      keys += e.keys.length
      hot += e.hot.reduce((n, h) => n + h, 0)
    }
    out.push({
      dataset,
      column: m.column,
      rows,
      distinctShare: distinct / GROUP_ROWS,
      keys,
      hot,
      bytesPerRowSmall: small / rows,
      bytesPerRowMerged: mergedBytes / rows,
      buildMsPerMillionRows: (buildMs / rows) * 1e6,
      mergeMsPerMillionRows: (mergeMs / rows) * 1e6,
    })
  }
  return out
}

/** Reads and bytes of looking up `values` in segments of these sizes (row groups), tables apart where big. */
function lookupCost(
  sizes: readonly { rowGroups: number; partitions: number }[],
  bytesPerRow: number,
  tableBytesPerPartition: number,
  values: number,
): Cost {
  const cost: Cost = { coldReads: 0, warmReads: 0, coldBytes: 0, warmBytes: 0 }
  for (const s of sizes) {
    const bytes = s.rowGroups * GROUP_ROWS * bytesPerRow
    const buckets = 2 ** log2BucketsFor(bytes, BUCKET_BYTES)
    const distinct = buckets * (1 - (1 - 1 / buckets) ** values)
    const tableBytes = s.partitions * tableBytesPerPartition
    const apart = !inlineTable(new Uint8Array(tableBytes), { prefix: '', columns: [] })
    const bucketBytes = bytes / buckets + (apart ? 0 : tableBytes)
    // a column of several buckets within PACK_BYTES has a pack (ColumnWriter), read where it pays
    const all = bucketBytes * buckets
    const packed = packPays({ id: '', buckets, bytes: all, ...(buckets > 1 && all <= PACK_BYTES ? { pack: all } : {}) }, distinct)
    const reads = packed ? 1 : distinct
    const read = packed ? all : distinct * bucketBytes
    cost.warmReads += reads
    cost.warmBytes += read
    cost.coldReads += reads + (apart ? 1 : 0)
    cost.coldBytes += read + (apart ? tableBytes : 0)
  }
  return cost
}

function lookupFigures(columns: readonly ColumnFigures[]): LookupFigures {
  const records: IndexedPartition[] = Array.from({ length: 100 }, (_, p) => {
    const e = syntheticEntry('logs', p, 280, GROUP_ROWS)
    return {
      key: e.key,
      from: e.from,
      to: e.to,
      rows: e.rows,
      bytes: e.bytes,
      tailOffset: e.tailOffset,
      footerOffset: e.footerOffset,
      bloomOffset: e.bytes - 360_000,
      rowGroupCount: 280,
    }
  })
  const tableBytesPerPartition = encodeTable(records).length / records.length
  let segments: { rowGroups: number; partitions: number }[] = []
  let appended = 0
  let written = 0
  let segmentsMax = 0
  const worst: LookupFigures['worst'] = {}
  for (let i = 0; i < 2500; i++) {
    const unit = { rowGroups: groupsAlongChain(i), partitions: 1 }
    segments.push(unit)
    appended += unit.rowGroups
    const n = mergeCount(
      segments.map(s => s.rowGroups),
      MERGE_FACTOR,
    )
    if (n > 1) {
      const merged = segments
        .splice(segments.length - n, n)
        .reduce((a, b) => ({ rowGroups: a.rowGroups + b.rowGroups, partitions: a.partitions + b.partitions }))
      segments = [...segments, merged]
      written += merged.rowGroups
    } else written += unit.rowGroups
    segmentsMax = Math.max(segmentsMax, segments.length)
    for (const c of columns) {
      const one = lookupCost(segments, c.bytesPerRowMerged, tableBytesPerPartition, 1)
      const twenty = lookupCost(segments, c.bytesPerRowMerged, tableBytesPerPartition, 20)
      const key = `${c.dataset}.${c.column}`
      if (
        !worst[key] ||
        one.coldReads > worst[key].one.coldReads ||
        (one.coldReads === worst[key].one.coldReads && twenty.coldBytes > worst[key].twenty.coldBytes)
      )
        worst[key] = { one, twenty }
    }
  }
  return {
    partitions: 2500,
    rowGroups: appended,
    segmentsMax,
    segmentsFinal: segments.length,
    writeAmplification: written / appended,
    worst,
    tableBytesPerPartition,
  }
}

const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`

/**
 * Measures the index on `partitions` synthetic partitions of `groups` 10,000-row groups per
 * dataset (logs: address, topic0–3; transactions: hash, from, to), prints the figures and
 * returns them. Defaults: 8 × 64 groups (5.12 M rows per dataset: enough row groups that hot means 1/8 of them, as at scale), ~1 minute.
 */
export async function runIndexBench(
  options: { partitions?: number; groups?: number; seed?: number } = {},
  log: (line: string) => void = console.log,
): Promise<IndexBenchReport> {
  const { partitions = 8, groups = 64, seed = 1 } = options
  const columns = [
    ...(await measure('logs', LOGS, partitions, groups, seed)),
    ...(await measure('transactions', TRANSACTIONS, partitions, groups, seed)),
  ]
  const lookup = lookupFigures(columns)
  const ethereum: Record<string, number> = {}
  for (const c of columns)
    ethereum[`${c.dataset}.${c.column}`] = c.bytesPerRowMerged * (c.dataset === 'logs' ? LOGS_ROWS : TRANSACTIONS_ROWS)
  log(
    `value index: ${partitions} partitions × ${groups} row groups of ${GROUP_ROWS} rows per dataset, hot above max(64, row groups / 8) (${hotCap(partitions * groups)} here)`,
  )
  log(
    '| column | distinct / row group | keys (merged) | hot | bytes / row (1 partition) | bytes / row (merged) | build ms / M rows | merge ms / M rows | at Ethereum scale |',
  )
  log('|---|---|---|---|---|---|---|---|---|')
  for (const c of columns) {
    const k = `${c.dataset}.${c.column}`
    log(
      `| ${k} | ${(c.distinctShare * 100).toFixed(0)} % | ${c.keys} | ${c.hot} | ${c.bytesPerRowSmall.toFixed(2)} | ${c.bytesPerRowMerged.toFixed(2)} | ${c.buildMsPerMillionRows.toFixed(0)} | ${c.mergeMsPerMillionRows.toFixed(0)} | ${(ethereum[k] / 1e9).toFixed(1)} GB |`,
    )
  }
  const sum = (dataset: string) => columns.filter(c => c.dataset === dataset).reduce((n, c) => n + ethereum[`${dataset}.${c.column}`], 0)
  log(
    `Ethereum scale (${LOGS_ROWS / 1e9} billion logs, ${TRANSACTIONS_ROWS / 1e9} billion transactions): logs ${(sum('logs') / 1e9).toFixed(1)} GB, transactions ${(sum('transactions') / 1e9).toFixed(1)} GB`,
  )
  log(
    `tiers over 2,500 partitions (${lookup.rowGroups} row groups, F = ${MERGE_FACTOR}): at most ${lookup.segmentsMax} segments (${lookup.segmentsFinal} at the end), write amplification ${lookup.writeAmplification.toFixed(1)}; partition table ${lookup.tableBytesPerPartition.toFixed(0)} B a partition`,
  )
  log('| column | 1 value cold | 1 value warm | 20 values cold | 20 values warm |')
  log('|---|---|---|---|---|')
  const cell = (c: Cost, cold: boolean) => `${(cold ? c.coldReads : c.warmReads).toFixed(1)} reads, ${mb(cold ? c.coldBytes : c.warmBytes)}`
  for (const [k, w] of Object.entries(lookup.worst))
    log(`| ${k} | ${cell(w.one, true)} | ${cell(w.one, false)} | ${cell(w.twenty, true)} | ${cell(w.twenty, false)} |`)
  return { columns, lookup, ethereum }
}

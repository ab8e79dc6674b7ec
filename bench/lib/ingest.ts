/**
 * Ingest figures for `npm run bench`: blocks/s and rows/s of a real ingest from a
 * JSON-RPC node into a store, and per dataset the Parquet bytes per row against the
 * same rows as JSON-RPC JSON (blocks without their transactions; transactions with
 * their receipts minus logs; logs).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Chain } from '../../src/chains/registry.ts'
import { findChain } from '../../src/chains/registry.ts'
import type { BlockRange } from '../../src/manifest/types.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import type { RawBlock } from '../../src/ingest/evm-json.ts'
import { evmExtractor } from '../../src/ingest/extract.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { runIngest } from '../../src/ingest/run.ts'
import type { IngestUnit } from '../../src/ingest/plan.ts'
import type { UnitBuilder } from '../../src/ingest/unit.ts'
import { putEncoded } from '../../src/parquet/put.ts'
import type { ChainSource } from '../../src/ingest/source.ts'
import { joinBatches, type PackedBatch } from '../../src/columns/batch.ts'
import { rowEnd, rowStart, type Vector } from '../../src/columns/vector.ts'
import { columnOf, type DatasetDecl, type FieldDecl } from '../../src/schema/dataset.ts'

export interface DatasetFigures {
  rows: number
  parquetBytes: number
  parquetBytesPerRow: number
  jsonBytes: number
  jsonBytesPerRow: number
  /** Parquet size as a fraction of the JSON size. */
  ratio: number
}

export interface IngestBench {
  ranges: BlockRange[]
  blocks: number
  elapsedMs: number
  blocksPerSecond: number
  rowsPerSecond: number
  /** JSON-RPC response bytes of the same blocks and receipts (eth_getBlockByNumber, eth_getBlockReceipts). */
  rpcBytes: number
  datasets: Record<string, DatasetFigures>
}

export interface BenchOptions {
  /** Default: the EVM chain the node reports through eth_chainId, else DEVNET. */
  chain?: Chain
  /** Default: a temporary file-system store, removed afterwards. */
  store?: ObjectStore
  partitionBlocks?: number
}

const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

/** JSON-RPC JSON bytes of the rows each dataset holds, for one block. */
export function jsonSizes({ block, receipts }: RawBlock): Record<string, number> {
  const { transactions, ...header } = block
  return {
    blocks: size(header),
    transactions: transactions.reduce((n, tx, i) => {
      const { logs: _logs, ...receipt } = receipts[i]
      return n + size(tx) + size(receipt)
    }, 0),
    logs: receipts.reduce((n, r) => n + r.logs.reduce((m, l) => m + size(l), 0), 0),
  }
}

/** Ingests `ranges` from the node (timed), then measures the JSON of the same blocks (untimed). */
export async function benchIngest(rpcUrl: string, range: BlockRange | BlockRange[], options: BenchOptions = {}): Promise<IngestBench> {
  const ranges = (typeof range[0] === 'number' ? [range] : range) as BlockRange[]
  const probe = createRpcClient(rpcUrl)
  const chainId = Number(BigInt(await probe.request<string>('eth_chainId')))
  const chain = options.chain ?? findChain('evm', String(chainId)) ?? findChain('evm', 'DEVNET')!
  const dir = options.store ? undefined : await mkdtemp(join(tmpdir(), 'bench-ingest-'))
  const store = options.store ?? fsStore(dir!)
  try {
    const rpc = { concurrency: 4 }
    let elapsedMs = 0
    let rpcBytes = 0
    const rows: Record<string, number> = {}
    const bytes: Record<string, number> = {}
    for (const [from, to] of ranges) {
      const report = await runIngest({ chain, rpcUrl, from, to, store, partitionBlocks: options.partitionBlocks, rpc })
      elapsedMs += report.elapsedMs
      for (const [k, v] of Object.entries(report.rows)) rows[k] = (rows[k] ?? 0) + v
      for (const [k, v] of Object.entries(report.bytes)) bytes[k] = (bytes[k] ?? 0) + v
    }
    const json: Record<string, number> = {}
    const extractor = evmExtractor(probe)
    const before = probe.stats.bytes
    for (const [from, to] of ranges) {
      for (let a = from; a <= to; a += 100) {
        for (const raw of await extractor.extract(a, Math.min(to, a + 99))) {
          for (const [k, v] of Object.entries(jsonSizes(raw))) json[k] = (json[k] ?? 0) + v
        }
      }
    }
    rpcBytes = probe.stats.bytes - before
    const blocks = ranges.reduce((n, [a, b]) => n + b - a + 1, 0)
    const allRows = Object.values(rows).reduce((a, b) => a + b, 0)
    const datasets = Object.fromEntries(
      Object.keys(rows).map(k => [
        k,
        {
          rows: rows[k],
          parquetBytes: bytes[k],
          parquetBytesPerRow: rows[k] ? bytes[k] / rows[k] : 0,
          jsonBytes: json[k] ?? 0,
          jsonBytesPerRow: rows[k] ? (json[k] ?? 0) / rows[k] : 0,
          ratio: json[k] ? bytes[k] / json[k] : 0,
        },
      ]),
    )
    return {
      ranges,
      blocks,
      elapsedMs,
      blocksPerSecond: (blocks / Math.max(elapsedMs, 1)) * 1000,
      rowsPerSecond: (allRows / Math.max(elapsedMs, 1)) * 1000,
      rpcBytes,
      datasets,
    }
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true })
  }
}

export interface RateFigures {
  blocks: number
  elapsedMs: number
  blocksPerSecond: number
  /** CPU time of this process (every thread) per block; the replay node's is not counted. */
  cpuMsPerBlock: number
  /** Largest resident set of this process (every thread) sampled during the run, in MiB. */
  peakRssMiB: number
}

/** A row of the rate table: its rate, and the replay node's CPU a block over the same run. */
export type RateRow = RateFigures & { nodeCpuMsPerBlock: number }

/** Runs `figures` and adds the replay node's (process `nodePid`) CPU a block over the run. */
export async function withNodeCpu(nodePid: number, figures: () => Promise<RateFigures>): Promise<RateRow> {
  const before = processCpuMs(nodePid)
  const f = await figures()
  return { ...f, nodeCpuMsPerBlock: (processCpuMs(nodePid) - before) / f.blocks }
}

/** CPU time (user + system) a process has used, from /proc (Linux, 100 ticks a second); 0 elsewhere. */
export function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/**
 * The Node flags `npm run ingest` gives the ingester (its script in package.json, read here so
 * that the bench cannot drift from it): `--single-threaded-gc`, since with a worker thread per
 * core V8's parallel GC helpers only take turns with the other threads.
 */
export function ingestNodeFlags(root: string): string[] {
  const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { scripts: Record<string, string> }
  const words = pkg.scripts.ingest.split(/\s+/)
  if (words[0] !== 'node') throw new Error(`package.json's ingest script does not start with node: ${pkg.scripts.ingest}`)
  return words.slice(1).filter(w => w.startsWith('--'))
}

/** What bench/lib/ingest-pool.ts prints: the Node flags it ran with, and its rows per pool, each repetition apart. */
export interface PoolRows {
  execArgv: string[]
  rows: [string, RateRow[]][]
}

/** Runs bench/lib/ingest-pool.ts in a process with `flags`. */
export async function poolRows(flags: readonly string[], run: object, log: (line: string) => void): Promise<PoolRows> {
  const child = spawn(process.execPath, [...flags, new URL('./ingest-pool.ts', import.meta.url).pathname, JSON.stringify(run)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => c.split('\n').filter(Boolean).forEach(log))
  const code = await new Promise<number | null>(resolve => child.once('exit', resolve))
  if (code !== 0) throw new Error(`bench/lib/ingest-pool.ts exited with ${code}`)
  return JSON.parse(out) as PoolRows
}

/**
 * The ingester's rate on recorded blocks repeated: `rounds` units per recorded block,
 * each built by `builder` from a repeatSource of `blocksPerUnit` (fetch → verify →
 * transform per block, then a partition of blocksPerUnit blocks per dataset in
 * `storages`, default the three EVM ones, encoded and stored), `concurrency` units in flight. Manifest publication is left out: the
 * ingester publishes once per unit (a partition: 1,000 blocks on Ethereum).
 */
export async function benchUnitRate(
  builder: UnitBuilder,
  numbers: readonly number[],
  options: { rounds: number; blocksPerUnit: number; concurrency: number; store: ObjectStore; storages?: readonly string[] },
): Promise<RateFigures> {
  const units: IngestUnit[] = []
  const storages = options.storages ?? ['blocks', 'transactions', 'logs']
  for (let r = 0; r < options.rounds; r++) {
    for (const n of numbers) units.push({ range: [n, n], pieces: Object.fromEntries(storages.map(s => [s, [[n, n] as BlockRange]])) })
  }
  let next = 0
  let peak = process.memoryUsage.rss()
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 50)
  const cpu = process.cpuUsage()
  const started = performance.now()
  const lane = async () => {
    while (next < units.length) {
      const built = await builder.build(units[next++])
      for (const parts of Object.values(built.partitions)) for (const p of parts) await putEncoded(options.store, p)
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, lane)).finally(() => clearInterval(sampler))
  const elapsedMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  const blocks = units.length * options.blocksPerUnit
  return {
    blocks,
    elapsedMs,
    blocksPerSecond: (blocks / elapsedMs) * 1000,
    cpuMsPerBlock: (used.user + used.system) / 1000 / blocks,
    peakRssMiB: Math.max(peak, process.memoryUsage.rss()) / 2 ** 20,
  }
}

/**
 * A source that fetches each range `times` times over (each fetch verified and
 * transformed on its own, `inFlight` at once as the EVM source fetches a unit's steps) and gives
 * the rows of all of them: a long run of full-size partitions from a few recorded blocks.
 * Copies after the first are made distinct where a chain's values are (`distinctCopy`), so the
 * writers meet as many distinct hashes, signatures and payloads as in real blocks rather than the
 * same few values again.
 */
export function repeatSource(source: ChainSource, times: number, inFlight = 4): ChainSource {
  return {
    datasets: source.datasets,
    head: () => source.head(),
    async fetch(range) {
      const parts: Record<string, PackedBatch>[] = new Array(times)
      let next = 0
      const lane = async () => {
        for (let i = next++; i < times; i = next++) {
          const part = await source.fetch(range)
          parts[i] = i ? distinctCopy(source.datasets, part, i) : part
        }
      }
      await Promise.all(Array.from({ length: Math.min(inFlight, times) }, lane))
      return Object.fromEntries(Object.keys(parts[0]).map(k => [k, joinBatches(parts.map(p => p[k]))]))
    },
  }
}

/**
 * Columns whose values are (nearly) all distinct on a real chain, not repeated block after
 * block: hashes other than topics (block, transaction, state and trie roots), signatures,
 * calldata, log data and blooms. Addresses, topics and amounts repeat on a chain too, and stay.
 */
export const isDistinctOnChain = (f: FieldDecl): boolean =>
  ((f.kind === 'hash' || f.kind === 'bytes') && !/^topic\d$/.test(f.name)) || f.name === 'r' || f.name === 's'

/**
 * Copy number `copy` of a fetch's rows: in the columns `isDistinctOnChain`, every value of
 * four bytes or more with its first four bytes and its last four xored with the copy number
 * (distinct values differ early, which comparisons see, and late, which the index's hash of a
 * value's tail sees). Equal values stay equal across the copy's datasets: the same function of
 * the value everywhere, so a transaction's hash still joins its logs. The rows are packed, as
 * the source gives them, and changed where they lie.
 */
export function distinctCopy(
  datasets: readonly DatasetDecl[],
  part: Record<string, PackedBatch>,
  copy: number,
): Record<string, PackedBatch> {
  return Object.fromEntries(
    Object.entries(part).map(([storage, batch]) => {
      const fields = datasets.find(d => d.storage === storage)?.fields.filter(f => isDistinctOnChain(f) && !f.virtual) ?? []
      const columns = { ...batch.columns }
      for (const f of fields) {
        const column = columnOf(f)
        const values = columns[column]
        if (values) columns[column] = distinctVector(values, copy)
      }
      return [storage, { ...batch, columns }]
    }),
  )
}

/**
 * `v` with each byte value of four bytes or more xored with `copy` in its last four bytes, and of
 * eight or more in its first four: in place, since each copy is a fetch of its own whose rows
 * nothing else holds (a copy of the bytes was the harness's, not the ingester's, cost).
 */
function distinctVector(v: Vector, copy: number): Vector {
  if (v.type !== 'fixed' && v.type !== 'binary') return v
  const bytes = v.bytes
  const b0 = copy & 0xff
  const b1 = (copy >>> 8) & 0xff
  const b2 = (copy >>> 16) & 0xff
  const b3 = copy >>> 24
  const xorAt = (at: number) => {
    bytes[at] ^= b0
    bytes[at + 1] ^= b1
    bytes[at + 2] ^= b2
    bytes[at + 3] ^= b3
  }
  for (let i = 0; i < v.length; i++) {
    if (v.valid !== null && v.valid[i] === 0) continue
    const start = rowStart(v, i)
    const end = rowEnd(v, i)
    if (end - start < 4) continue
    xorAt(end - 4)
    if (end - start >= 8) xorAt(start)
  }
  return v
}

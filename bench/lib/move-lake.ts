/**
 * Move-VM figures for `npm run bench -- move` (bench/move.ts), not a test:
 *
 * 1. Ingest rate from the replay server (shared/tools/replay-aptos.mjs) through the
 *    real path (fullnode client → moveSource → runIngest → Parquet → manifest):
 *    (a) the 88 recorded mainnet transactions, one range each as their versions are
 *    sparse, so each pays a whole run (ledger info, previous version, publication)
 *    and a partition of its own;
 *    (b) the same transactions in one sparse pass written as one partition (fetch,
 *    hash checks, decoding, Parquet; no publication): the rate and size of real data;
 *    (c) a dense synthetic chain (scripts/dev/move-sample.ts) served by the same replay tool
 *    from a temporary data directory, in pages of 100 and partitions of 10,000.
 *    Each with its Parquet and REST JSON bytes per transaction.
 * 2. Queries by sender and by entry function over a generated lake of at least
 *    200,000 transactions (the sample generator with 20,000 accounts), with the
 *    engine's object-store requests and bytes (runQuery over a counting store).
 *
 * Run alone: `npx node bench/lib/move-lake.ts [lakeDir] [replay-aptos.mjs]` (prints JSON).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { findChain, type Chain } from '../../src/chains/registry.ts'
import { moveTransactions } from '../../src/datasets/move.ts'
import { moveSource } from '../../src/ingest/move-source.ts'
import { runIngest, DEFAULT_PARTITION_BLOCKS } from '../../src/ingest/run.ts'
import { writePartition } from '../../src/parquet/write.ts'
import { valuesOf } from '../../src/columns/vector.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { Predicate, QuerySpec } from '../../src/query/types.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { countingStore } from '../../src/store/counting.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { fullnodeClient } from '../../src/move/rest.ts'
import type { RestUserTransaction } from '../../src/move/rest-types.ts'
import {
  SAMPLE_MODULES,
  sampleAccount,
  sampleBlocks,
  sampleNode,
  type SampleBlock,
  type SampleSpec,
} from '../../scripts/dev/move-sample.ts'
import { median } from '../report.ts'

export interface MoveBenchOptions {
  /** Path of replay-aptos.mjs (shared/tools), the fullnode the ingest rates are measured against. */
  replayScript: string
  /** Directory of the query lake: built when it holds none, reused otherwise. */
  lakeDir: string
  /** Transactions in the query lake, at least (default 200,000). */
  lakeTransactions?: number
  /** Transactions of the dense chain served by the replay tool (default 20,000). */
  denseTransactions?: number
  /** Timed runs per query; the median is reported (default 5). */
  runs?: number
  log?: (line: string) => void
}

export interface IngestFigures {
  source: string
  transactions: number
  /** Ingest runs (one per range). */
  runs: number
  elapsedMs: number
  transactionsPerSecond: number
  parquetBytes: number
  parquetBytesPerTransaction: number
  /** `GET /transactions` response bytes per transaction. */
  restBytesPerTransaction: number
}

export interface QueryFigures {
  name: string
  /** The query string of the filter. */
  filter: string
  rows: number
  /** Rows the generator made that the filter selects: `rows` must equal it. */
  expectedRows: number
  /** Cold run: a fresh manifest reader, every read from the store. */
  requests: number
  bytesFetched: number
  partitionsRead: string
  rowGroupsRead: string
  coldMs: number
  /** Median of the warm runs (manifest cached, Parquet read again). */
  warmMs: number
}

export interface LakeFigures {
  dir: string
  transactions: number
  partitions: number
  bytes: number
  bytesPerTransaction: number
  /** Null when an existing lake was reused. */
  buildMs: number | null
}

export interface MoveBench {
  /** (a), (b), (c) above. */
  ingest: IngestFigures[]
  lake: LakeFigures
  queries: QueryFigures[]
}

const MOVEMENT = findChain('move', 'MOVEMENT')!
/** The query lake's chain: MOVEMENT's id and code, seeded apart from the bundled sample. */
const LAKE_SPEC: SampleSpec = { chainId: MOVEMENT.id, seed: 'bench/MOVEMENT', accounts: 20_000 }
const DENSE_SPEC: SampleSpec = { chainId: MOVEMENT.id, seed: 'bench-dense/MOVEMENT' }
/** The account and function the queries select. */
const SENDER_INDEX = 7
const FUNCTION = '0xc0ffee::message::set_message'
const TALLY = 'bench-tally.json'

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0)

interface Replay {
  url: string
  stop(): void
}

async function startReplay(script: string, args: string[]): Promise<Replay> {
  const child = spawn(process.execPath, [script, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', line => resolve(line.replace(/^listening /, '')))
    child.once('exit', code => reject(new Error(`${script} exited with ${code}`)))
  })
  return { url, stop: () => child.kill() }
}

/** A fetch that counts the bytes of `GET /transactions` pages. */
function pageBytes() {
  const counted = { bytes: 0 }
  const f = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init)
    if (!String(input).includes('/transactions?')) return res
    const text = await res.text()
    counted.bytes += Buffer.byteLength(text)
    return new Response(text, { status: res.status, headers: res.headers })
  }
  return { counted, fetch: f as typeof fetch }
}

/** Ingests `ranges` from the node at `url` into a temporary store, one run per range. */
async function timedIngest(source: string, chain: Chain, url: string, ranges: [number, number][]): Promise<IngestFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'move-bench-ingest-'))
  try {
    const store = fsStore(dir)
    const pages = pageBytes()
    let transactions = 0
    let parquetBytes = 0
    const started = performance.now()
    for (const [from, to] of ranges) {
      const src = moveSource(fullnodeClient({ url, fetch: pages.fetch }), { chain, store })
      const report = await runIngest({ chain, source: src, from, to, store })
      transactions += sum(report.rows)
      parquetBytes += sum(report.bytes)
    }
    const elapsedMs = performance.now() - started
    return {
      source,
      transactions,
      runs: ranges.length,
      elapsedMs,
      transactionsPerSecond: (transactions / elapsedMs) * 1000,
      parquetBytes,
      parquetBytesPerTransaction: parquetBytes / transactions,
      restBytesPerTransaction: pages.counted.bytes / transactions,
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The first blocks of a sample reaching `count` transactions. */
function blocksFor(spec: SampleSpec, count: number): SampleBlock[] {
  const out: SampleBlock[] = []
  let n = 0
  for (const b of sampleBlocks(spec)) {
    out.push(b)
    n += b.transactions.length
    if (n >= count) break
  }
  return out
}

/** (b): writes a dense chain where replay-aptos.mjs reads its data (`--data`), and ingests it from there. */
async function denseIngest(script: string, count: number, log: (line: string) => void): Promise<IngestFigures> {
  const data = await mkdtemp(join(tmpdir(), 'move-bench-replay-'))
  try {
    log(`generating a dense chain of ${count} transactions`)
    const txs = blocksFor(DENSE_SPEC, count).flatMap(b => b.transactions)
    await mkdir(join(data, 'rest', 'mainnet'), { recursive: true })
    await mkdir(join(data, 'abis'))
    await writeFile(join(data, 'rest', 'mainnet', 'transactions.json'), JSON.stringify(txs))
    await writeFile(join(data, 'rest', 'mainnet', 'manifest.json'), JSON.stringify({ chain_id: MOVEMENT.id, transactions: [] }))
    await writeFile(join(data, 'abis', 'sample.json'), JSON.stringify(SAMPLE_MODULES.map(abi => ({ bytecode: '0x', abi }))))
    const replay = await startReplay(script, ['--network', 'mainnet', '--data', data])
    try {
      log(`ingesting versions 0-${txs.length - 1} from the replay server at ${replay.url}`)
      return await timedIngest('replay-aptos.mjs, dense synthetic chain', MOVEMENT, replay.url, [[0, txs.length - 1]])
    } finally {
      replay.stop()
    }
  } finally {
    await rm(data, { recursive: true, force: true })
  }
}

/** (a) and (b): the recorded mainnet transactions, one run per version, then in one pass. */
async function recordedIngest(script: string, log: (line: string) => void): Promise<IngestFigures[]> {
  const APTOS = findChain('move', 'APTOS')!
  const replay = await startReplay(script, ['--network', 'mainnet'])
  try {
    const head = await fullnodeClient({ url: replay.url }).ledgerInfo()
    const [first, last] = [Number(head.oldest_ledger_version), Number(head.ledger_version)]
    log(`one sparse pass over the recorded mainnet versions ${first}-${last}`)
    const dir = await mkdtemp(join(tmpdir(), 'move-bench-pass-'))
    let pass: IngestFigures
    let versions: number[]
    try {
      const pages = pageBytes()
      const source = moveSource(fullnodeClient({ url: replay.url, fetch: pages.fetch }), {
        chain: APTOS,
        store: fsStore(dir),
        sparse: true,
      })
      const started = performance.now()
      await source.head()
      const batch = (await source.fetch([first, last]))[moveTransactions.storage]
      const written = writePartition(moveTransactions, batch, { from: first, to: last })
      const elapsedMs = performance.now() - started
      versions = valuesOf(batch.columns.version).map(Number)
      pass = {
        source: 'replay-aptos.mjs, recorded mainnet in one sparse pass, one partition, no publication',
        transactions: batch.length,
        runs: 1,
        elapsedMs,
        transactionsPerSecond: (batch.length / elapsedMs) * 1000,
        parquetBytes: written.bytes.length,
        parquetBytesPerTransaction: written.bytes.length / batch.length,
        restBytesPerTransaction: pages.counted.bytes / batch.length,
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
    log(`ingesting ${versions.length} recorded mainnet versions, one run each`)
    const each = await timedIngest(
      'replay-aptos.mjs, recorded mainnet, one run and one partition per version',
      APTOS,
      replay.url,
      versions.map(v => [v, v]),
    )
    return [each, pass]
  } finally {
    replay.stop()
  }
}

interface Tally {
  transactions: number
  sender: string
  bySender: number
  byFunction: number
  bySenderAndFunction: number
}

/** Builds the query lake chunk by chunk (one partition at a time, so memory stays small), tallying what the queries should find. */
async function buildLake(store: ObjectStore, count: number, log: (line: string) => void): Promise<Tally> {
  const sender = sampleAccount(LAKE_SPEC, SENDER_INDEX)
  const tally: Tally = { transactions: 0, sender, bySender: 0, byFunction: 0, bySenderAndFunction: 0 }
  const span = DEFAULT_PARTITION_BLOCKS
  let held: SampleBlock[] = []
  let chunkStart = 0
  const flush = async (to: number) => {
    const source = moveSource(sampleNode(MOVEMENT.id, held), { chain: MOVEMENT, store })
    await runIngest({ chain: MOVEMENT, source, from: chunkStart, to, store })
    log(`lake: versions ${chunkStart}-${to} written`)
    chunkStart = to + 1
    // Keep the block holding the next chunk's first version's predecessor.
    held = held.filter(b => b.lastVersion >= to)
  }
  for (const block of sampleBlocks(LAKE_SPEC)) {
    held.push(block)
    for (const tx of block.transactions) {
      tally.transactions++
      if (tx.type !== 'user_transaction') continue
      const u = tx as RestUserTransaction
      const f = u.payload.type === 'entry_function_payload' ? u.payload.function : null
      if (u.sender === sender) tally.bySender++
      if (f === FUNCTION) tally.byFunction++
      if (u.sender === sender && f === FUNCTION) tally.bySenderAndFunction++
    }
    if (tally.transactions >= count) {
      await flush(block.lastVersion)
      break
    }
    if (block.lastVersion >= chunkStart + span - 1) await flush(chunkStart + span - 1)
  }
  return tally
}

async function lakeFor(dir: string, count: number, log: (line: string) => void): Promise<{ tally: Tally; buildMs: number | null }> {
  const tallyFile = join(dir, TALLY)
  if (existsSync(tallyFile)) {
    const tally = JSON.parse(await readFile(tallyFile, 'utf8')) as Tally
    if (tally.transactions >= count) return { tally, buildMs: null }
    await rm(dir, { recursive: true, force: true })
  }
  await mkdir(dir, { recursive: true })
  log(`building a lake of ${count} transactions in ${dir} (signing takes a few minutes)`)
  const started = performance.now()
  const tally = await buildLake(fsStore(dir), count, log)
  await writeFile(tallyFile, JSON.stringify(tally))
  return { tally, buildMs: performance.now() - started }
}

function predicate(name: string, text: string): Predicate {
  const field = moveTransactions.fields.find(f => f.name === name)!
  return { field, op: 'eq', values: [KINDS[field.kind].parse(text)] }
}

async function measure(
  store: ObjectStore,
  name: string,
  filter: Record<string, string>,
  expectedRows: number,
  runs: number,
): Promise<QueryFigures> {
  const spec: QuerySpec = {
    chain: MOVEMENT,
    dataset: moveTransactions,
    from: 0,
    to: 'latest',
    predicates: Object.entries(filter).map(([k, v]) => predicate(k, v)),
    fields: moveTransactions.fields.filter(f => !f.extra),
  }
  const run = async (manifest: ManifestReader) => {
    const counting = countingStore(store)
    const t = performance.now()
    const result = await runQuery({ store: counting, manifest }, spec)
    let rows = 0
    for await (const b of result.batches) rows += b.length
    return { rows, ms: performance.now() - t, stats: result.stats, counts: { ...counting.counts } }
  }
  const cold = await run(new ManifestReader(store))
  const warmReader = new ManifestReader(store, { rootTtlMs: 3_600_000 })
  await run(warmReader)
  const times: number[] = []
  for (let i = 0; i < runs; i++) times.push((await run(warmReader)).ms)
  return {
    name,
    filter: new URLSearchParams(filter).toString(),
    rows: cold.rows,
    expectedRows,
    requests: cold.counts.requests,
    bytesFetched: cold.counts.bytesFetched,
    partitionsRead: `${cold.stats.partitionsRead}/${cold.stats.partitionsTotal}`,
    rowGroupsRead: `${cold.stats.rowGroupsRead}/${cold.stats.rowGroupsTotal}`,
    coldMs: cold.ms,
    warmMs: median(times),
  }
}

/** Runs every Move measurement. */
export async function benchMove(options: MoveBenchOptions): Promise<MoveBench> {
  const log = options.log ?? (() => {})
  const runs = options.runs ?? 5
  const recorded = await recordedIngest(options.replayScript, log)
  const dense = await denseIngest(options.replayScript, options.denseTransactions ?? 20_000, log)
  const ingest = [...recorded, dense]
  const { tally, buildMs } = await lakeFor(options.lakeDir, options.lakeTransactions ?? 200_000, log)
  const store = fsStore(options.lakeDir)
  const root = await new ManifestReader(store).root(MOVEMENT)
  const index = root?.datasets[moveTransactions.storage]
  if (!index) throw new Error(`no ${moveTransactions.storage} in ${options.lakeDir}`)
  const lake: LakeFigures = {
    dir: options.lakeDir,
    transactions: index.rows,
    partitions: index.shards.reduce((n, s) => n + s.partitions, 0),
    bytes: index.bytes,
    bytesPerTransaction: index.bytes / index.rows,
    buildMs,
  }
  log('querying')
  const queries = [
    await measure(store, 'by sender', { sender: tally.sender }, tally.bySender, runs),
    await measure(store, 'by function', { entry_function_id: FUNCTION }, tally.byFunction, runs),
    await measure(store, 'by sender and function', { sender: tally.sender, entry_function_id: FUNCTION }, tally.bySenderAndFunction, runs),
  ]
  for (const q of queries) if (q.rows !== q.expectedRows) throw new Error(`${q.name}: ${q.rows} rows, the generator made ${q.expectedRows}`)
  return { ingest, lake, queries }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Default: shared/ beside the project root, as in tests and `npm run bench`.
  const shared = fileURLToPath(new URL('../../../shared/tools/replay-aptos.mjs', import.meta.url))
  const [lakeDir = join(tmpdir(), 'move-bench-lake'), replayScript = shared] = process.argv.slice(2)
  const figures = await benchMove({ lakeDir, replayScript, log: line => console.error(`[move bench] ${line}`) })
  console.log(JSON.stringify(figures, null, 2))
}

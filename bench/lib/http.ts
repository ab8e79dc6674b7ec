/**
 * Query benchmark through the real HTTP path, for `npm run bench -- query`: the
 * ≥1M-log bench lake (bench/lib/lake.ts) served by the production bundle in
 * Miniflare (workerd, the output of `wrangler deploy --dry-run`, over a local R2
 * bucket seeded with the lake) and by the Node server (`scripts/serve.ts` over the
 * same directory, its own process), against DuckDB reading the same Parquet files,
 * all measured in one run with interleaved repetitions so the ratios share the
 * machine's noise. Exact object-store requests, bytes and sequential rounds come
 * from the same app served in this process over a counting store (response headers
 * only know the I/O done before the body starts).
 *
 * Queries: (a) a rare address and topic0 over the whole range, (b) one block,
 * (c) a full export as arrow, csv and json_stream; the everyday classes (contracts, events,
 * wallets as topics, address lists) and, on the lake's transactions, one by hash and one
 * wallet's as sender, all over the whole range. `values: 'alt'` (`BENCH_QUERY_VALUES=alt` in
 * `npm run bench -- query`) runs the same classes on other values the lake holds, picked by
 * DuckDB from its files (`altQueries`); `both` runs the planted and the other values.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { Agent, request } from 'node:http'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { parquetMetadata, parquetReadObjects, readOffsetIndex, type FileMetaData } from 'hyparquet'
import { CHAINS } from '../../src/chains/registry.ts'
import { logs, transactions } from '../../src/datasets/evm.ts'
import type { Format } from '../../src/format/encode.ts'
import { storedFields } from '../../src/parquet/write.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { ManifestReader, parseRoot } from '../../src/manifest/read.ts'
import { seedBucket, type SeedableBucket } from '../../scripts/dev/seed-r2.ts'
import { serve, type RunningServer } from '../../src/node/serve.ts'
import { benchLake, benchPools, lookupWriteCost, RARE, TRANSFER, TX_HASH, TX_WALLET, WALLET, type LookupWriteCost } from './lake.ts'
import { recordingStore, rounds, type ReadRecord } from '../../test/support/recording.ts'
import { columnOf, type FieldDecl } from '../../src/schema/dataset.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import { countingStore } from '../../src/store/counting.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { createApp } from '../../src/http/app.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { buildBundle, bundleMiniflare } from '../../scripts/dev/bundle.ts'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { serveArgs } from './serve-command.ts'
import { median } from '../report.ts'

/** Where a query is served from. */
export type ServerName = 'workerd' | 'node'

export interface HttpBenchOptions {
  /** Directory of the bench lake (built there when it holds no manifest). */
  dir: string
  /** The project root: where wrangler.toml and scripts/serve.ts are. */
  root: string
  /** Logs in the lake, at least (default 1,000,000). */
  logs?: number
  /** Timed runs per point query, median reported (default 7); exports take `exportRuns`. */
  runs?: number
  /** Timed runs per export format (default 3). */
  exportRuns?: number
  /** Latency added to every read in the run that counts sequential rounds (default 20 ms). */
  roundDelayMs?: number
  /** Servers measured (default both). */
  servers?: ServerName[]
  /** Only the queries whose names start with one of these (default all): a quick rerun of a few classes. */
  only?: readonly string[]
  /** The values the classes run on (default `planted`; see `ValueSet`). */
  values?: ValueSet
  /** Progress lines (default: none). */
  log?: (line: string) => void
}

/** Wall time of one server for one query. */
export interface ServedFigures {
  ms: number
  ttfbMs: number
  rowsPerSecond: number
  /** Response body bytes. */
  responseBytes: number
  /** X-Storage-Requests and X-Bytes-Fetched as the response headers report them. */
  headerRequests: number
  headerBytes: number
}

export interface HttpQueryFigures {
  name: string
  format: Format
  rows: number
  served: Partial<Record<ServerName, ServedFigures>>
  /** Exact I/O of the same request, counted at the store (manifest included): warm (manifest and partition tails cached, as in a warm isolate)... */
  requests: number
  bytesFetched: number
  /** ...and on a fresh server. */
  coldRequests: number
  coldBytes: number
  /** Sequential read rounds with a warm manifest cache (root and shard cached). */
  rounds: number
  /** Sequential read rounds on a fresh server (root and shard read first). */
  coldRounds: number
  duckdbMs: number
  duckdbRows: number
  /** What DuckDB ran (its equivalent of the response). */
  duckdbSql: string
}

export interface HttpBench {
  lake: { rows: number; from: number; to: number; files: number; bytes: number; lookupBytes: number }
  /** The transactions beside the logs: rows, partitions' bytes, their lookup copies' bytes (by `from`), and a copy's write cost. */
  transactions?: { rows: number; bytes: number; lookupBytes: number; lookupCost: LookupWriteCost }
  /** What Miniflare's local R2 charges per get and per MB (the workerd column pays it). */
  r2Cost?: { msPerRequest: number; msPerMB: number }
  /** What writing a lookup copy costs beside its partition. */
  lookupCost: LookupWriteCost
  /** Bytes of the manifest a whole-range query loads (root + logs shards). */
  manifestBytes: number
  /** Compressed bytes of the pages that hold (a)'s matching rows, every returned column (when (a) ran). */
  neededBytesA?: number
  bundleBytes?: number
  figures: HttpQueryFigures[]
}

const CHAIN = CHAINS.find(c => c.code === 'ETH')!
const USER = 'bench'
/** Pause before each timed run (see the timing loop). */
const SETTLE_MS = 300
/** The Authorization header of the bench's user. */
export const AUTH = `Basic ${btoa(`${USER}:${USER}`)}`
const DEFAULT_FIELDS = logs.fields.filter(f => !f.extra)
const hex = (b: Uint8Array) => bytesToHex(b).slice(2)

/** One benchmark query: the API's query string and DuckDB's equivalent. */
export interface BenchQuery {
  name: string
  format: Format
  /** Query string after `/v1/api/<dataset>?`. */
  query: string
  /** The endpoint (default logs; DuckDB's view of the same name). */
  dataset?: 'logs' | 'transactions'
  /** `rows`: stream DuckDB's result chunks; `copy`: COPY the result to a file in `format`. */
  duckdb: { sql: string; mode: 'rows' | 'copy' }
}

/**
 * A DuckDB SELECT list giving the same text as the API's JSON/CSV for `fields`:
 * 0x-hex for binary kinds and hex quantities, integers and booleans as they are,
 * the virtual `chain` as the chain id.
 */
export function duckdbTextColumns(fields: readonly FieldDecl[], chainId: number): string {
  return fields
    .map(f => {
      if (f.virtual) return `${chainId} AS ${f.name}`
      const c = columnOf(f)
      if (f.kind === 'u64hex' || f.kind === 'u256hex') return `printf('0x%x', ${c}) AS ${f.name}`
      if (['hash', 'address', 'address32', 'bytes', 'u256pad'].includes(f.kind)) return `'0x' || lower(hex(${c})) AS ${f.name}`
      return `${c} AS ${f.name}`
    })
    .join(', ')
}

/** DuckDB's `c = v` on a binary column: DuckDB 1.5 mis-filters `=` there with bloom filters; a closed range is correct and still prunes. */
const eqBytes = (c: string, v: Uint8Array) => `${c} >= from_hex('${hex(v)}') AND ${c} <= from_hex('${hex(v)}')`

/** The columns DuckDB selects for the API's default fields: of the logs, and of the transactions. */
const LOG_COLUMNS = storedFields(logs)
  .filter(f => DEFAULT_FIELDS.includes(f))
  .map(columnOf)
  .join(', ')
const TRANSACTION_COLUMNS = storedFields(transactions)
  .filter(f => !f.extra)
  .map(columnOf)
  .map(c => `"${c}"`)
  .join(', ')

/** A json_stream query of `dataset` (default logs) over `range` filtered by `api`, and DuckDB's twin filtered by `where`. */
function filtered(range: string, name: string, api: string, where: string, dataset?: 'transactions'): BenchQuery {
  const columns = dataset ? TRANSACTION_COLUMNS : LOG_COLUMNS
  return {
    name,
    format: 'json_stream',
    ...(dataset ? { dataset } : {}),
    query: `${range}&${api}&format=json_stream`,
    duckdb: { sql: `SELECT ${columns} FROM ${dataset ?? 'logs'} WHERE ${where}`, mode: 'rows' },
  }
}

/** The queries of the benchmark over a lake covering blocks `from`-`to`. */
export function benchQueries(from: number, to: number): BenchQuery[] {
  const range = `chains=ETH&from_block=${from}&to_block=${to}`
  const one = from + Math.floor((to - from) / 2)
  const text = duckdbTextColumns(DEFAULT_FIELDS, CHAIN.id)
  return [
    filtered(
      range,
      '(a) rare address + topic0',
      `address=${bytesToHex(RARE)}&topic0=${bytesToHex(TRANSFER)}`,
      `${eqBytes('address', RARE)} AND ${eqBytes('topic0', TRANSFER)}`,
    ),
    ...classQueries(range),
    ...transactionQueries(range),
    {
      name: '(b) one block',
      format: 'json_stream',
      query: `chains=ETH&from_block=${one}&to_block=${one}&format=json_stream`,
      duckdb: { sql: `SELECT ${LOG_COLUMNS} FROM logs WHERE block_number = ${one}`, mode: 'rows' },
    },
    {
      name: '100 blocks',
      format: 'json_stream',
      query: `chains=ETH&from_block=${one}&to_block=${one + 99}&format=json_stream`,
      duckdb: { sql: `SELECT ${LOG_COLUMNS} FROM logs WHERE block_number BETWEEN ${one} AND ${one + 99}`, mode: 'rows' },
    },
    {
      name: '(c) export arrow',
      format: 'arrow',
      query: `${range}&format=arrow`,
      duckdb: { sql: `SELECT ${LOG_COLUMNS} FROM logs`, mode: 'rows' },
    },
    { name: '(c) export csv', format: 'csv', query: `${range}&format=csv`, duckdb: { sql: `SELECT ${text} FROM logs`, mode: 'copy' } },
    {
      name: '(c) export json_stream',
      format: 'json_stream',
      query: `${range}&format=json_stream`,
      duckdb: { sql: `SELECT ${text} FROM logs`, mode: 'copy' },
    },
  ]
}

/**
 * The query classes users send every day, on values the lake holds: a warm and a hot
 * contract with Transfer, one event signature everywhere, a (planted) wallet as topic1
 * and as topic2, and 20 contracts in one `address__in`.
 */
function classQueries(range: string): BenchQuery[] {
  const { hot, warm, sigs } = benchPools()
  const q = (name: string, api: string, where: string) => filtered(range, name, api, where)
  const contracts = warm.slice(0, 20)
  const transfer = (address: Uint8Array) => `${eqBytes('address', address)} AND ${eqBytes('topic0', TRANSFER)}`
  return [
    q('warm contract + Transfer', `address=${bytesToHex(warm[0])}&topic0=${bytesToHex(TRANSFER)}`, transfer(warm[0])),
    q('hot contract + Transfer', `address=${bytesToHex(hot[0])}&topic0=${bytesToHex(TRANSFER)}`, transfer(hot[0])),
    q('one event everywhere (topic0)', `topic0=${bytesToHex(sigs[1])}`, eqBytes('topic0', sigs[1])),
    q('wallet as topic1', `topic1=${bytesToHex(WALLET)}`, eqBytes('topic1', WALLET)),
    q('wallet as topic2', `topic2=${bytesToHex(WALLET)}`, eqBytes('topic2', WALLET)),
    q(
      '20 contracts (address__in)',
      `address__in=${contracts.map(bytesToHex).join(',')}`,
      `(${contracts.map(c => eqBytes('address', c)).join(' OR ')})`,
    ),
  ]
}

/**
 * Which values the classes are run on: `planted` (default) the fixed ones above (the planted
 * needles, hot[0], warm[0..19], sigs[1], the middle block); `alt` other values of the same
 * classes, picked from the lake's own files by DuckDB (`altQueries`), so a class fast only for
 * its planted value shows; `both` the two sets, one after the other in the same run.
 */
export type ValueSet = 'planted' | 'alt' | 'both'

/** Reads `BENCH_QUERY_VALUES` (unset: `planted`); anything else is refused. */
export function valueSetOf(env: string | undefined): ValueSet {
  const v = env ?? 'planted'
  if (v === 'planted' || v === 'alt' || v === 'both') return v
  throw new Error(`BENCH_QUERY_VALUES must be planted, alt or both, not ${v}`)
}

/** Runs a SQL query over the lake's `logs` and `transactions` views; rows as plain objects. */
type Sql = (sql: string) => Promise<Record<string, unknown>[]>

const fromHex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'))

/**
 * The classes on other values than the planted ones (none of those is picked), each chosen
 * deterministically from the lake's files by DuckDB (ties broken by value) and named with what
 * it is and the rows it matches: the busiest hot contract (over 1 % of the logs) and the busiest
 * warm one (at most 0.1 %) with Transfer; a rare address (one log) with its topic0; Transfer,
 * the next most frequent signature, a mid one (nearest 500 logs) and the least frequent over all
 * history; the busiest topic1 and topic2 wallets (not planted: tens of rows, spread); 20
 * contracts mixing a hot one, 13 warm ones of every rank and 6 rare ones; the first and the last
 * transaction of the lake by hash; the busiest sender; the first and last block, and 100
 * blocks at each end.
 */
export async function altQueries(from: number, to: number, sql: Sql, withTransactions: boolean): Promise<BenchQuery[]> {
  const range = `chains=ETH&from_block=${from}&to_block=${to}`
  const q = (name: string, api: string, where: string) => filtered(range, `alt: ${name}`, api, where)
  const n = (x: unknown) => Number(x).toLocaleString('en')
  const th = (k: number) => `${k}${[11, 12, 13].includes(k % 100) ? 'th' : (['th', 'st', 'nd', 'rd'][k % 10] ?? 'th')}`
  // the values the planted classes use, left out of every pick
  const pools = benchPools()
  const planted = new Set([RARE, WALLET, TX_HASH, TX_WALLET, pools.hot[0], ...pools.warm.slice(0, 20), pools.sigs[1]].map(hex))
  type Ranked = { v: string; n: number; rank: number }
  const ranked = async (query: string): Promise<Ranked[]> =>
    (await sql(query)).map((r, i) => ({ v: r.v as string, n: Number(r.n), rank: i + 1 })).filter(r => !planted.has(r.v))
  const total = (await sql(`SELECT count(*)::INTEGER AS n FROM logs`))[0].n as number
  // every address by its count of logs, busiest first
  const addresses = await ranked(`SELECT lower(hex(address)) AS v, count(*)::INTEGER AS n FROM logs GROUP BY address ORDER BY n DESC, v`)
  const transfers = async (v: string) =>
    (await sql(`SELECT count(*)::INTEGER AS n FROM logs WHERE ${eqBytes('address', fromHex(v))} AND ${eqBytes('topic0', TRANSFER)}`))[0].n
  // hot: over 1 % of the logs; warm: more than one log and at most 0.1 %; rare: one log
  const hots = addresses.filter(a => a.n > total / 100)
  const warms = addresses.filter(a => a.n > 1 && a.n <= total / 1000)
  const singles = addresses.filter(a => a.n === 1)
  const [hot, warm] = [hots[0], warms[0]]
  // a rare address whose one log has a topic0 (the first such by value)
  const [rare] = (
    await sql(
      `SELECT lower(hex(address)) AS v, lower(hex(any_value(topic0))) AS t FROM logs GROUP BY address HAVING count(*) = 1 AND count(topic0) = 1 ORDER BY v LIMIT 2`,
    )
  ).filter(r => !planted.has(r.v as string))
  const sigs = await ranked(
    `SELECT lower(hex(topic0)) AS v, count(*)::INTEGER AS n FROM logs WHERE topic0 IS NOT NULL GROUP BY topic0 ORDER BY n DESC, v`,
  )
  const mid = [...sigs].sort((a, b) => Math.abs(a.n - 500) - Math.abs(b.n - 500))[0]
  const busiest = async (column: string) =>
    (
      await ranked(
        `SELECT lower(hex(${column})) AS v, count(*)::INTEGER AS n FROM logs WHERE ${column} IS NOT NULL GROUP BY ${column} ORDER BY n DESC, v LIMIT 2`,
      )
    )[0]
  const topic1 = await busiest('topic1')
  const topic2 = await busiest('topic2')
  // another hot contract, 13 warm ones spread over the warm ranks, and 6 rare ones besides the one above
  const listed = [hots[1] ?? hots[0], ...Array.from({ length: 13 }, (_, i) => warms[Math.floor((i * warms.length) / 13)])]
  const rares = singles.filter(a => a.v !== rare.v).slice(0, 6)
  const contracts = [...listed, ...rares].map(a => fromHex(a.v))
  const event = (label: string, s: Ranked) =>
    q(
      `one event everywhere: ${label}, the ${th(s.rank)} most frequent topic0 (${n(s.n)} logs)`,
      `topic0=0x${s.v}`,
      eqBytes('topic0', fromHex(s.v)),
    )
  const queries: BenchQuery[] = [
    q(
      `rare address + its topic0: an address of one log`,
      `address=0x${rare.v}&topic0=0x${rare.t}`,
      `${eqBytes('address', fromHex(rare.v as string))} AND ${eqBytes('topic0', fromHex(rare.t as string))}`,
    ),
    q(
      `warm contract + Transfer: the busiest warm address, ${th(warm.rank)} of all (${n(warm.n)} logs, ${n(await transfers(warm.v))} transfers)`,
      `address=0x${warm.v}&topic0=${bytesToHex(TRANSFER)}`,
      `${eqBytes('address', fromHex(warm.v))} AND ${eqBytes('topic0', TRANSFER)}`,
    ),
    q(
      `hot contract + Transfer: the ${th(hot.rank)} busiest address (${n(hot.n)} logs)`,
      `address=0x${hot.v}&topic0=${bytesToHex(TRANSFER)}`,
      `${eqBytes('address', fromHex(hot.v))} AND ${eqBytes('topic0', TRANSFER)}`,
    ),
    event('Transfer', sigs[0]),
    event('another', sigs[1]),
    event('mid (nearest 500 logs)', mid),
    event('the least frequent', sigs[sigs.length - 1]),
    q(
      `wallet as topic1: the busiest topic1 but the planted one (${n(topic1.n)} logs)`,
      `topic1=0x${topic1.v}`,
      eqBytes('topic1', fromHex(topic1.v)),
    ),
    q(
      `wallet as topic2: the busiest topic2 but the planted one (${n(topic2.n)} logs)`,
      `topic2=0x${topic2.v}`,
      eqBytes('topic2', fromHex(topic2.v)),
    ),
    q(
      `20 contracts: 1 hot, 13 warm, 6 rare (${n([...listed, ...rares].reduce((s, a) => s + a.n, 0))} logs)`,
      `address__in=${contracts.map(bytesToHex).join(',')}`,
      `(${contracts.map(c => eqBytes('address', c)).join(' OR ')})`,
    ),
  ]
  if (withTransactions) {
    const tq = (name: string, api: string, where: string) => filtered(range, `alt: ${name}`, api, where, 'transactions')
    const end = async (block: number, order: 'ASC' | 'DESC') =>
      (
        await sql(
          `SELECT lower(hex(hash)) AS v FROM transactions WHERE block_number = ${block} ORDER BY transaction_index ${order} LIMIT 1`,
        )
      )[0].v as string
    const first = await end(from, 'ASC')
    const last = await end(to, 'DESC')
    const [sender] = await ranked(
      `SELECT lower(hex("from")) AS v, count(*)::INTEGER AS n FROM transactions WHERE "from" IS NOT NULL GROUP BY "from" ORDER BY n DESC, v LIMIT 2`,
    )
    queries.push(
      tq('transaction by hash: the first of the lake', `hash=0x${first}`, eqBytes('hash', fromHex(first))),
      tq('transaction by hash: the last of the lake', `hash=0x${last}`, eqBytes('hash', fromHex(last))),
      tq(
        `one wallet's transactions (from): the busiest sender (${n(sender.n)} transactions)`,
        `from=0x${sender.v}`,
        eqBytes('"from"', fromHex(sender.v)),
      ),
    )
  }
  const blocks = (name: string, a: number, b: number): BenchQuery => ({
    name: `alt: ${name}`,
    format: 'json_stream',
    query: `chains=ETH&from_block=${a}&to_block=${b}&format=json_stream`,
    duckdb: { sql: `SELECT ${LOG_COLUMNS} FROM logs WHERE block_number BETWEEN ${a} AND ${b}`, mode: 'rows' },
  })
  queries.push(
    blocks('one block: the first', from, from),
    blocks('one block: the last', to, to),
    blocks('100 blocks: the first', from, from + 99),
    blocks('100 blocks: the last', to - 99, to),
  )
  return queries
}

/** Transactions over all history: one by hash, and one wallet's (as sender), with the API's default fields. */
function transactionQueries(range: string): BenchQuery[] {
  const q = (name: string, api: string, where: string) => filtered(range, name, api, where, 'transactions')
  return [
    q('transaction by hash', `hash=${bytesToHex(TX_HASH)}`, eqBytes('hash', TX_HASH)),
    q("one wallet's transactions (from)", `from=${bytesToHex(TX_WALLET)}`, eqBytes('"from"', TX_WALLET)),
  ]
}

/** Newline bytes in a chunk (rows of JSON lines; rows + header of CSV). */
export function countNewlines(chunk: Uint8Array): number {
  let n = 0
  for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++
  return n
}

/** Rows in an Arrow IPC stream. */
async function arrowRows(body: Uint8Array): Promise<number> {
  const { RecordBatchReader } = await import('apache-arrow')
  let rows = 0
  for (const batch of RecordBatchReader.from(body)) rows += batch.numRows
  return rows
}

interface Fetched {
  status: number
  ms: number
  ttfbMs: number
  bytes: number
  /** Newlines in the body, counted only when asked for (`lines` or `body`). */
  newlines: number
  headers: Record<string, string | string[] | undefined>
  body?: Uint8Array
}

/**
 * A GET over a plain socket (no decompression), draining the body; `lines` also counts its
 * lines, `body` counts them and returns the body (an error's body is returned with either).
 * A timed run only counts bytes, so the client costs the server's two cores as little as
 * `curl -o /dev/null` would.
 */
export function timedGet(url: string, agent: Agent, keep?: 'lines' | 'body'): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    request(url, { agent, headers: { authorization: AUTH } }, res => {
      const ttfbMs = performance.now() - start
      const kept = keep && res.statusCode !== 200 ? 'body' : keep
      let bytes = 0
      let newlines = 0
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => {
        bytes += c.length
        if (!kept) return
        newlines += countNewlines(c)
        if (kept === 'body') chunks.push(c)
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          ms: performance.now() - start,
          ttfbMs,
          bytes,
          newlines,
          headers: res.headers,
          ...(kept === 'body' ? { body: Buffer.concat(chunks) } : {}),
        }),
      )
      res.on('error', reject)
    })
      .on('error', reject)
      .end()
  })
}

/**
 * A timed GET by curl in its own process, the body thrown away: the client shares the
 * machine's two cores with the servers, and a client in this process (with DuckDB and
 * Miniflare's services in its heap) slowed a 282 MB export by up to 70 %. Times are
 * curl's own (`time_total`, `time_starttransfer`), not the process start.
 */
export function curlGet(
  url: string,
): Promise<{ status: number; ms: number; ttfbMs: number; bytes: number; headers: Record<string, string> }> {
  const args = [
    '-s',
    '-o',
    '/dev/null',
    '-D',
    '-',
    '-u',
    `${USER}:${USER}`,
    '-w',
    '\n%{http_code} %{time_starttransfer} %{time_total} %{size_download}',
    url,
  ]
  return new Promise((resolve, reject) => {
    const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.once('error', reject)
    child.once('exit', code => {
      if (code !== 0) return reject(new Error(`curl exited with ${code} for ${url}`))
      const lines = out.trimEnd().split('\n')
      const [status, ttfb, total, size] = lines[lines.length - 1].split(' ').map(Number)
      const headers: Record<string, string> = {}
      for (const line of lines.slice(1, -1)) {
        const at = line.indexOf(':')
        if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
      }
      resolve({ status, ms: total * 1000, ttfbMs: ttfb * 1000, bytes: size, headers })
    })
  })
}

/**
 * What a get costs in Miniflare's local R2, measured from inside a Worker: 100 gets of
 * 8 KiB issued at once (ms per get), and 10 gets of 1 MB (ms per MB once the per-get
 * cost is taken off). The medians of 5 runs.
 */
export async function miniflareR2Cost(): Promise<{ msPerRequest: number; msPerMB: number }> {
  const script = `export default { async fetch(request, env) {
    const u = new URL(request.url)
    const n = Number(u.searchParams.get('n'))
    const size = Number(u.searchParams.get('size'))
    const t = Date.now()
    await Promise.all(Array.from({ length: n }, (_, i) => env.B.get('o', { range: { offset: (i * 104729) % 60000000, length: size } }).then(o => o.arrayBuffer())))
    return new Response(String(Date.now() - t))
  } }`
  const mf = new Miniflare(convertV4MiniflareOptions({ modules: true, script, r2Buckets: ['B'] }))
  try {
    await (await mf.getR2Bucket('B')).put('o', new Uint8Array(64_000_000))
    const ms = async (n: number, size: number): Promise<number> => {
      const times: number[] = []
      for (let k = 0; k < 5; k++) times.push(Number(await (await mf.dispatchFetch(`http://probe/?n=${n}&size=${size}`)).text()))
      return median(times)
    }
    const msPerRequest = (await ms(100, 8192)) / 100
    const msPerMB = (await ms(10, 1_000_000)) / 10 - msPerRequest
    return { msPerRequest, msPerMB }
  } finally {
    await mf.dispose()
  }
}

/** Rows of a response in `format` (arrow decoded; text formats by newlines). */
/**
 * What `rowsOf` needs of an answer in `format`: formats of a row a line only their lines,
 * counted as they come, so text answers of up to 619 MB, twice a query, are not kept in this
 * process's heap, whose collection would share the cores with the timed runs.
 */
const rowsNeed = (format: Format): 'lines' | 'body' => (format === 'csv' || format === 'json_stream' ? 'lines' : 'body')

async function rowsOf(format: Format, got: Fetched): Promise<number> {
  if (format === 'arrow') return arrowRows(got.body!)
  if (format === 'csv') return got.newlines - 1
  if (format === 'json_stream') return got.newlines
  return (JSON.parse(new TextDecoder().decode(got.body!)) as unknown[]).length
}

interface Server {
  name: ServerName
  url: string
  stop(): Promise<void>
}

/** The bundle in Miniflare (workerd) over an R2 bucket holding a copy of `source`. */
async function startWorkerd(root: string, outdir: string, source: ObjectStore): Promise<Server> {
  // Quiet: the Worker's access-log lines would interleave with the bench's figures on stdout.
  const mf = await bundleMiniflare(root, outdir, { API_USERS: `${USER}:${USER}` }, { quiet: true })
  await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, source)
  const url = (await mf.ready).toString().replace(/\/$/, '')
  return { name: 'workerd', url, stop: () => mf.dispose() }
}

/** `scripts/serve.ts` over `dir`, in its own Node process, with `npm run serve`'s flags and the bench's user (`AUTH`). */
export async function startNode(root: string, dir: string): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, [...serveArgs(root), '--data', dir, '--port', '0'], {
    env: { ...process.env, API_USERS: `${USER}:${USER}` },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  // Lines after the first are read and dropped, so a full pipe never blocks the server.
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', code => reject(new Error(`scripts/serve.ts exited with ${code} before listening`)))
  })
  if (!first.startsWith('listening ')) throw new Error(`scripts/serve.ts did not start: ${first}`)
  return {
    name: 'node',
    url: first.slice('listening '.length),
    stop: () =>
      new Promise<void>(resolve => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill()
      }),
  }
}

/** The app in this process over `store` (for exact I/O counts). */
async function startCounted(store: ObjectStore): Promise<RunningServer> {
  const users = await parseUsers(`${USER}:${USER}`)
  const app = createApp({ store, manifest: new ManifestReader(store), users })
  return serve({ fetch: r => app.fetch(r) })
}

/** Exact requests and bytes of one request, and its sequential rounds, warm and cold. */
async function exactIo(
  dir: string,
  path: string,
  delayMs: number,
  agent: Agent,
): Promise<{ requests: number; bytes: number; coldRequests: number; coldBytes: number; rounds: number; coldRounds: number }> {
  const counting = countingStore(fsStore(dir))
  const counted = await startCounted(counting)
  const slow = recordingStore(fsStore(dir), delayMs)
  const delayed = await startCounted(slow.store)
  try {
    await timedGet(counted.url + path, agent)
    const cold = { ...counting.counts }
    counting.reset()
    await timedGet(counted.url + path, agent)
    const { requests, bytesFetched } = counting.counts
    await timedGet(delayed.url + path, agent)
    const coldReads = [...slow.reads]
    slow.reads.length = 0
    await timedGet(delayed.url + path, agent)
    const warm: ReadRecord[] = [...slow.reads]
    return {
      requests,
      bytes: bytesFetched,
      coldRequests: cold.requests,
      coldBytes: cold.bytesFetched,
      rounds: rounds(warm),
      coldRounds: rounds(coldReads),
    }
  } finally {
    await counted.close()
    await delayed.close()
  }
}

/** DuckDB over the lake's files: a runner per query (median of timed runs reported by the caller). */
async function duckdbRunner(
  files: string[],
  transactionFiles: string[],
): Promise<{ run(q: BenchQuery): Promise<{ ms: number; rows: number }>; sql: Sql; close(): Promise<void> }> {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' })
  const connection = await instance.connect()
  const view = (name: string, of: string[]) =>
    connection.run(`CREATE VIEW ${name} AS SELECT * FROM read_parquet([${of.map(f => `'${f}'`).join(', ')}])`)
  await view('logs', files)
  if (transactionFiles.length > 0) await view('transactions', transactionFiles)
  const out = await mkdtemp(join(tmpdir(), 'bench-duckdb-'))
  return {
    async run(q) {
      const t = performance.now()
      let rows = 0
      if (q.duckdb.mode === 'rows') {
        const result = await connection.stream(q.duckdb.sql)
        for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) rows += chunk.rowCount
      } else {
        const file = join(out, `out.${q.format}`)
        const options = q.format === 'csv' ? 'FORMAT csv, HEADER' : 'FORMAT json'
        const result = await connection.run(`COPY (${q.duckdb.sql}) TO '${file}' (${options})`)
        rows = Number(result.rowsChanged)
      }
      return { ms: performance.now() - t, rows }
    },
    async sql(sql) {
      return (await connection.runAndReadAll(sql)).getRowObjectsJS()
    },
    async close() {
      connection.closeSync()
      instance.closeSync()
      await rm(out, { recursive: true, force: true })
    },
  }
}

/**
 * Compressed bytes of the pages that hold the rows matching `address` and `topic0`,
 * summed over every stored column of `fields` (the offset index gives each page's
 * size; dictionary pages count where the column has one): the least a reader that
 * fetches whole pages could read for those rows.
 */
export async function matchingPageBytes(
  files: string[],
  fields: readonly FieldDecl[],
  address: Uint8Array,
  topic0: Uint8Array,
): Promise<number> {
  const columns = new Set(fields.filter(f => !f.virtual).map(columnOf))
  const same = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i])
  let total = 0
  for (const path of files) {
    const buf = await readFile(path)
    const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer
    const metadata: FileMetaData = parquetMetadata(file)
    const rows = await parquetReadObjects({ file, metadata, columns: ['address', 'topic0'], utf8: false })
    const hits: number[] = []
    rows.forEach((r, i) => {
      if (same(r.address, address) && same(r.topic0, topic0)) hits.push(i)
    })
    let groupStart = 0
    for (const rg of metadata.row_groups) {
      const n = Number(rg.num_rows)
      const inGroup = hits.filter(i => i >= groupStart && i < groupStart + n).map(i => i - groupStart)
      if (inGroup.length) {
        for (const chunk of rg.columns) {
          const m = chunk.meta_data!
          if (!columns.has(m.path_in_schema[0])) continue
          // A chunk of one page has no offset index: the whole chunk is that page.
          if (chunk.offset_index_offset === undefined) {
            total += Number(m.total_compressed_size)
            continue
          }
          // Dictionary-encoded pages need their chunk's dictionary page too.
          if (m.dictionary_page_offset !== undefined) total += Number(m.data_page_offset) - Number(m.dictionary_page_offset)
          const view = new DataView(file, Number(chunk.offset_index_offset), Number(chunk.offset_index_length))
          const pages = readOffsetIndex({ view, offset: 0 }).page_locations
          const used = new Set(inGroup.map(r => pages.findLastIndex(p => Number(p.first_row_index) <= r)))
          for (const p of used) total += pages[p].compressed_page_size
        }
      }
      groupStart += n
    }
  }
  return total
}

/** Bytes of the root and every logs shard of the lake's manifest. */
async function manifestBytes(store: ObjectStore): Promise<number> {
  const root = await store.get(rootKey(CHAIN))
  if (!root) throw new Error('the bench lake has no manifest')
  let bytes = root.body.length
  for (const s of parseRoot(root.body).datasets.logs.shards) bytes += (await store.head(s.key))!.size
  return bytes
}

/** Rows of the lake's transactions, from its root. */
async function transactionRows(store: ObjectStore): Promise<number | undefined> {
  const root = await store.get(rootKey(CHAIN))
  return root ? parseRoot(root.body).datasets.transactions?.rows : undefined
}

/** Builds or reuses the lake, starts the servers, measures every query; servers are stopped at the end. */
export async function benchHttp(options: HttpBenchOptions): Promise<HttpBench> {
  const log = options.log ?? (() => {})
  const runs = options.runs ?? 7
  const exportRuns = options.exportRuns ?? 3
  const delay = options.roundDelayMs ?? 20
  const names = options.servers ?? ['workerd', 'node']
  log(`lake: ${options.dir}`)
  const lake = await benchLake({ dir: options.dir, logs: options.logs })
  const store = fsStore(options.dir)
  let lakeBytes = 0
  for (const f of lake.files) lakeBytes += (await stat(f)).size
  let lookupBytes = 0
  let txBytes = 0
  let txLookupBytes = 0
  for (const o of await store.list('')) {
    if (o.key.includes(`/${logs.storage}/by-`)) lookupBytes += o.size
    else if (o.key.includes(`/${transactions.storage}/by-`)) txLookupBytes += o.size
    else if (o.key.includes(`/${transactions.storage}/`) && o.key.endsWith('.parquet')) txBytes += o.size
  }

  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const servers: Server[] = []
  let bundle: Awaited<ReturnType<typeof buildBundle>> | undefined
  const duck = await duckdbRunner(lake.files, lake.transactionFiles)
  try {
    const values = options.values ?? 'planted'
    const queries = [
      ...(values === 'alt' ? [] : benchQueries(lake.from, lake.to)),
      ...(values === 'planted' ? [] : await altQueries(lake.from, lake.to, duck.sql, lake.transactionFiles.length > 0)),
    ].filter(q => !options.only || options.only.some(name => q.name.startsWith(name)))
    if (names.includes('workerd')) {
      log('building the bundle (wrangler deploy --dry-run) and seeding Miniflare R2')
      bundle = await buildBundle(options.root)
      servers.push(await startWorkerd(options.root, bundle.outdir, store))
    }
    if (names.includes('node')) servers.push(await startNode(options.root, options.dir))
    const figures: HttpQueryFigures[] = []
    for (const q of queries) {
      log(`${q.name}: ${q.query}`)
      const path = `/v1/api/${q.dataset ?? 'logs'}?${q.query}`
      let rows = -1
      for (const s of servers) {
        const warm = await timedGet(s.url + path, agent, rowsNeed(q.format))
        if (warm.status !== 200)
          throw new Error(`${s.name} answered ${warm.status} to ${path}: ${new TextDecoder().decode(warm.body!).slice(0, 300)}`)
        const n = await rowsOf(q.format, warm)
        if (rows >= 0 && n !== rows) throw new Error(`${q.name}: ${s.name} returned ${n} rows, another server ${rows}`)
        rows = n
      }
      if (rows <= 0) throw new Error(`${q.name} returned no rows: the lake does not hold what the benchmark expects`)
      const first = await duck.run(q)
      const times: Record<string, number[]> = { duckdb: [] }
      const last: Partial<Record<ServerName, Awaited<ReturnType<typeof curlGet>>>> = {}
      const ttfb: Record<string, number[]> = {}
      const count = q.name.startsWith('(c)') ? exportRuns : runs
      for (let i = 0; i < count; i++) {
        // Rotated order and a pause before each run: the previous run's garbage collection or
        // teardown in another process (workerd, DuckDB's threads) must not land on this one.
        for (const s of [...servers.slice(i % servers.length), ...servers.slice(0, i % servers.length)]) {
          await new Promise(resolve => setTimeout(resolve, SETTLE_MS))
          const got = await curlGet(s.url + path)
          if (got.status !== 200) throw new Error(`${s.name} answered ${got.status} to ${path}`)
          ;(times[s.name] ??= []).push(got.ms)
          ;(ttfb[s.name] ??= []).push(got.ttfbMs)
          last[s.name] = got
        }
        await new Promise(resolve => setTimeout(resolve, SETTLE_MS))
        times.duckdb.push((await duck.run(q)).ms)
      }
      const io = await exactIo(options.dir, path, delay, agent)
      const served: Partial<Record<ServerName, ServedFigures>> = {}
      for (const s of servers) {
        const ms = median(times[s.name])
        const got = last[s.name]!
        served[s.name] = {
          ms,
          ttfbMs: median(ttfb[s.name]),
          rowsPerSecond: rows / (ms / 1000),
          responseBytes: got.bytes,
          headerRequests: Number(got.headers['x-storage-requests']),
          headerBytes: Number(got.headers['x-bytes-fetched']),
        }
      }
      figures.push({
        name: q.name,
        format: q.format,
        rows,
        served,
        requests: io.requests,
        bytesFetched: io.bytes,
        coldRequests: io.coldRequests,
        coldBytes: io.coldBytes,
        rounds: io.rounds,
        coldRounds: io.coldRounds,
        duckdbMs: median(times.duckdb),
        duckdbRows: first.rows,
        duckdbSql: q.duckdb.sql,
      })
    }
    const a = queries.some(q => q.name.startsWith('(a)'))
    if (a) log("computing the pages that hold (a)'s rows")
    return {
      lake: { rows: lake.rows, from: lake.from, to: lake.to, files: lake.files.length, bytes: lakeBytes, lookupBytes },
      ...(names.includes('workerd') ? { r2Cost: await miniflareR2Cost() } : {}),
      lookupCost: await lookupWriteCost(lake.files[0]),
      ...(lake.transactionFiles.length > 0
        ? {
            transactions: {
              rows: (await transactionRows(store)) ?? 0,
              bytes: txBytes,
              lookupBytes: txLookupBytes,
              lookupCost: await lookupWriteCost(lake.transactionFiles[0], transactions),
            },
          }
        : {}),
      manifestBytes: await manifestBytes(store),
      ...(a ? { neededBytesA: await matchingPageBytes(lake.files, DEFAULT_FIELDS, RARE, TRANSFER) } : {}),
      ...(bundle ? { bundleBytes: bundle.bytes } : {}),
      figures,
    }
  } finally {
    for (const s of servers) await s.stop()
    await duck.close()
    agent.destroy()
    if (bundle) await rm(bundle.outdir, { recursive: true, force: true })
  }
}

/**
 * `npm run bench -- history`: the full-history shape. A lake of 2,500 logs partitions (what
 * Ethereum's ~25 M blocks are at 10,000 blocks a partition; here 10 blocks × 40 logs each, 10
 * partitions per manifest shard as at full scale), with transactions (~8 a block) and blocks
 * over the same blocks, every read delayed by a fixed latency and at most 6 in flight (a
 * Worker's connection limit). The selective query classes through `runQuery`,
 * cold and warm, with the value index and without it (the per-partition path): object reads,
 * sequential rounds, bytes and time. Needles active for a week (as real contracts and wallets
 * are) and needles spread uniformly over all history (the worst case for any index: every
 * partition holding one is opened).
 */
import { lakeDir } from './cache.ts'
import {
  benchLake,
  OLD_BLOCK_HASH,
  OLD_TX_HASH,
  RARE,
  RECENT_CONTRACT,
  RECENT_TX_WALLET,
  RECENT_WALLET,
  TRANSFER,
  TX_HASH,
  TX_RECIPIENT,
  TX_WALLET,
  WALLET,
} from './lib/lake.ts'
import { bytes, int, ms, table, target } from './report.ts'
import type { Section } from './section.ts'
import { blocks, logs, transactions } from '../src/datasets/evm.ts'
import { IndexCache } from '../src/index/read.ts'
import { ManifestReader, parseRoot } from '../src/manifest/read.ts'
import { rootKey } from '../src/manifest/keys.ts'
import { runQuery } from '../src/query/engine.ts'
import { TailCache } from '../src/query/io.ts'
import type { Predicate, QuerySpec } from '../src/query/types.ts'
import type { DatasetDecl } from '../src/schema/dataset.ts'
import { fsStore } from '../src/store/fs.ts'
import type { ObjectStore } from '../src/store/types.ts'
import { semaphore } from '../src/ingest/rpc.ts'
import { recordingStore, rounds } from '../test/support/recording.ts'
import { ETH } from '../test/support/chains.ts'

const PARTITIONS = 2_500
const BLOCKS = 10
const PER_BLOCK = 40
const LATENCY_MS = 30
const CONNECTIONS = 6
/** Transactions a block: ~80 a partition, 200,000 in all (mainnet's 150 would be 3.75 M, a build of hours with every hash inline). */
const TX_PER_BLOCK = 8

/**
 * Values the lake holds beyond the planted needles, picked by DuckDB over its files
 * (deterministic): the busiest wallet as topic1, the contracts of 65–256 and of 257–1,024
 * logs spread over the most partitions (the values between a needle and a hot contract), and
 * the 20 contracts of at most 64 logs spread over the most partitions, in one `address__in`.
 */
async function otherValues(dir: string, partitionBlocks: number): Promise<{ name: string; column: string; values: Uint8Array[] }[]> {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' })
  const connection = await instance.connect()
  const files = `read_parquet('${dir}/evm-1/logs/*.parquet')`
  const pick = async (column: string, having: string, order: string) => {
    const sql =
      `SELECT hex(${column}) AS h, count(*) AS n, count(DISTINCT block_number // ${partitionBlocks}) AS p FROM ${files} ` +
      `WHERE ${column} IS NOT NULL GROUP BY 1 HAVING ${having} ORDER BY ${order}, h LIMIT 1`
    const [row] = (await connection.runAndReadAll(sql)).getRowObjectsJS() as { h: string; n: bigint; p: bigint }[]
    return { value: Uint8Array.from(Buffer.from(row.h, 'hex')), logs: Number(row.n), partitions: Number(row.p) }
  }
  try {
    const spread = (
      (
        await connection.runAndReadAll(
          `SELECT hex(address) AS h, count(*) AS n FROM ${files} GROUP BY 1 HAVING count(*) <= 64 ` +
            `ORDER BY count(DISTINCT block_number // ${partitionBlocks}) DESC, h LIMIT 20`,
        )
      ).getRowObjectsJS() as { h: string; n: bigint }[]
    ).map(r => ({ value: Uint8Array.from(Buffer.from(r.h, 'hex')), logs: Number(r.n) }))
    const wallet = await pick('topic1', 'true', 'n DESC')
    const mid = await pick('address', 'count(*) BETWEEN 65 AND 256', 'p DESC')
    const busy = await pick('address', 'count(*) BETWEEN 257 AND 1024', 'p DESC')
    return [
      {
        name: `other: the busiest wallet as topic1 (${wallet.logs} logs in ${wallet.partitions} partitions)`,
        column: 'topic1',
        values: [wallet.value],
      },
      { name: `other: a contract of ${mid.logs} logs in ${mid.partitions} partitions`, column: 'address', values: [mid.value] },
      { name: `other: a contract of ${busy.logs} logs in ${busy.partitions} partitions`, column: 'address', values: [busy.value] },
      {
        name: `other: 20 contracts in address__in, all present (those of ≤ 64 logs in the most partitions: ${spread.reduce((n, c) => n + c.logs, 0)} logs)`,
        column: 'address',
        values: spread.map(c => c.value),
      },
    ]
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/** At most `n` reads in flight, the rest queued (a Worker's simultaneous connections). */
function limited(store: ObjectStore, n: number): ObjectStore {
  const slot = semaphore(n)
  return { ...store, get: (key, range) => slot(() => store.get(key, range)) }
}

const field = (name: string, dataset: DatasetDecl = logs) => dataset.fields.find(f => f.name === name)!
const eq = (name: string, value: Uint8Array, dataset: DatasetDecl = logs): Predicate => ({
  field: field(name, dataset),
  op: 'eq',
  values: [value],
})

interface Figures {
  rows: number
  /** Rows read from the index's inline rows. */
  inline: number
  reads: number
  rounds: number
  bytes: number
  ms: number
  partitions: number
}

export const history: Section = {
  name: 'history',
  title: `full-history shape: ${int(PARTITIONS)} partitions, ${LATENCY_MS} ms a read, ${CONNECTIONS} connections; selective classes cold and warm, with and without the value index`,
  slow: true,
  async run(ctx) {
    const dir = lakeDir(ctx.root, ctx.cache, PARTITIONS * BLOCKS * PER_BLOCK, 'history')
    ctx.log(`history: lake of ${PARTITIONS} partitions in ${dir} (built once)`)
    const started = performance.now()
    const lake = await benchLake({
      dir,
      logs: PARTITIONS * BLOCKS * PER_BLOCK,
      logsPerBlock: PER_BLOCK,
      partitionBlocks: BLOCKS,
      shardSpan: BLOCKS * 10,
      clustered: true,
      transactionsPerBlock: TX_PER_BLOCK,
      blocks: true,
    })
    ctx.log(`history: lake ready in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    const over = (dataset: DatasetDecl) => ({ chain: ETH, dataset, fields: [...dataset.fields], from: lake.from, to: lake.to })
    const base = over(logs)
    const txs = over(transactions)
    const absent = (i: number) => Uint8Array.from({ length: 20 }, (_, j) => (j === 0 ? 0xee : (i * 7 + j) & 0xff))
    const classes: { name: string; spec: QuerySpec }[] = [
      {
        name: 'contract active for a week + Transfer',
        spec: { ...base, predicates: [eq('address', RECENT_CONTRACT), eq('topic0', TRANSFER)] },
      },
      { name: 'wallet active for a week as topic1', spec: { ...base, predicates: [eq('topic1', RECENT_WALLET)] } },
      { name: 'rare contract + Transfer', spec: { ...base, predicates: [eq('address', RARE), eq('topic0', TRANSFER)] } },
      { name: 'rare contract', spec: { ...base, predicates: [eq('address', RARE)] } },
      { name: 'wallet as topic1', spec: { ...base, predicates: [eq('topic1', WALLET)] } },
      { name: 'wallet as topic2', spec: { ...base, predicates: [eq('topic2', WALLET)] } },
      {
        name: '20 contracts in address__in (1 present)',
        spec: {
          ...base,
          predicates: [{ field: field('address'), op: 'in', values: [RARE, ...Array.from({ length: 19 }, (_, i) => absent(i))] }],
        },
      },
      { name: 'transaction by hash, 5 % in', spec: { ...txs, predicates: [eq('hash', OLD_TX_HASH, transactions)] } },
      { name: 'transaction by hash, mid-lake', spec: { ...txs, predicates: [eq('hash', TX_HASH, transactions)] } },
      { name: 'wallet active for a week as from', spec: { ...txs, predicates: [eq('from', RECENT_TX_WALLET, transactions)] } },
      { name: 'wallet as from', spec: { ...txs, predicates: [eq('from', TX_WALLET, transactions)] } },
      { name: 'wallet as to', spec: { ...txs, predicates: [eq('to', TX_RECIPIENT, transactions)] } },
      { name: 'block by hash, 5 % in', spec: { ...over(blocks), predicates: [eq('hash', OLD_BLOCK_HASH, blocks)] } },
      ...(await otherValues(dir, BLOCKS)).map(o => ({
        name: o.name,
        spec: {
          ...base,
          predicates: [o.values.length === 1 ? eq(o.column, o.values[0]) : { field: field(o.column), op: 'in' as const, values: o.values }],
        },
      })),
    ]
    const fs = fsStore(dir)
    const rowsOut: (string | number)[][] = []
    const verdicts: string[] = []
    for (const c of classes) {
      for (const noIndex of [false, true]) {
        const manifest = new ManifestReader(fs)
        const index = new IndexCache()
        const tails = new TailCache()
        const once = async (): Promise<Figures> => {
          const rec = recordingStore(fs, LATENCY_MS)
          const store = limited(rec.store, CONNECTIONS)
          const t = performance.now()
          const result = await runQuery({ store, manifest, scan: { tails }, index, noIndex }, c.spec)
          let rows = 0
          for await (const b of result.batches) rows += b.length
          return {
            rows,
            inline: result.index?.rows ?? 0,
            reads: rec.reads.length,
            rounds: rounds(rec.reads),
            bytes: result.stats.bytesFetched,
            ms: performance.now() - t,
            partitions: result.stats.partitionsRead,
          }
        }
        const cold = await once()
        const warm = await once()
        rowsOut.push([
          c.name,
          noIndex ? 'per partition' : 'index',
          int(cold.rows),
          `${int(cold.reads)} / ${int(warm.reads)}`,
          `${cold.rounds} / ${warm.rounds}`,
          `${bytes(cold.bytes)} / ${bytes(warm.bytes)}`,
          `${ms(cold.ms)} / ${ms(warm.ms)}`,
          int(cold.partitions),
          int(cold.inline),
        ])
        if (!noIndex)
          verdicts.push(
            target(
              cold.reads <= 20 && cold.rounds <= 6 && warm.rounds <= 3,
              `${c.name}: ${cold.reads} reads and ${cold.rounds} rounds cold, ${warm.rounds} warm (targets ≤ 20, ≤ 6, ≤ 3)`,
            ),
          )
      }
    }
    const root = parseRoot((await fs.get(rootKey(ETH)))!.body)
    const indexLine = (storage: string) => {
      const ds = root.datasets[storage]
      const segments = ds.index?.segments ?? []
      const columns = segments.flatMap(s => Object.values(s.columns))
      const postings = columns.reduce((n, c) => n + c.bytes, 0)
      const inline = columns.reduce((n, c) => n + (c.rows?.bytes ?? 0), 0)
      const packs = columns.reduce((n, c) => n + (c.pack ?? 0), 0)
      return (
        `${storage}: ${int(ds.rows)} rows in ${int(PARTITIONS)} partitions (${bytes(ds.bytes)} of Parquet); index: ${segments.length} segments, ` +
        `${bytes(postings)} of buckets (and ${bytes(packs)} of packs), ${bytes(inline)} of inline rows ` +
        `(per million rows: ${bytes((postings * 1e6) / ds.rows)} and ${bytes((inline * 1e6) / ds.rows)}; inline rows ${((100 * inline) / ds.bytes).toFixed(0)} % of the Parquet).`
      )
    }
    return [
      ...[logs, transactions, blocks].map(d => indexLine(d.storage)),
      `lake: ${int(PARTITIONS)} partitions of ${BLOCKS} blocks a dataset (${PER_BLOCK} logs and ~${TX_PER_BLOCK} transactions a block), blocks ${lake.from}-${lake.to}; every read +${LATENCY_MS} ms, ${CONNECTIONS} at once. Cold: new manifest, tail and index caches; warm: the same query again with them.`,
      '',
      table(
        [
          'class',
          'path',
          'rows',
          'reads cold / warm',
          'rounds cold / warm',
          'bytes cold / warm',
          'ms cold / warm',
          'partitions opened',
          'rows from the index',
        ],
        rowsOut,
      ),
      '',
      ...verdicts,
    ].join('\n')
  },
}

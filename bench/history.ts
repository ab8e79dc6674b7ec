/**
 * `npm run bench -- history`: the full-history shape. A lake of 2,500 logs partitions (what
 * Ethereum's ~25 M blocks are at 10,000 blocks a partition; here 10 blocks × 40 logs each, 10
 * partitions per manifest shard as at full scale), every read delayed by a fixed latency and at
 * most 6 in flight (a Worker's connection limit). The selective query classes through `runQuery`,
 * cold and warm, with the value index and without it (the per-partition path): object reads,
 * sequential rounds, bytes and time. Needles active for a week (as real contracts and wallets
 * are) and needles spread uniformly over all history (the worst case for any index: every
 * partition holding one is opened).
 */
import { lakeDir } from './cache.ts'
import { benchLake, RARE, RECENT_CONTRACT, RECENT_WALLET, TRANSFER, WALLET } from './lib/lake.ts'
import { bytes, int, ms, table, target } from './report.ts'
import type { Section } from './section.ts'
import { logs } from '../src/datasets/evm.ts'
import { IndexCache } from '../src/index/read.ts'
import { ManifestReader, parseRoot } from '../src/manifest/read.ts'
import { rootKey } from '../src/manifest/keys.ts'
import { runQuery } from '../src/query/engine.ts'
import { TailCache } from '../src/query/io.ts'
import type { Predicate, QuerySpec } from '../src/query/types.ts'
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

/** At most `n` reads in flight, the rest queued (a Worker's simultaneous connections). */
function limited(store: ObjectStore, n: number): ObjectStore {
  const slot = semaphore(n)
  return { ...store, get: (key, range) => slot(() => store.get(key, range)) }
}

const field = (name: string) => logs.fields.find(f => f.name === name)!
const eq = (name: string, value: Uint8Array): Predicate => ({ field: field(name), op: 'eq', values: [value] })

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
      transactions: false,
    })
    ctx.log(`history: lake ready in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    const base = { chain: ETH, dataset: logs, fields: [...logs.fields], from: lake.from, to: lake.to }
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
    const segments = root.datasets.logs.index?.segments ?? []
    const columns = segments.flatMap(s => Object.values(s.columns))
    const postings = columns.reduce((n, c) => n + c.bytes, 0)
    const inline = columns.reduce((n, c) => n + (c.rows?.bytes ?? 0), 0)
    const parquet = root.datasets.logs.bytes
    return [
      `lake: ${int(lake.rows)} logs in ${int(PARTITIONS)} partitions (${bytes(parquet)} of Parquet); index: ${segments.length} segments, ` +
        `${bytes(postings)} of buckets, ${bytes(inline)} of inline rows ` +
        `(per million logs: ${bytes((postings * 1e6) / lake.rows)} and ${bytes((inline * 1e6) / lake.rows)}; inline rows ${((100 * inline) / parquet).toFixed(0)} % of the Parquet).`,
      `lake: ${int(lake.rows)} logs in ${int(PARTITIONS)} partitions of ${BLOCKS} blocks, blocks ${lake.from}-${lake.to}; every read +${LATENCY_MS} ms, ${CONNECTIONS} at once. Cold: new manifest, tail and index caches; warm: the same query again with them.`,
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

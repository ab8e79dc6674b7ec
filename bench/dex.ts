/**
 * `npm run bench -- dex`: the DEX datasets on ≥1 M synthetic swaps. Blocks of real-shaped
 * logs (the registry's own ABI items, encoded with viem) on the devnet's registered v2 and
 * v3 factories, so every pool verifies by CREATE2: v2 swaps with their Sync, v3 swaps, and
 * unrelated ERC-20 transfers between them. Measures decoding at ingest (scan → decode →
 * column batches) in rows/s, Parquet writing of dex/swaps, and three queries over the
 * resulting lake — one pool's swaps, the swaps touching one token, one wallet's swaps — each
 * against DuckDB computing the same answer from the raw `logs` partitions of the same blocks
 * (the way a user without this service would: swap topics, the pools of a token from their
 * creation events, the wallet as the Swap's recipient topic), repetitions interleaved.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeAbiParameters, encodeEventTopics, erc20Abi, pad, toEventSelector, type Hex } from 'viem'
import { findChain } from '../src/chains/registry.ts'
import { dexSwaps } from '../src/datasets/dex.ts'
import { logs } from '../src/datasets/evm.ts'
import { BatchBuilder } from '../src/ingest/batch.ts'
import { logRow } from '../src/ingest/transform.ts'
import type { DexLog } from '../src/dex/decode.ts'
import { FACTORIES, poolAddress } from '../src/dex/factories.ts'
import { V2_PAIR_CREATED, V2_SWAP, V2_SYNC, V3_POOL_CREATED, V3_SWAP } from '../src/dex/protocols.ts'
import { decodeUnit, mergeScans, rpcPoolResolver, scanStep } from '../src/ingest/dex.ts'
import type { RawBlock } from '../src/ingest/evm-json.ts'
import { publishIndexed } from '../src/index/publish.ts'
import { nodeScan } from '../src/node/server.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import type { ChainRef, PartitionEntry } from '../src/manifest/types.ts'
import { putPartition } from '../src/parquet/put.ts'
import { runQuery } from '../src/query/engine.ts'
import { KINDS } from '../src/schema/kinds.ts'
import { fsStore } from '../src/store/fs.ts'
import type { ObjectStore } from '../src/store/types.ts'
import { mulberry32 } from '../scripts/dev/random.ts'
import { int, median, ms, ratio, table } from './report.ts'
import type { Section } from './section.ts'

/** DEX_BENCH_SCALE (default 1) divides the sizes, for a quick run. */
const SCALE = Number(process.env.DEX_BENCH_SCALE ?? 1)
const SWAPS = 1_000_000 / SCALE
const BLOCKS = 10_000 / SCALE
const PARTITION = 1_000 / SCALE
const POOLS = 200
const WALLETS = 5_000

const hex = (n: number | bigint) => `0x${n.toString(16)}` as Hex
const addr = (i: number, tag: number) => `0x${tag.toString(16).padStart(8, '0')}${i.toString(16).padStart(32, '0')}` as Hex

interface Pool {
  address: Hex
  family: 'v2' | 'v3'
  token0: Hex
  token1: Hex
  fee: bigint | null
}

/** Pools of the devnet's registered factories, half v2 and half v3, over 50 tokens. */
function makePools(): Pool[] {
  const [v2, v3] = FACTORIES[31337]
  const pools: Pool[] = []
  for (let i = 0; i < POOLS; i++) {
    const a = addr(i % 50, 0x70c3)
    const b = addr((i * 7 + 1) % 50 === i % 50 ? (i + 1) % 50 : (i * 7 + 1) % 50, 0x70c3)
    const [token0, token1] = a < b ? [a, b] : [b, a]
    const v = i % 2 === 0
    const fee = v ? null : [500n, 3000n, 10000n][i % 3]
    const address = poolAddress(v ? v2 : v3, { token0, token1, fee })!
    pools.push({ address, family: v ? 'v2' : 'v3', token0, token1, fee })
  }
  return pools
}

/** The creation events of a family's pools, as one transaction of the deployer to its factory. */
function creationTransaction(
  pools: readonly Pool[],
  family: 'v2' | 'v3',
  n: number,
  logs: DexLog[],
  transactions: { hash: Hex; from: Hex; to: Hex }[],
) {
  const factory = FACTORIES[31337].find(f => f.protocol === (family === 'v2' ? 'uniswap_v2' : 'uniswap_v3'))!.factory
  const t = transactions.length
  const hash = `0x${n.toString(16).padStart(32, '0')}${t.toString(16).padStart(32, '0')}` as Hex
  transactions.push({ hash, from: addr(0, 0xde91), to: factory })
  for (const [i, p] of pools.filter(p => p.family === family).entries()) {
    const { token0, token1 } = p
    const [topics, data] =
      family === 'v2'
        ? [
            encodeEventTopics({ abi: [V2_PAIR_CREATED], args: { token0, token1 } }),
            encodeAbiParameters(V2_PAIR_CREATED.inputs.slice(2), [p.address, BigInt(i + 1)]),
          ]
        : [
            encodeEventTopics({ abi: [V3_POOL_CREATED], args: { token0, token1, fee: Number(p.fee) } }),
            encodeAbiParameters(V3_POOL_CREATED.inputs.slice(3), [TICK_SPACING[String(p.fee)], p.address]),
          ]
    logs.push({
      address: factory,
      topics: topics as Hex[],
      data,
      logIndex: hex(logs.length),
      transactionIndex: hex(t),
      transactionHash: hash,
    })
  }
}

const TICK_SPACING: Record<string, number> = { '500': 10, '3000': 60, '10000': 200 }

/** Blocks `from`..`to` of the synthetic chain, as the ingester holds them (RawBlock: block + receipts); made per unit, as ingest fetches them. */
function makeBlocks(pools: readonly Pool[], r: () => number, from: number, to: number): RawBlock[] {
  const perBlock = SWAPS / BLOCKS
  const raws: RawBlock[] = []
  for (let n = from; n <= to; n++) {
    const logs: DexLog[] = []
    const transactions: { hash: Hex; from: Hex; to: Hex }[] = []
    // Block 1 opens with the pools' creation, one transaction per factory: the token → pools map a raw-logs user needs.
    if (n === 1) for (const family of ['v2', 'v3'] as const) creationTransaction(pools, family, n, logs, transactions)
    const first = transactions.length
    for (let t = first; t < first + perBlock; t++) {
      const pool = pools[Math.floor(r() * r() * POOLS)]
      const wallet = addr(Math.floor(r() * WALLETS), 0xa11e)
      const hash = `0x${n.toString(16).padStart(32, '0')}${t.toString(16).padStart(32, '0')}` as Hex
      transactions.push({ hash, from: wallet, to: addr(1, 0x2027) })
      const at = { transactionIndex: hex(t), transactionHash: hash }
      const push = (address: Hex, topics: Hex[], data: Hex) => logs.push({ address, topics, data, logIndex: hex(logs.length), ...at })
      const amountIn = BigInt(Math.floor(r() * 1e12)) * 1_000_000n
      const amountOut = (amountIn * 997n) / 1000n
      push(
        pool.token0,
        [...encodeEventTopics({ abi: erc20Abi, eventName: 'Transfer', args: { from: wallet, to: pool.address } })] as Hex[],
        encodeAbiParameters([{ type: 'uint256' }], [amountIn]),
      )
      if (pool.family === 'v2') {
        push(
          pool.address,
          encodeEventTopics({ abi: [V2_SYNC] }) as Hex[],
          encodeAbiParameters(V2_SYNC.inputs, [10n ** 24n + amountIn, 10n ** 24n - amountOut]),
        )
        push(
          pool.address,
          encodeEventTopics({ abi: [V2_SWAP], args: { sender: addr(1, 0x2027), to: wallet } }) as Hex[],
          encodeAbiParameters(
            V2_SWAP.inputs.filter(i => !i.indexed),
            [amountIn, 0n, 0n, amountOut],
          ),
        )
      } else {
        push(
          pool.address,
          encodeEventTopics({ abi: [V3_SWAP], args: { sender: addr(1, 0x2027), recipient: wallet } }) as Hex[],
          encodeAbiParameters(
            V3_SWAP.inputs.filter(i => !i.indexed),
            [amountIn, -amountOut, 79228162514264337593543950336n + amountIn, 10n ** 20n, -5],
          ),
        )
      }
    }
    const block = { number: hex(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: hex(1_700_000_000 + 12 * n), transactions }
    raws.push({ block, receipts: [{ logs }] } as unknown as RawBlock)
  }
  return raws
}

const SWAP_TOPICS = [toEventSelector(V2_SWAP), toEventSelector(V3_SWAP)]
/** Timed repetitions of each query, ours and DuckDB's interleaved (DEX_BENCH_RUNS, default 5), after one warm-up each. */
const RUNS = Number(process.env.DEX_BENCH_RUNS ?? 5)

/**
 * DuckDB 1.5 mis-filters `=` on binary columns that have bloom filters (BENCHMARKS.md): a closed
 * range on the same value is correct and still prunes by statistics.
 */
const binEq = (column: string, value: Hex) => `(${column} >= from_hex('${value.slice(2)}') AND ${column} <= from_hex('${value.slice(2)}'))`
const isSwap = (column: string) => `(${SWAP_TOPICS.map(t => binEq(column, t)).join(' OR ')})`
/** The columns a raw-logs user reads to decode a swap. */
const SWAP_COLUMNS = 'block_number, log_index, transaction_hash, address, topic1, topic2, data'
/** The same information decoded: what a `fields=` request asks for to get what DuckDB's answer holds (v2's four amounts, v3's five values). */
const SWAP_FIELDS = [
  'block_number',
  'log_index',
  'transaction_hash',
  'pool',
  'sender',
  'recipient',
  'amount0_in',
  'amount1_in',
  'amount0_out',
  'amount1_out',
  'amount0',
  'amount1',
  'sqrt_price_x96',
  'liquidity',
  'tick',
]

/** The bench lake: dex/swaps and the raw logs of the same blocks, published unit by unit with the value index. */
interface Lake {
  rows: number
  decodeMs: number
  writeMs: number
  entries: PartitionEntry[]
  logEntries: PartitionEntry[]
}

async function buildLake(
  store: ObjectStore,
  ref: ChainRef,
  pools: readonly Pool[],
  r: () => number,
  log: (line: string) => void,
): Promise<Lake> {
  // The pools are known (as a cache filled by earlier units would know them): decoding, not calls, is measured.
  const known = new Map(pools.map(p => [p.address, { token0: p.token0, token1: p.token1, fee: p.fee }]))
  const resolver = rpcPoolResolver(null, null, { family: 'evm', id: 31337 })
  await resolver.add(known)
  let decodeMs = 0
  let writeMs = 0
  let rows = 0
  const entries: PartitionEntry[] = []
  const logEntries: PartitionEntry[] = []
  for (let from = 1; from <= BLOCKS; from += PARTITION) {
    const unit = makeBlocks(pools, r, from, from + PARTITION - 1)
    let t = performance.now()
    const scan = mergeScans(31337, [scanStep(31337, unit)])
    const scanMs = performance.now() - t
    const { batches } = await decodeUnit(scan, resolver, async () => new Map())
    decodeMs += performance.now() - t
    log(`scan ${ms(scanMs)} ms, decode ${ms(performance.now() - t - scanMs)} ms`)
    rows += batches[dexSwaps.storage].length
    t = performance.now()
    const swaps = batches[dexSwaps.storage]
    const { entry } = await putPartition(store, ref, dexSwaps, swaps, { from, to: from + PARTITION - 1 })
    writeMs += performance.now() - t
    entries.push(entry)
    // The raw logs of the same blocks, as the ingester stores them: what DuckDB reads.
    const raw = new BatchBuilder(logs)
    for (const { block, receipts } of unit) for (const l of receipts[0].logs) raw.push(logRow(block, l))
    const rawBatch = raw.finish()
    const logEntry = (await putPartition(store, ref, logs, rawBatch, { from, to: from + PARTITION - 1 })).entry
    logEntries.push(logEntry)
    // Published unit by unit with the value index, as the ingester publishes.
    await publishIndexed(store, ref, [
      { dataset: dexSwaps, partitions: [{ entry, batch: swaps }] },
      { dataset: logs, partitions: [{ entry: logEntry, batch: rawBatch }] },
    ])
    log(`blocks ${from}-${from + PARTITION - 1}: ${int(rows)} swaps`)
  }
  return { rows, decodeMs, writeMs, entries, logEntries }
}

export const dex: Section = {
  name: 'dex',
  title: 'DEX datasets: decode rate at ingest, Parquet writing, queries over ≥1 M swaps vs DuckDB on the raw logs',
  slow: true,
  async run({ log }) {
    const pools = makePools()
    log(`${int(SWAPS)} swaps in ${int(BLOCKS)} blocks over ${POOLS} pools`)
    const r = mulberry32(7)

    // DEX_BENCH_LAKE=<dir> keeps the lake there and reuses it on the next run (for profiling the queries).
    const kept = process.env.DEX_BENCH_LAKE
    const dir = kept ?? (await mkdtemp(join(tmpdir(), 'bench-dex-')))
    try {
      const store = fsStore(dir)
      const chain = findChain('evm', '31337')!
      const saved = join(dir, 'bench-lake.json')
      const lake: Lake =
        kept && existsSync(saved)
          ? JSON.parse(await readFile(saved, 'utf8'))
          : await buildLake(store, { family: 'evm', id: 31337, code: chain.code }, pools, r, log)
      if (kept) await writeFile(saved, JSON.stringify(lake))
      const { rows, decodeMs, writeMs, entries, logEntries } = lake
      const lakeBytes = entries.reduce((n, e) => n + e.bytes, 0)
      const copyBytes = entries.reduce((n, e) => n + (e.lookup?.bytes ?? 0), 0)
      const logsBytes = logEntries.reduce((n, e) => n + e.bytes, 0)
      const logRows = logEntries.reduce((n, e) => n + e.rows, 0)

      const manifest = new ManifestReader(store)
      // What the value index of dex/swaps holds, per column: postings (buckets) and inline rows.
      const segments =
        (await manifest.root({ family: 'evm', id: 31337, code: chain.code }))?.datasets[dexSwaps.storage]?.index?.segments ?? []
      const indexColumns = Object.keys(segments[0]?.columns ?? {}).map(column => {
        const sum = (f: (c: (typeof segments)[number]['columns'][string]) => number) =>
          segments.reduce((n, d) => n + f(d.columns[column]), 0)
        return [column, sum(c => c.bytes), sum(c => c.rows?.bytes ?? 0)] as const
      })
      // What the Node server reads with: its decompressors and tail cache.
      const scan = await nodeScan()
      const field = (name: string) => dexSwaps.fields.find(f => f.name === name)!
      const eq = (name: string, value: Hex) => ({ field: field(name), op: 'eq' as const, values: [KINDS.address.parse(value)] })
      const hot = pools[0]
      const token = hot.token0
      const wallet = addr(42, 0xa11e)
      const other = addr(3_210, 0xa11e)
      const word = (a: Hex) => pad(a, { size: 32 })
      const [v2, v3] = FACTORIES[31337]
      const queries = [
        {
          name: "one pool's swaps",
          filter: `pool=${hot.address}`,
          ours: [[eq('pool', hot.address)]],
          sql: `SELECT ${SWAP_COLUMNS} FROM logs WHERE ${binEq('address', hot.address)} AND ${isSwap('topic0')}`,
        },
        {
          name: 'swaps touching one token',
          filter: `token0=${token}, then token1=${token}`,
          ours: [[eq('token0', token)], [eq('token1', token)]],
          // Its pools from their creation events (v2 pair: data bytes 12-31; v3 pool: 44-63, as hex), then their swaps.
          sql: `WITH created AS (
              SELECT address, topic0, data FROM logs
              WHERE (${binEq('topic1', word(token))} OR ${binEq('topic2', word(token))})
                AND ((${binEq('address', v2.factory)} AND ${binEq('topic0', toEventSelector(V2_PAIR_CREATED))})
                  OR (${binEq('address', v3.factory)} AND ${binEq('topic0', toEventSelector(V3_POOL_CREATED))}))
            ), its_pools AS (
              SELECT CASE WHEN hex(topic0) = '${toEventSelector(V2_PAIR_CREATED).slice(2).toUpperCase()}' THEN substr(hex(data), 25, 40) ELSE substr(hex(data), 89, 40) END AS pool FROM created
            )
            SELECT ${SWAP_COLUMNS} FROM logs WHERE hex(address) IN (SELECT pool FROM its_pools) AND ${isSwap('topic0')}`,
        },
        // The Swap's recipient (v2 \`to\`, v3 \`recipient\`) is its second indexed topic.
        ...[wallet, other].map((w, i) => ({
          name: i === 0 ? "one wallet's swaps" : "another wallet's swaps",
          filter: `taker=${w}`,
          ours: [[eq('taker', w)]],
          sql: `SELECT ${SWAP_COLUMNS} FROM logs WHERE ${binEq('topic2', word(w))} AND ${isSwap('topic0')}`,
        })),
      ]

      const { DuckDBInstance } = await import('@duckdb/node-api')
      const instance = await DuckDBInstance.create(':memory:', { threads: '2' })
      const duck = await instance.connect()
      const files = logEntries.map(e => join(dir, ...e.key.split('/')))
      await duck.run(`CREATE VIEW logs AS SELECT * FROM read_parquet([${files.map(f => `'${f}'`).join(', ')}])`)
      const runDuck = async (sql: string) => {
        const result = await duck.stream(sql)
        let n = 0
        for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) n += chunk.rowCount
        return n
      }
      const defaultFields = dexSwaps.fields.filter(f => !f.extra)
      const projected = SWAP_FIELDS.map(field)
      const runOurs = async (predicateSets: (typeof queries)[number]['ours'], fields: typeof defaultFields) => {
        let n = 0
        let rowGroups = 0
        let fetched = 0
        let indexRows = 0
        for (const predicates of predicateSets) {
          const res = await runQuery({ store, manifest, scan }, { chain, dataset: dexSwaps, from: 1, to: BLOCKS, predicates, fields })
          for await (const b of res.batches) n += b.length
          rowGroups += res.stats.rowGroupsRead
          fetched += res.stats.bytesFetched
          indexRows += res.index?.rows ?? 0
        }
        return { n, rowGroups, fetched, indexRows }
      }
      const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
        const t = performance.now()
        const out = await f()
        return [out, performance.now() - t]
      }
      const results: (string | number)[][] = []
      try {
        for (const q of queries) {
          // Ours with the default columns, ours with `fields=` what DuckDB returns, and DuckDB's:
          // a warm-up each (file handles, manifest, DuckDB's metadata cache), then interleaved timed runs.
          const variants = [() => runOurs(q.ours, defaultFields), () => runOurs(q.ours, projected)]
          const firsts: Awaited<ReturnType<typeof runOurs>>[] = []
          for (const v of variants) firsts.push((await timed(v))[0])
          const duckRows = await runDuck(q.sql)
          const times: number[][] = [[], [], []]
          for (let i = 0; i < RUNS; i++) {
            const order = [0, 1, 2].map(k => (k + i) % 3)
            for (const k of order) times[k].push((await timed<unknown>(() => (k < 2 ? variants[k]() : runDuck(q.sql))))[1])
          }
          const d = median(times[2])
          variants.forEach((_, k) => {
            const o = median(times[k])
            const first = firsts[k]
            log(`${q.name} (${k === 0 ? 'default columns' : 'fields='}): ours ${ms(o)} ms, DuckDB ${ms(d)} ms`)
            results.push([
              q.name,
              `\`${q.filter}\``,
              k === 0 ? 'default' : `\`fields=\` (${SWAP_FIELDS.length})`,
              int(first.n) + (duckRows === first.n ? '' : ` (DuckDB ${int(duckRows)}!)`),
              first.rowGroups,
              int(first.indexRows),
              int(first.fetched),
              ms(o),
              ms(d),
              ratio(o, d),
            ])
          })
        }
      } finally {
        duck.closeSync()
        instance.closeSync()
      }
      return [
        table(
          [
            'swaps',
            'blocks',
            'decode ms',
            'decoded rows/s',
            'write ms',
            'written rows/s',
            'dex/swaps bytes',
            'B/swap',
            'by-pool copy bytes',
            'copy B/swap',
          ],
          [
            [
              int(rows),
              int(BLOCKS),
              ms(decodeMs),
              int((rows / decodeMs) * 1000),
              ms(writeMs),
              int((rows / writeMs) * 1000),
              int(lakeBytes),
              (lakeBytes / rows).toFixed(1),
              int(copyBytes),
              (copyBytes / rows).toFixed(1),
            ],
          ],
        ),
        '',
        table(
          [
            'query',
            'ours: filter',
            'ours: columns',
            'rows',
            'row groups read',
            'rows from the index',
            'bytes fetched',
            'ours ms',
            'DuckDB ms',
            'ours / DuckDB',
          ],
          results,
        ),
        '',
        table(
          [
            'dex/swaps index column',
            'segments (row groups)',
            'postings bytes',
            'inline rows bytes',
            'inline B/swap',
            'inline / swaps Parquet',
          ],
          indexColumns.map(([column, postings, inlined]) => [
            `\`${column}\``,
            segments.map(d => d.rowGroups).join(' + '),
            int(postings),
            int(inlined),
            (inlined / rows).toFixed(1),
            ratio(inlined, lakeBytes),
          ]),
        ),
        '',
        `Decoding covers scanning every log (a transfer and, for v2, a Sync per swap), CREATE2 verification, price text and column batches; pools are known to the resolver, as after their creation. ` +
          `DuckDB (2 threads) reads the raw \`logs\` partitions of the same blocks (${int(logRows)} logs, ${int(logsBytes)} bytes) and returns the swap logs' undecoded columns (${SWAP_COLUMNS}); ours returns every default dex/swaps column, decoded, or with \`fields=\` the same information as DuckDB's, decoded. ` +
          `Medians of ${RUNS} interleaved runs after a warm-up; the token query is two requests for us (token0, then token1). ` +
          `The lake is published unit by unit with the value index, and dex/swaps has its lookup copy by pool (the "by-pool copy" bytes, beside the partitions' own).`,
      ].join('\n')
    } finally {
      if (!kept) await rm(dir, { recursive: true, force: true })
    }
  },
}

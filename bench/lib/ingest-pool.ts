/**
 * The worker-pool rows of `npm run bench -- ingest`, run in a process of their own so that it
 * has the Node flags `npm run ingest` gives the ingester (`ingestNodeFlags`): the pool writing
 * every dataset and without the DEX datasets, interleaved, over the recorded mainnet blocks
 * repeated. `node [flags] bench/lib/ingest-pool.ts '<PoolRun JSON>'` prints its rows and the
 * flags it ran with as JSON (`PoolRows`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEX_DATASETS, dexTokens } from '../../src/datasets/dex.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { unitPool, type UnitPool } from '../../src/ingest/pool.ts'
import type { ChainRef } from '../../src/manifest/types.ts'
import { fsStore } from '../../src/store/fs.ts'
import { benchUnitRate, withNodeCpu, type PoolRows, type RateRow } from './ingest.ts'

/** What the bench asks of this process. */
export interface PoolRun {
  url: string
  nodePid: number
  chain: ChainRef
  blocks: number[]
  rounds: number
  blocksPerUnit: number
  repetitions: number
  /** Blocks in a unit of the chain's default partition: one more pool, every dataset, two units a thread. */
  partitionBlocks: number
}

const run = JSON.parse(process.argv[2]) as PoolRun
const dir = await mkdtemp(join(tmpdir(), 'bench-ingest-pool-'))
const store = fsStore(dir)
const workers = availableParallelism()
const everyStorage = [...EVM_DATASETS, ...DEX_DATASETS, dexTokens].map(d => d.storage)
const pool = (dex: boolean, repeat: number) =>
  unitPool({
    chain: run.chain,
    rpcUrl: run.url,
    workers,
    dex,
    workerUrl: new URL('./ingest-worker.ts', import.meta.url),
    extra: { repeat },
  })
const pools = [true, false].map(dex => ({
  name: `after: ${workers} worker threads, ${dex ? 'every dataset (DEX decoded and written)' : 'without the DEX datasets'}`,
  storages: dex ? everyStorage : EVM_DATASETS.map(d => d.storage),
  pool: pool(dex, run.blocksPerUnit),
  runs: [] as RateRow[],
}))
const bigName = `${workers} worker threads, every dataset, units of the chain's default partition (${run.partitionBlocks} blocks)`
let big: UnitPool | undefined
try {
  const shape = { blocksPerUnit: run.blocksPerUnit, store }
  for (const p of pools) {
    // the threads warm up
    await benchUnitRate(p.pool, run.blocks.slice(0, 1), { ...shape, rounds: 1, concurrency: p.pool.capacity, storages: p.storages })
  }
  const rounds = Math.max(1, Math.round(run.rounds / run.repetitions))
  for (let i = 0; i < run.repetitions; i++) {
    for (const p of pools) {
      console.error(`${p.name}: repetition ${i + 1} of ${run.repetitions}, ${rounds * run.blocksPerUnit * run.blocks.length} blocks`)
      p.runs.push(
        await withNodeCpu(run.nodePid, () =>
          benchUnitRate(p.pool, run.blocks, { ...shape, rounds, concurrency: p.pool.capacity, storages: p.storages }),
        ),
      )
    }
  }
  // Started once the other pools are idle; two units a thread, as many at once as it builds, so its memory is a run's.
  await Promise.all(pools.map(p => p.pool.close()))
  const bigPool = (big = pool(true, run.partitionBlocks))
  const bigBlocks = Array.from({ length: 2 * bigPool.capacity }, (_, i) => run.blocks[i % run.blocks.length])
  console.error(`${bigName}: ${bigBlocks.length * run.partitionBlocks} blocks`)
  const bigRun = await withNodeCpu(run.nodePid, () =>
    benchUnitRate(bigPool, bigBlocks, {
      blocksPerUnit: run.partitionBlocks,
      store,
      rounds: 1,
      concurrency: bigPool.capacity,
      storages: everyStorage,
    }),
  )
  const out: PoolRows = {
    execArgv: process.execArgv,
    rows: [...pools.map((p): [string, RateRow[]] => [p.name, p.runs]), [bigName, [bigRun]]],
  }
  console.log(JSON.stringify(out))
} finally {
  await Promise.all([...pools.map(p => p.pool.close()), big?.close()])
  await rm(dir, { recursive: true, force: true })
}

/**
 * `npm run bench -- ingest`: the EVM ingester's rate and storage size, from a live
 * anvil devnet running the deterministic Uniswap workload and from recorded mainnet
 * blocks served by shared/tools/replay-evm.mjs: blocks/s, rows/s, and per dataset the
 * Parquet bytes per row against the same rows as JSON-RPC JSON (bench/lib/ingest.ts).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { startAnvil } from '../scripts/dev/devnet/anvil.ts'
import { runWorkload } from '../scripts/dev/devnet/workload.ts'
import { mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import {
  benchIngest,
  benchUnitRate,
  ingestNodeFlags,
  poolRows,
  repeatSource,
  withNodeCpu,
  type IngestBench,
  type RateRow,
} from './lib/ingest.ts'
import type { PoolRun } from './lib/ingest-pool.ts'
import { evmSource } from '../src/ingest/evm-source.ts'
import { jsKeccak256, wasmKeccak256 } from '../src/ingest/keccak.ts'
import { nodeHttpFetch } from '../src/ingest/http-fetch.ts'
import { wasmXxhash64 } from '../src/parquet/bloom.ts'
import { DEX_DATASETS, dexTokens } from '../src/datasets/dex.ts'
import { EVM_DATASETS } from '../src/datasets/evm.ts'
import { createRpcClient } from '../src/ingest/rpc.ts'
import { localBuilder } from '../src/ingest/unit.ts'
import { findChain } from '../src/chains/registry.ts'
import { partitionBlocksOf } from '../src/ingest/run.ts'
import type { ChainRef } from '../src/manifest/types.ts'
import { fsStore } from '../src/store/fs.ts'
import type { BlockRange } from '../src/manifest/types.ts'
import { bytes, int, median, ms, table } from './report.ts'
import type { BenchContext, Section } from './section.ts'

/** Activity rounds of the devnet workload (about 2 blocks and 35 logs each; past ~290 rounds its swaps start to revert). */
const ROUNDS = 250
/** Recorded mainnet blocks that have full transactions and receipts. */
const MAINNET_BLOCKS = [17000000, 18000000, 18500000]
/** Repetitions of the (3-block) mainnet ingest; the median rate is reported. */
const MAINNET_RUNS = 5

/** History-scale rate: units per recorded block, and copies of the block per unit (so partitions of that many blocks). */
const RATE_ROUNDS = Number(process.env.BENCH_INGEST_ROUNDS ?? 4)
const RATE_BLOCKS_PER_UNIT = 25
const ETH: ChainRef = { family: 'evm', id: 1, code: 'ETH' }
/** Blocks in a partition, hence in a unit, as `npm run ingest` writes Ethereum by default. */
const ETH_PARTITION_BLOCKS = partitionBlocksOf(findChain('evm', 'ETH')!)

/** shared/ beside the project root, or SHARED_DIR. */
const sharedDir = (root: string) => process.env.SHARED_DIR ?? join(root, '..', 'shared')

async function fromAnvil(ctx: BenchContext): Promise<IngestBench & { workloadMs: number }> {
  const anvil = await startAnvil()
  try {
    ctx.log(`anvil at ${anvil.url}: running the devnet workload (${ROUNDS} rounds)`)
    const t = performance.now()
    const report = await runWorkload(anvil.url, { rounds: ROUNDS })
    const workloadMs = performance.now() - t
    ctx.log(`ingesting blocks 0-${report.toBlock} from anvil`)
    return { ...(await benchIngest(anvil.url, [0, report.toBlock])), workloadMs }
  } finally {
    await anvil.stop()
  }
}

async function startReplayNode(tool: string): Promise<{ url: string; pid: number; stop(): void }> {
  const child = spawn(process.execPath, [tool], { stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', line => resolve(line.replace(/^listening /, '')))
    child.once('exit', code => reject(new Error(`replay-evm.mjs exited with ${code}`)))
  })
  return { url, pid: child.pid!, stop: () => child.kill() }
}

async function fromReplay(ctx: BenchContext, url: string): Promise<{ runs: IngestBench[] }> {
  ctx.log(`replay node at ${url}: ingesting blocks ${MAINNET_BLOCKS.join(', ')} ${MAINNET_RUNS} times`)
  const ranges = MAINNET_BLOCKS.map((n): BlockRange => [n, n])
  const runs: IngestBench[] = []
  for (let i = 0; i < MAINNET_RUNS; i++) runs.push(await benchIngest(url, ranges))
  return { runs }
}

/** The rate figures of several runs of one pipeline as one (interleaved repetitions). */
function summed(runs: RateRow[]): RateRow {
  const blocks = runs.reduce((n, r) => n + r.blocks, 0)
  const elapsedMs = runs.reduce((n, r) => n + r.elapsedMs, 0)
  const per = (f: (r: RateRow) => number) => runs.reduce((n, r) => n + f(r) * r.blocks, 0) / blocks
  return {
    blocks,
    elapsedMs,
    blocksPerSecond: (blocks / elapsedMs) * 1000,
    cpuMsPerBlock: per(r => r.cpuMsPerBlock),
    nodeCpuMsPerBlock: per(r => r.nodeCpuMsPerBlock),
    peakRssMiB: Math.max(...runs.map(r => r.peakRssMiB)),
  }
}

/** Every dataset the EVM source writes. */
const ALL_STORAGES = [...EVM_DATASETS, ...DEX_DATASETS, dexTokens].map(d => d.storage)

/** Repetitions of the worker-pool pair (all datasets, then without DEX), alternating. */
const POOL_REPETITIONS = 2

/**
 * Blocks/s of the ingest pipeline on the recorded mainnet blocks repeated, every
 * dataset written unless the row says otherwise: in this
 * thread as the code ran before worker threads (JavaScript keccak), with the
 * WebAssembly keccak over fetch and the writer's bloom hashing (the pipeline before
 * the node:http transport and xxhash-wasm), with both, and with the worker pool (one
 * thread per core) writing every dataset and without the DEX datasets, those two
 * interleaved in one run, in a process with the ingester's Node flags (lib/ingest-pool.ts).
 */
async function historyRate(ctx: BenchContext, url: string, nodePid: number): Promise<{ rates: [string, RateRow][]; poolFlags: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-ingest-rate-'))
  const store = fsStore(dir)
  const shape = { rounds: RATE_ROUNDS, blocksPerUnit: RATE_BLOCKS_PER_UNIT, store }
  const total = RATE_ROUNDS * RATE_BLOCKS_PER_UNIT * MAINNET_BLOCKS.length
  const out: [string, RateRow][] = []
  try {
    const wasm = await wasmKeccak256()
    for (const [name, keccak, fast] of [
      ['before: one thread, JavaScript keccak', jsKeccak256, false],
      ['one thread, WebAssembly keccak, fetch, BigInt bloom hash', wasm, false],
      ['one thread, WebAssembly keccak, node:http, xxhash-wasm bloom hash', wasm, true],
    ] as const) {
      ctx.log(`${name}: ${total} blocks`)
      const rpc = createRpcClient(url, { concurrency: 4, ...(fast ? { fetch: nodeHttpFetch() } : {}) })
      const source = repeatSource(evmSource(rpc, { keccak, chain: { family: 'evm', id: ETH.id } }), RATE_BLOCKS_PER_UNIT)
      const builder = localBuilder(source, ETH, fast ? { bloomHash: await wasmXxhash64() } : {})
      out.push([
        name,
        await withNodeCpu(nodePid, () => benchUnitRate(builder, MAINNET_BLOCKS, { ...shape, concurrency: 2, storages: ALL_STORAGES })),
      ])
    }
    const flags = ingestNodeFlags(ctx.root)
    ctx.log(`the pools, in a process with the ingester's flags (${flags.join(' ') || 'none'})`)
    const run: PoolRun = {
      url,
      nodePid,
      chain: ETH,
      blocks: MAINNET_BLOCKS,
      rounds: RATE_ROUNDS,
      blocksPerUnit: RATE_BLOCKS_PER_UNIT,
      repetitions: POOL_REPETITIONS,
      partitionBlocks: ETH_PARTITION_BLOCKS,
    }
    const pools = await poolRows(flags, run, ctx.log)
    for (const [name, runs] of pools.rows) out.push([name, summed(runs)])
    // the flags as the pools' process reports them, not as asked
    return { rates: out, poolFlags: pools.execArgv }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function datasetsTable(b: IngestBench): string {
  return table(
    ['dataset', 'rows', 'Parquet bytes', 'Parquet B/row', 'JSON-RPC B/row', 'Parquet / JSON'],
    Object.entries(b.datasets).map(([name, d]) => [
      name,
      int(d.rows),
      bytes(d.parquetBytes),
      d.parquetBytesPerRow.toFixed(1),
      d.jsonBytesPerRow.toFixed(1),
      `${(d.ratio * 100).toFixed(1)} %`,
    ]),
  )
}

const rowsOf = (b: IngestBench) => Object.values(b.datasets).reduce((n, d) => n + d.rows, 0)

export const ingest: Section = {
  name: 'ingest',
  title: 'EVM ingest rate and Parquet size per row against JSON-RPC JSON, from anvil and from recorded mainnet',
  slow: false,
  async run(ctx) {
    const out: string[] = []
    const anvil = await fromAnvil(ctx)
    out.push(
      `### From anvil (devnet workload, ${ROUNDS} rounds: ${int(anvil.blocks)} blocks, ${int(rowsOf(anvil))} rows; workload took ${ms(anvil.workloadMs)} ms)`,
      '',
      table(
        ['blocks', 'ms', 'blocks/s', 'rows/s', 'JSON-RPC bytes read'],
        [[int(anvil.blocks), ms(anvil.elapsedMs), int(anvil.blocksPerSecond), int(anvil.rowsPerSecond), bytes(anvil.rpcBytes)]],
      ),
      '',
      datasetsTable(anvil),
    )
    const tool = join(sharedDir(ctx.root), 'tools', 'replay-evm.mjs')
    if (!existsSync(tool)) {
      out.push('', `### From recorded mainnet: skipped, ${tool} not found (set SHARED_DIR)`)
      return out.join('\n')
    }
    const node = await startReplayNode(tool)
    try {
      const { runs } = await fromReplay(ctx, node.url)
      const m = runs[0]
      out.push(
        '',
        `### From recorded mainnet (replay-evm.mjs: blocks ${MAINNET_BLOCKS.join(', ')}, one partition each; median of ${MAINNET_RUNS} ingests)`,
        '',
        table(
          ['blocks', 'ms', 'blocks/s', 'rows/s', 'JSON-RPC bytes read'],
          [
            [
              int(m.blocks),
              ms(median(runs.map(r => r.elapsedMs))),
              median(runs.map(r => r.blocksPerSecond)).toFixed(1),
              int(median(runs.map(r => r.rowsPerSecond))),
              bytes(m.rpcBytes),
            ],
          ],
        ),
        '',
        datasetsTable(m),
      )
      const { rates, poolFlags } = await historyRate(ctx, node.url, node.pid)
      const [before] = rates
      const after = rates[rates.length - 3]
      const withoutDex = rates[rates.length - 2]
      const big = rates[rates.length - 1]
      out.push(
        '',
        `### History-scale rate (recorded mainnet blocks ${MAINNET_BLOCKS.join(', ')}, each fetched, verified (every hash and root) and transformed ${RATE_ROUNDS * RATE_BLOCKS_PER_UNIT} times, in partitions of ${RATE_BLOCKS_PER_UNIT} blocks of every dataset (the three EVM ones and the DEX ones) encoded and stored unless the row says otherwise; copies after the first made distinct in the columns whose values are distinct on a chain (hashes, signatures, calldata, log data); target 100 blocks/s)`,
        '',
        table(
          [
            'pipeline',
            'blocks',
            's',
            'blocks/s',
            'vs before',
            'ingester CPU ms/block',
            'replay node CPU ms/block',
            'CPU-bound blocks/s on idle cores',
            'peak RSS',
          ],
          rates.map(([name, r]) => [
            name,
            int(r.blocks),
            (r.elapsedMs / 1000).toFixed(1),
            r.blocksPerSecond.toFixed(1),
            `${(r.blocksPerSecond / before[1].blocksPerSecond).toFixed(2)}×`,
            r.cpuMsPerBlock.toFixed(1),
            r.nodeCpuMsPerBlock.toFixed(1),
            ((availableParallelism() * 1000) / (r.cpuMsPerBlock + r.nodeCpuMsPerBlock)).toFixed(0),
            `${int(r.peakRssMiB)} MiB`,
          ]),
        ),
        '',
        `Target ≥ 100 blocks/s as \`npm run ingest\` builds Ethereum (the last row: every dataset, a ${int(ETH_PARTITION_BLOCKS)}-block partition a unit): ${big[1].blocksPerSecond >= 100 ? 'met' : 'missed'} (${big[1].blocksPerSecond.toFixed(1)} blocks/s measured; ${after[1].blocksPerSecond.toFixed(1)} in the pool row's ${RATE_BLOCKS_PER_UNIT}-block units, which pay a file and an index segment per ${RATE_BLOCKS_PER_UNIT} blocks; load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores at the end). The last column is the rate the cores would give were they the ingester's and the node's alone: cores × 1000 / (both CPU ms per block). The DEX datasets cost ${(after[1].cpuMsPerBlock - withoutDex[1].cpuMsPerBlock).toFixed(1)} ms of ingester CPU per block (${(((after[1].cpuMsPerBlock - withoutDex[1].cpuMsPerBlock) / after[1].cpuMsPerBlock) * 100).toFixed(0)} %); the two pool rows ran interleaved, ${POOL_REPETITIONS} repetitions each, in a process started as \`npm run ingest\` starts the ingester (\`node ${poolFlags.join(' ')}\`). The last row builds units as \`npm run ingest\` does on this chain, a partition of ${int(ETH_PARTITION_BLOCKS)} blocks each, two a thread, one at a time: ${big[1].blocksPerSecond.toFixed(1)} blocks/s with a peak of ${int(big[1].peakRssMiB)} MiB. Peak RSS is the process's, every thread included.`,
      )
    } finally {
      node.stop()
    }
    return out.join('\n')
  },
}

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
import { benchIngest, type IngestBench } from './lib/ingest.ts'
import type { BlockRange } from '../src/manifest/types.ts'
import { bytes, int, ms, table } from './report.ts'
import type { BenchContext, Section } from './section.ts'

/** Activity rounds of the devnet workload (about 2 blocks and 35 logs each; past ~290 rounds its swaps start to revert). */
const ROUNDS = 250
/** Recorded mainnet blocks that have full transactions and receipts. */
const MAINNET_BLOCKS = [17000000, 18000000, 18500000]
/** Repetitions of the (3-block) mainnet ingest; the median rate is reported. */
const MAINNET_RUNS = 5

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

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

async function fromReplay(ctx: BenchContext, tool: string): Promise<{ runs: IngestBench[] }> {
  const child = spawn(process.execPath, [tool], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', line => resolve(line.replace(/^listening /, '')))
      child.once('exit', code => reject(new Error(`replay-evm.mjs exited with ${code}`)))
    })
    ctx.log(`replay node at ${url}: ingesting blocks ${MAINNET_BLOCKS.join(', ')} ${MAINNET_RUNS} times`)
    const ranges = MAINNET_BLOCKS.map((n): BlockRange => [n, n])
    const runs: IngestBench[] = []
    for (let i = 0; i < MAINNET_RUNS; i++) runs.push(await benchIngest(url, ranges))
    return { runs }
  } finally {
    child.kill()
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
    const { runs } = await fromReplay(ctx, tool)
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
    return out.join('\n')
  },
}

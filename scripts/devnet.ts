/**
 * `npm run devnet -- [--out <dir-or-store-url>] [--rounds N] [--partition-blocks N] [--keep-running] [--interval S] [--port P]`
 *
 * Starts anvil on 127.0.0.1, deploys Uniswap v2/v3, runs the deterministic workload and
 * ingests the chain (DEVNET, 31337) into the store; this is how the bundled sample lake
 * (default --out partitions-manifest/sample) is made. With --keep-running, anvil stays up
 * and one activity round runs every --interval seconds until Ctrl-C, for the live demo.
 */
import { cliArgs } from './args.ts'
import { findChain } from '../src/chains/registry.ts'
import { startAnvil } from './dev/devnet/anvil.ts'
import { followWallClock, runActivityRound, setupWorkload, workloadReport } from './dev/devnet/workload.ts'
import type { WorkloadContext } from './dev/devnet/workload.ts'
import { runIngest } from '../src/ingest/run.ts'
import { openStore } from '../src/store/open.ts'

const values = cliArgs(
  {
    out: { type: 'string', default: 'partitions-manifest/sample' },
    rounds: { type: 'string', default: '100' },
    // Small partitions so that the ~200-block sample spans several of them, as real data does.
    'partition-blocks': { type: 'string', default: '100' },
    'keep-running': { type: 'boolean', default: false },
    interval: { type: 'string', default: '3' },
    port: { type: 'string', default: '0' },
  },
  'usage: npm run devnet -- [--out <store-url>] [--rounds <n>] [--partition-blocks <n>] [--keep-running [--interval <s>]] [--port <n>]',
)

const rounds = positiveInt(values.rounds, 'rounds', 0)
const partitionBlocks = positiveInt(values['partition-blocks'], 'partition-blocks', 1)
const intervalMs = Number(values.interval) * 1000
const port = positiveInt(values.port, 'port', 0)
if (!(intervalMs > 0)) throw new Error(`--interval must be a positive number of seconds, got ${values.interval}`)
const chain = findChain('evm', '31337') ?? missing('chain 31337 (DEVNET) in src/chains/chains.json')

const log = (line: string) => console.log(`[devnet] ${line}`)
const anvil = await startAnvil({ port })
let stopping = false
process.once('SIGINT', () => {
  stopping = true
})
process.once('SIGTERM', () => {
  stopping = true
})

try {
  await main()
} finally {
  await anvil.stop()
}

async function main(): Promise<void> {
  log(`anvil listening at ${anvil.url}`)
  let started = Date.now()
  const ctx = await setupWorkload(anvil.url)
  log(`deployed and seeded in ${Date.now() - started} ms: ${ctx.dev.tally.blocks} blocks`)
  started = Date.now()
  for (let i = 0; i < rounds; i++) {
    if (stopping || !(await round(ctx, i))) return log('interrupted')
    if ((i + 1) % 25 === 0 || i + 1 === rounds) log(`round ${i + 1}/${rounds}: ${ctx.dev.tally.blocks} blocks, ${ctx.dev.tally.logs} logs`)
  }
  const report = await workloadReport(ctx)
  log(
    `workload in ${Date.now() - started} ms: blocks ${report.fromBlock}-${report.toBlock}, ${report.transactions} txs ` +
      `(type 0/1/2: ${report.txTypes[0]}/${report.txTypes[1]}/${report.txTypes[2]}, ${report.contractCreations} creations), ${report.logs} logs`,
  )
  log(`v2 pairs: ${report.addresses.v2Pairs.map(p => `${p.label} ${p.address}`).join(', ')}`)
  log(`v3 pools: ${report.addresses.v3Pools.map(p => `${p.label}/${p.fee} ${p.address}`).join(', ')}`)

  started = Date.now()
  const store = openStore(values.out)
  const ingest = await runIngest({
    chain,
    rpcUrl: anvil.url,
    from: 0,
    to: report.toBlock,
    store,
    partitionBlocks,
    log: line => log(`ingest: ${line}`),
  })
  const rows = Object.entries(ingest.rows)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
  log(`ingested blocks ${ingest.from}-${ingest.to} into ${values.out} in ${Date.now() - started} ms: ${ingest.units} units, rows: ${rows}`)

  if (values['keep-running'] && !stopping) await keepRunning(ctx, rounds)
}

/** Live mode: wall-clock timestamps and one round every interval until a signal arrives. */
async function keepRunning(ctx: WorkloadContext, firstRound: number): Promise<void> {
  await followWallClock(ctx)
  log(`live: RPC ${anvil.url} (chain 31337), a round every ${intervalMs / 1000} s; Ctrl-C to stop`)
  for (let i = firstRound; !stopping; i++) {
    if (!(await round(ctx, i))) break
    log(`round ${i}: head ${await ctx.dev.client.getBlockNumber()}`)
    const wakeAt = Date.now() + intervalMs
    while (!stopping && Date.now() < wakeAt) await new Promise(r => setTimeout(r, Math.min(200, wakeAt - Date.now())))
  }
}

/**
 * Runs one round; false when interrupted. Ctrl-C in a terminal also reaches anvil (same
 * process group), so a round in flight may fail then: that failure is the interruption.
 */
async function round(ctx: WorkloadContext, i: number): Promise<boolean> {
  try {
    await runActivityRound(ctx, i)
    return true
  } catch (err) {
    if (stopping) return false
    throw err
  }
}

function missing(what: string): never {
  throw new Error(`missing ${what}`)
}

function positiveInt(text: string, name: string, min: number): number {
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${text}`)
  return n
}

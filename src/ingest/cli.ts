/**
 * `npm run ingest`: argument parsing (pure, with usage errors that say what is wrong)
 * and the command itself, kept out of scripts/ so tests can call both.
 */
import { parseArgs } from 'node:util'
import { findChain, findChainAnyFamily, type Chain } from '../chains/registry.ts'
import { fullnodeClient } from '../move/rest.ts'
import type { ObjectStore } from '../store/types.ts'
import { moveSource, type MoveIngestStats } from './move-source.ts'
import { progressReporter, type ProgressOutput } from './progress.ts'
import { availableParallelism } from 'node:os'
import { wasmKeccak256 } from './keccak.ts'
import { wasmXxhash64 } from '../parquet/bloom.ts'
import { unitPool } from './pool.ts'
import { lakePositions, PositionTracker } from './positions.ts'
import type { RpcRetry } from './rpc.ts'
import { chainRefOf, runIngest, wantsDex } from './run.ts'

export const USAGE = `usage: npm run ingest -- --chain <code|chain id|name> --rpc <url> --from <n> --to <n|latest> --out <store-url>
       npm run ingest -- --chain <code|chain id|name> --rest <url> --from <version> --to <version|latest> --out <store-url> [--sparse]
       [--datasets blocks,transactions,logs] [--confirmations N] [--partition-blocks N] [--concurrency N] [--workers N]
  --chain             chain code (ETH, APTOS), chain id (1: Ethereum with --rpc, Aptos with --rest) or name (ethereum-mainnet)
  --rpc               JSON-RPC endpoint of an EVM node
  --rest              REST endpoint of an Aptos-style fullnode (Move-VM chains; versions are the range)
  --sparse            with --rest: accept a source that skips versions (a recorded one; a real node never does)
  --from, --to        inclusive block (or version) range; --to latest stops --confirmations blocks behind the head
  --out               object store: file:///abs/path, a plain path, or s3://bucket/prefix
  --datasets          comma-separated subset of the chain's datasets (default: all)
  --confirmations     blocks to stay behind the head with --to latest (default: the chain's)
  --partition-blocks  blocks per partition, a divisor of the manifest shard span (default: the chain's,
                      1,000 for Ethereum, whose units of 10,000 blocks would not fit in memory; else 10,000)
  --concurrency       JSON-RPC requests (or REST pages) in flight (default 4; per worker thread with --workers)
  --workers           EVM: threads that fetch, verify, transform and encode units (default: one per core; 0: this thread only)`

/** A command-line mistake: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

export interface IngestArgs {
  chain: Chain
  rpc?: string
  rest?: string
  from: number
  to: number | 'latest'
  out: string
  datasets?: string[]
  confirmations?: number
  partitionBlocks?: number
  concurrency?: number
  /** EVM only: worker threads (0: build units in the main thread; default one per core). */
  workers?: number
  /** Move-VM only: the REST source may skip versions. */
  sparse?: boolean
}

function count(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new UsageError(`--${name} must be a non-negative integer, got "${text}"`)
  return Number(text)
}

/** Parses `npm run ingest` arguments; throws UsageError naming the problem. */
export function parseIngestArgs(argv: string[]): IngestArgs {
  let values: Record<string, string | undefined>
  let sparse: boolean
  try {
    const parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(
          ['chain', 'rpc', 'rest', 'from', 'to', 'out', 'datasets', 'confirmations', 'partition-blocks', 'concurrency', 'workers'].map(
            k => [k, { type: 'string' as const }],
          ),
        ),
        sparse: { type: 'boolean' as const },
      },
    }).values as Record<string, string | boolean | undefined>
    sparse = parsed.sparse === true
    values = Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === 'string')) as Record<string, string>
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
  for (const k of ['chain', 'from', 'to', 'out']) if (!values[k]) throw new UsageError(`--${k} is required`)
  const chain = resolveChain(values.chain!, values.rest !== undefined && values.rpc === undefined)
  if (!chain) throw new UsageError(`unknown chain "${values.chain}"`)
  if (sparse && chain.family !== 'move') throw new UsageError(`--sparse is for Move-VM sources (--rest); ${chain.code} is an EVM chain`)
  if (values.rest !== undefined && chain.family === 'move' && !/^https?:\/\/[^/]/i.test(values.rest)) {
    throw new UsageError(`--rest must be an http(s) URL, got "${values.rest}"`)
  }
  if (chain.family === 'evm' && values.rest) throw new UsageError(`--rest is for Move-VM chains; ${chain.code} is an EVM chain, use --rpc`)
  if (chain.family === 'evm' && !values.rpc) throw new UsageError(`--rpc is required for ${chain.code} (an EVM chain)`)
  if (chain.family === 'move' && !values.rest) throw new UsageError(`--rest is required for ${chain.code} (a Move-VM chain)`)
  if (chain.family === 'move' && values.rpc) throw new UsageError(`--rpc is for EVM chains; ${chain.code} is a Move-VM chain, use --rest`)
  const from = count('from', values.from)!
  const to = values.to === 'latest' ? 'latest' : count('to', values.to)!
  if (to !== 'latest' && to < from) throw new UsageError(`--to ${to} is below --from ${from}`)
  const partitionBlocks = count('partition-blocks', values['partition-blocks'])
  if (partitionBlocks === 0) throw new UsageError('--partition-blocks must be at least 1')
  const concurrency = count('concurrency', values.concurrency)
  if (concurrency === 0) throw new UsageError('--concurrency must be at least 1')
  const workers = count('workers', values.workers)
  if (workers !== undefined && chain.family !== 'evm') throw new UsageError(`--workers is for EVM chains; ${chain.code} is a Move-VM chain`)
  const datasets = values.datasets
    ?.split(',')
    .map(s => s.trim())
    .filter(Boolean)
  if (values.datasets !== undefined && !datasets?.length) throw new UsageError('--datasets is empty')
  return {
    chain,
    rpc: values.rpc,
    rest: values.rest,
    from,
    to,
    out: values.out!,
    datasets,
    confirmations: count('confirmations', values.confirmations),
    partitionBlocks,
    concurrency,
    ...(workers === undefined ? {} : { workers }),
    ...(sparse ? { sparse } : {}),
  }
}

/**
 * The chain `--chain` names. Ids collide across families (1 is Ethereum and Aptos),
 * so with `--rest` alone an id means the Move-VM chain; codes and names are unambiguous.
 */
function resolveChain(text: string, rest: boolean): Chain | undefined {
  return rest ? (findChain('move', text) ?? findChainAnyFamily(text)) : (findChain('evm', text) ?? findChainAnyFamily(text))
}

/** The operator's summary of a Move ingest: how much was proven and decoded, and the ABIs it cost. */
export function moveSummary(s: MoveIngestStats): string {
  const examples = s.undecodedSamples
    .slice(0, 3)
    .map(u => `${u.version}: ${u.reason}`)
    .join('; ')
  return (
    `move: ${s.transactions} transactions, ${s.verified} hash-verified, ${s.unverified} stored unverified, ` +
    `${s.undecoded} call(s) not decoded${examples ? ` (${examples})` : ''}; ABIs: ${s.abiFetches} fetched from the node, ${s.abiCacheHits} from the store`
  )
}

export interface CliIo {
  stdout: ProgressOutput
  stderr: { write(text: string): unknown }
  openStore(url: string): ObjectStore | Promise<ObjectStore>
}

/** Runs the command; returns the process exit code (0 done, 1 failed, 2 usage error). */
export async function ingestCommand(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(`${USAGE}\n`)
    return 0
  }
  let args: IngestArgs
  try {
    args = parseIngestArgs(argv)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    io.stderr.write(`error: ${e.message}\n${USAGE}\n`)
    return 2
  }
  const reporter = progressReporter(io.stdout)
  try {
    const store = await io.openStore(args.out)
    const source =
      args.chain.family === 'move'
        ? moveSource(
            fullnodeClient({
              url: args.rest!,
              onRetry: r =>
                reporter.log(
                  `node: retrying ${r.url}, attempt ${r.attempt} of ${r.attempts} in ${(r.waitMs / 1000).toFixed(1)} s: ${r.reason}`,
                ),
            }),
            {
              chain: args.chain,
              store,
              sparse: args.sparse,
              concurrency: args.concurrency,
              log: reporter.log,
            },
          )
        : undefined
    const rpc = {
      ...(args.concurrency ? { concurrency: args.concurrency } : {}),
      onRetry: (r: RpcRetry) =>
        reporter.log(
          `node: retrying ${r.calls} call${r.calls === 1 ? '' : 's'} (${r.method}), attempt ${r.attempt} of ${r.attempts} in ${(r.waitMs / 1000).toFixed(1)} s: ${r.reason}`,
        ),
    }
    const workers = args.chain.family === 'evm' ? (args.workers ?? availableParallelism()) : 0
    // The threads' DEX position state is kept in this thread, over the lake (positions.ts).
    const pool =
      workers > 0
        ? unitPool({
            chain: chainRefOf(args.chain),
            rpcUrl: args.rpc!,
            rpc,
            workers,
            dex: wantsDex(args.datasets),
            positions: new PositionTracker(lakePositions(store, args.chain)),
          })
        : undefined
    let report
    try {
      report = await runIngest({
        chain: args.chain,
        rpcUrl: args.rpc,
        source,
        from: args.from,
        to: args.to,
        store,
        datasets: args.datasets,
        confirmations: args.confirmations,
        partitionBlocks: args.partitionBlocks,
        rpc,
        ...(pool ? { builder: pool, concurrency: pool.capacity } : { layout: { bloomHash: await wasmXxhash64() } }),
        ...(!pool && args.chain.family === 'evm' ? { keccak: await wasmKeccak256() } : {}),
        log: reporter.log,
        onProgress: reporter.onProgress,
      })
    } finally {
      await pool?.close()
    }
    if (source) reporter.log(moveSummary(source.stats))
    reporter.done(report)
    return 0
  } catch (e) {
    io.stderr.write(`${io.stdout.isTTY ? '\n' : ''}error: ${(e as Error).message}\n`)
    return 1
  }
}

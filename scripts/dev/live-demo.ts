/**
 * The pieces of the `npm start` live demo: an anvil devnet that keeps mining
 * Uniswap v2/v3 swaps and liquidity changes, continuing the chain of the bundled
 * sample lake, and a subscriber that prints the swaps and positions of every new
 * block as they arrive over the WebSocket API.
 *
 * The devnet workload is deterministic, so replaying it on a fresh anvil up to the
 * sample's last block gives the sample's exact blocks (hashes included); the live
 * follower checks that hash before it anchors on the stored data. From there the
 * chain follows the wall clock, one round every few seconds.
 */
import WebSocket from 'ws'
import { CHAINS } from '../../src/chains/registry.ts'
import { startAnvil } from './devnet/anvil.ts'
import { followWallClock, runActivityRound, setupWorkload } from './devnet/workload.ts'
import { resyncNonces } from './devnet/blocks.ts'
import { chainRefOf, readRoot } from '../../src/ingest/run.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { basicHeader } from '../../src/live/session.ts'

const DEVNET = CHAINS.find(c => c.code === 'DEVNET')!

export interface LiveDevnetOptions {
  /** The lake whose DEVNET blocks the chain must continue (the bundled sample); none starts a fresh chain. */
  lake?: ObjectStore
  /** Seconds between activity rounds once live (default 3). */
  intervalSeconds?: number
  /** Port of anvil on 127.0.0.1 (default 0: any free port). */
  port?: number
  log?: (line: string) => void
}

export interface LiveDevnet {
  rpcUrl: string
  /** Value of LIVE_CHAINS that makes the service follow this devnet. */
  liveChains: string
  /** Stops mining and the node. */
  stop(): Promise<void>
}

/** Starts anvil, replays the workload up to the lake's last DEVNET block, then mines a round every interval. */
export async function startLiveDevnet(options: LiveDevnetOptions = {}): Promise<LiveDevnet> {
  const log = options.log ?? (() => {})
  const intervalMs = (options.intervalSeconds ?? 3) * 1000
  const anvil = await startAnvil({ port: options.port ?? 0 })
  let stopping = false
  let loop: Promise<void> = Promise.resolve()
  try {
    const ctx = await setupWorkload(anvil.url)
    const root = options.lake ? await readRoot(options.lake, chainRefOf(DEVNET)) : null
    const stored = root?.datasets.blocks?.coverage.at(-1)?.[1] ?? -1
    let round = 0
    if (stored >= 0) log(`replaying the devnet workload up to the lake's block ${stored}`)
    while (Number(await ctx.dev.client.getBlockNumber()) < stored) await runActivityRound(ctx, round++)
    await followWallClock(ctx)
    log(`anvil ${anvil.url}: a Uniswap round every ${intervalMs / 1000} s`)
    loop = (async () => {
      while (!stopping) {
        try {
          // The node is the truth: a reorg (or a failed round) since the last round changed the nonces.
          await resyncNonces(ctx.dev)
          await runActivityRound(ctx, round++)
        } catch (err) {
          if (!stopping) log(`round ${round - 1} failed: ${(err as Error).message}`)
        }
        const wakeAt = Date.now() + intervalMs
        while (!stopping && Date.now() < wakeAt) await new Promise(r => setTimeout(r, Math.min(200, wakeAt - Date.now())))
      }
    })()
  } catch (err) {
    await anvil.stop()
    throw err
  }
  return {
    rpcUrl: anvil.url,
    liveChains: JSON.stringify({ [DEVNET.code]: { rpc: anvil.url, finality: 8, compact_blocks: 16, poll_ms: 500 } }),
    async stop() {
      stopping = true
      await loop
      await anvil.stop()
    },
  }
}

export interface DemoSubscriber {
  close(): void
}

/** A short address for a terminal line. */
const short = (a: unknown) => (typeof a === 'string' ? `${a.slice(0, 6)}…${a.slice(-4)}` : '?')
/** Raw price text cut to 8 significant characters (the full exact text is in the row). */
const brief = (price: unknown) => (typeof price === 'string' ? price.slice(0, 10) : 'n/a')

/** One line per decoded row of dex/swaps and dex/positions. */
const DEMO_STREAMS: { path: string; line: (r: Record<string, unknown>) => string }[] = [
  {
    path: 'dex/swaps',
    line: r =>
      `swap ${r.protocol ?? 'unverified'} pool ${short(r.pool)} (${short(r.token0)}/${short(r.token1)}): amount0 ${r.amount0}, amount1 ${r.amount1}, price ${brief(r.price)} token1/token0 raw`,
  },
  {
    path: 'dex/positions',
    line: r =>
      `position #${r.token_id} ${r.event}: pool ${short(r.pool)} ticks ${r.tick_lower}..${r.tick_upper}, liquidity ${r.liquidity}, amounts ${r.amount0}/${r.amount1}${r.owner ? `, owner ${short(r.owner)}` : ''}`,
  },
]

/**
 * Subscribes to the DEVNET's decoded swaps and position changes at `baseUrl` (http or ws)
 * and prints each one as it arrives, and reorgs. Each stream reconnects from its cursor
 * (with the cursor's hash, so a reorg in between is reported) when the connection drops.
 */
export function demoSubscriber(
  baseUrl: string,
  credentials: { user: string; password: string },
  print: (line: string) => void,
): DemoSubscriber {
  const base = baseUrl.replace(/^http/, 'ws').replace(/\/$/, '')
  const sockets: WebSocket[] = []
  let closed = false

  const follow = (stream: (typeof DEMO_STREAMS)[number]) => {
    let cursor: { block: number; hash?: string } | null = null
    const open = () => {
      const resume = cursor ? `&from_block=${cursor.block + 1}${cursor.hash ? `&cursor_hash=${cursor.hash}` : ''}` : ''
      const ws = new WebSocket(`${base}/v1/api/${stream.path}?chains=${DEVNET.code}${resume}`, {
        headers: { authorization: basicHeader(credentials.user, credentials.password) },
      })
      sockets.push(ws)
      ws.on('message', data => {
        const m = JSON.parse(data.toString())
        if (m.type === 'subscribed') print(`subscribed to ${m.chain} ${stream.path} from block ${m.from_block} (head ${m.head})`)
        if (m.type === 'rows') {
          for (const row of m.rows) print(`${m.removed ? 'removed ' : ''}block ${Number(row.block_number)} ${stream.line(row)}`)
        }
        if (m.type === 'progress') cursor = { block: m.cursor, hash: m.hash }
        if (m.type === 'reorg') {
          print(
            `reorg: blocks after ${m.fork_point} dropped (${m.dropped.map((d: { block_number: number }) => d.block_number).join(', ')})`,
          )
          cursor = { block: m.fork_point }
        }
        if (m.type === 'error') print(`error ${m.code}: ${m.message}`)
      })
      ws.on('close', () => {
        if (!closed) setTimeout(open, 1000)
      })
      ws.on('error', () => {})
    }
    open()
  }
  DEMO_STREAMS.forEach(follow)
  return {
    close() {
      closed = true
      for (const ws of sockets) ws.close()
    },
  }
}

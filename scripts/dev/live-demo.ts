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
import type { Hex } from 'viem'
import { CHAINS } from '../../src/chains/registry.ts'
import { startAnvil } from './devnet/anvil.ts'
import { classifyLog, devnetEventKinds } from './devnet/contracts.ts'
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

/**
 * Subscribes to the DEVNET logs at `baseUrl` (http or ws) and prints one line per
 * block with the events it holds. Reconnects from its cursor (with the cursor's
 * hash, so a reorg in between is reported) when the connection drops.
 */
export function demoSubscriber(
  baseUrl: string,
  credentials: { user: string; password: string },
  print: (line: string) => void,
): DemoSubscriber {
  const kinds = devnetEventKinds()
  const base = baseUrl.replace(/^http/, 'ws').replace(/\/$/, '')
  let cursor: { block: number; hash?: string } | null = null
  let ws: WebSocket | null = null
  let closed = false
  let counts = new Map<string, number>()

  const open = () => {
    const resume = cursor ? `&from_block=${cursor.block + 1}${cursor.hash ? `&cursor_hash=${cursor.hash}` : ''}` : ''
    ws = new WebSocket(`${base}/v1/api/logs?chains=${DEVNET.code}${resume}`, {
      headers: { authorization: basicHeader(credentials.user, credentials.password) },
    })
    ws.on('message', data => {
      const m = JSON.parse(data.toString())
      if (m.type === 'subscribed') print(`subscribed to ${m.chain} logs from block ${m.from_block} (head ${m.head})`)
      if (m.type === 'rows' && !m.removed) {
        for (const row of m.rows) {
          const kind = classifyLog(kinds, [row.topic0, row.topic1, row.topic2, row.topic3].filter(t => t !== null) as Hex[])
          counts.set(kind, (counts.get(kind) ?? 0) + 1)
        }
      }
      if (m.type === 'progress' && m.live) {
        const events = [...counts].filter(([k]) => /Swap|Mint|Burn|Collect|Liquidity/.test(k)).map(([k, n]) => `${n} ${k}`)
        print(`block ${m.cursor} ${m.hash?.slice(0, 10) ?? ''}: ${events.length ? events.join(', ') : 'no swaps or positions'}`)
        counts = new Map()
      }
      if (m.type === 'progress') cursor = { block: m.cursor, hash: m.hash }
      if (m.type === 'reorg') {
        print(`reorg: blocks after ${m.fork_point} dropped (${m.dropped.map((d: { block_number: number }) => d.block_number).join(', ')})`)
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
  return {
    close() {
      closed = true
      ws?.close()
    },
  }
}

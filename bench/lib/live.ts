/**
 * The live benchmark (`npm run bench -- live`): anvil mines Uniswap v2/v3 blocks
 * (the devnet workload) as fast as it can; the Node server follows it; 100 `ws`
 * clients subscribe to every log live. Measured:
 * - delivery latency per block, from `evm_mine` returning (the block exists on the
 *   node) and from the follower seeing it, to its first row at a subscriber;
 * - messages and rows per second to the 100 live subscribers, and to 100
 *   subscribers replaying the whole chain at once (partitions, then the window);
 * - exactness: every subscriber's rows against the node's eth_getLogs, no row
 *   lost or repeated.
 * Clients run in the server's process, so their JSON parsing shares its CPU.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { CHAINS } from '../../src/chains/registry.ts'
import { startAnvil } from '../../scripts/dev/devnet/anvil.ts'
import { runActivityRound, setupWorkload } from '../../scripts/dev/devnet/workload.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { fsStore } from '../../src/store/fs.ts'
import { startNodeServer } from '../../src/node/server.ts'
import { basic } from '../../test/support/basic.ts'

export interface LiveBenchOptions {
  /** Blocks mined while latency is measured (default 240, at least 200). */
  blocks?: number
  /** Concurrent subscribers (default 100). */
  subscribers?: number
  /** The follower's poll interval, ms (default 50). */
  pollIntervalMs?: number
  log?: (line: string) => void
}

export interface Distribution {
  n: number
  median: number
  p99: number
  max: number
}

export interface Throughput {
  subscribers: number
  messages: number
  rows: number
  seconds: number
  messagesPerSecond: number
  rowsPerSecond: number
}

export interface LiveBenchReport {
  blocks: number
  pollIntervalMs: number
  /** ms from evm_mine returning to the block's first row at a subscriber. */
  minedToRow: Distribution
  /** ms from the follower appending the block to its first row at a subscriber. */
  seenToRow: Distribution
  live: Throughput
  replay: Throughput
  /** Subscribers whose rows were checked against eth_getLogs, and what was wrong. */
  checked: number
  lost: number
  repeated: number
}

function distribution(values: number[]): Distribution {
  const s = [...values].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN
  return { n: s.length, median: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? NaN }
}

interface Client {
  ws: WebSocket
  messages: number
  /** `block_number:log_index` of every row, in arrival order. */
  keys: string[]
  ended: Promise<void>
}

function connect(url: string, auth: string, onRows?: (block: number) => void): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: auth } })
    let done!: () => void
    const client: Client = { ws, messages: 0, keys: [], ended: new Promise<void>(r => (done = r)) }
    ws.on('message', data => {
      client.messages++
      const m = JSON.parse(data.toString()) as { type: string; rows?: { block_number: string; log_index: string }[]; code?: string }
      if (m.type === 'rows' && m.rows) {
        onRows?.(Number(m.rows[0].block_number))
        for (const r of m.rows) client.keys.push(`${Number(r.block_number)}:${Number(r.log_index)}`)
      }
      if (m.type === 'error') reject(new Error(`subscriber got ${m.code}`))
    })
    ws.on('close', () => done())
    ws.once('open', () => resolve(client))
    ws.once('error', reject)
  })
}

async function nodeLogKeys(rpcUrl: string, from: number, to: number): Promise<string[]> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x' + from.toString(16), toBlock: '0x' + to.toString(16) }],
    }),
  })
  const logs = ((await res.json()) as { result: { blockNumber: string; logIndex: string }[] }).result
  return logs.map(l => `${Number(l.blockNumber)}:${Number(l.logIndex)}`)
}

/** Rows missing from `got` and rows it holds more than once (or that the node does not have). */
function compare(expected: readonly string[], got: readonly string[]): { lost: number; repeated: number } {
  const want = new Set(expected)
  const seen = new Set<string>()
  let repeated = 0
  for (const k of got) {
    if (seen.has(k) || !want.has(k)) repeated++
    seen.add(k)
  }
  return { lost: expected.filter(k => !seen.has(k)).length, repeated }
}

/** Runs the benchmark; everything it starts it stops. */
export async function liveBench(options: LiveBenchOptions = {}): Promise<LiveBenchReport> {
  const target = Math.max(200, options.blocks ?? 240)
  const n = options.subscribers ?? 100
  const pollIntervalMs = options.pollIntervalMs ?? 50
  const log = options.log ?? (() => {})
  const chain = CHAINS.find(c => c.code === 'DEVNET')!
  const dir = await mkdtemp(join(tmpdir(), 'live-bench-'))
  const anvil = await startAnvil()
  const seenAt = new Map<number, number>()
  const minedAt = new Map<number, number>()
  const rowAt = new Map<number, number>()
  try {
    log('deploying Uniswap v2/v3 on anvil')
    const ctx = await setupWorkload(anvil.url)
    const request = ctx.dev.test.request.bind(ctx.dev.test)
    let head = Number(await ctx.dev.client.getBlockNumber())
    // Times each block from the moment evm_mine returns: the block exists on the node then.
    ctx.dev.test.request = (async (args: { method: string }) => {
      const result = await request(args as never)
      if (args.method === 'evm_mine') minedAt.set(++head, performance.now())
      return result
    }) as unknown as typeof request

    const running = await startNodeServer({
      store: fsStore(dir),
      users: await parseUsers('bench:bench'),
      follow: [
        {
          chain,
          rpcUrl: anvil.url,
          options: {
            finalityDepth: 16,
            compactBlocks: 32,
            observe: e => e.type === 'block' && seenAt.set(e.block.number, performance.now()),
          },
        },
      ],
      pollIntervalMs,
      limits: { maxSubscriptionsPerUser: 2 * n + 2 },
    })
    const ws = running.url.replace('http', 'ws')
    const auth = basic('bench', 'bench')
    try {
      const from = head + 1
      const liveClients = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          connect(
            `${ws}/v1/api/logs?chains=DEVNET&from_block=${from}`,
            auth,
            i === 0 ? b => rowAt.has(b) || rowAt.set(b, performance.now()) : undefined,
          ),
        ),
      )
      log(`${n} live subscribers; mining at least ${target} blocks`)
      const started = performance.now()
      for (let round = 0; head - from + 1 < target; round++) await runActivityRound(ctx, round)
      const last = head
      const live = running.live.chains.values().next().value!
      while ((live.window()?.tip.number ?? -1) < last || liveClients.some(c => c.ws.bufferedAmount > 0))
        await new Promise(r => setTimeout(r, 5))
      // Every subscriber got the last block's progress once the follower has it and sockets are drained.
      await new Promise(r => setTimeout(r, 200))
      const liveSeconds = (performance.now() - started) / 1000
      const expectedLive = await nodeLogKeys(anvil.url, from, last)
      let lost = 0
      let repeated = 0
      for (const c of liveClients) {
        const r = compare(expectedLive, c.keys)
        lost += r.lost
        repeated += r.repeated
      }
      const liveMessages = liveClients.reduce((s, c) => s + c.messages, 0)
      const liveRows = liveClients.reduce((s, c) => s + c.keys.length, 0)
      liveClients.forEach(c => c.ws.close())

      log(`${n} subscribers replaying blocks 0-${last}`)
      await live.settled()
      const replayStart = performance.now()
      const replayClients = await Promise.all(
        Array.from({ length: n }, () => connect(`${ws}/v1/api/logs?chains=DEVNET&from_block=0&to_block=${last}`, auth)),
      )
      await Promise.all(replayClients.map(c => c.ended))
      const replaySeconds = (performance.now() - replayStart) / 1000
      const expectedAll = await nodeLogKeys(anvil.url, 0, last)
      for (const c of replayClients) {
        const r = compare(expectedAll, c.keys)
        lost += r.lost
        repeated += r.repeated
      }
      const replayMessages = replayClients.reduce((s, c) => s + c.messages, 0)
      const replayRows = replayClients.reduce((s, c) => s + c.keys.length, 0)

      const blocks = [...minedAt.keys()].filter(b => b >= from && b <= last && rowAt.has(b))
      await running.close()
      return {
        blocks: last - from + 1,
        pollIntervalMs,
        minedToRow: distribution(blocks.map(b => rowAt.get(b)! - minedAt.get(b)!)),
        seenToRow: distribution(blocks.filter(b => seenAt.has(b)).map(b => rowAt.get(b)! - seenAt.get(b)!)),
        live: {
          subscribers: n,
          messages: liveMessages,
          rows: liveRows,
          seconds: liveSeconds,
          messagesPerSecond: liveMessages / liveSeconds,
          rowsPerSecond: liveRows / liveSeconds,
        },
        replay: {
          subscribers: n,
          messages: replayMessages,
          rows: replayRows,
          seconds: replaySeconds,
          messagesPerSecond: replayMessages / replaySeconds,
          rowsPerSecond: replayRows / replaySeconds,
        },
        checked: 2 * n,
        lost,
        repeated,
      }
    } catch (err) {
      await running.close()
      throw err
    }
  } finally {
    await anvil.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

const ms = (v: number) => `${v.toFixed(1)} ms`
const int = (v: number) => Math.round(v).toLocaleString('en-US')

/** The report as Markdown, with the targets of issue 5. */
export function liveBenchMarkdown(r: LiveBenchReport): string {
  return [
    `Anvil mining Uniswap v2/v3 blocks back to back, the Node server following it (poll every ${r.pollIntervalMs} ms), clients in the same process.`,
    '',
    '| delivery latency (first row of a block) | blocks | median | p99 | max |',
    '|---|---:|---:|---:|---:|',
    `| from evm_mine returning | ${r.minedToRow.n} | ${ms(r.minedToRow.median)} | ${ms(r.minedToRow.p99)} | ${ms(r.minedToRow.max)} |`,
    `| from the follower seeing the block | ${r.seenToRow.n} | ${ms(r.seenToRow.median)} | ${ms(r.seenToRow.p99)} | ${ms(r.seenToRow.max)} |`,
    '',
    '| fan-out | subscribers | messages | rows | seconds | messages/s | rows/s |',
    '|---|---:|---:|---:|---:|---:|---:|',
    `| live, ${r.blocks} blocks as they are mined | ${r.live.subscribers} | ${int(r.live.messages)} | ${int(r.live.rows)} | ${r.live.seconds.toFixed(2)} | ${int(r.live.messagesPerSecond)} | ${int(r.live.rowsPerSecond)} |`,
    `| replay of the whole chain at once | ${r.replay.subscribers} | ${int(r.replay.messages)} | ${int(r.replay.rows)} | ${r.replay.seconds.toFixed(2)} | ${int(r.replay.messagesPerSecond)} | ${int(r.replay.rowsPerSecond)} |`,
    '',
    `Exactness: ${r.checked} subscribers checked against eth_getLogs: ${r.lost} rows lost, ${r.repeated} repeated (target 0 and 0: ${r.lost === 0 && r.repeated === 0 ? 'met' : 'MISSED'}).`,
    `Median latency after the follower sees the block: ${ms(r.seenToRow.median)} (target ≤ 500 ms: ${r.seenToRow.median <= 500 ? 'met' : 'MISSED'}).`,
  ].join('\n')
}

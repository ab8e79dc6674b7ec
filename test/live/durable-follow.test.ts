/**
 * The Cloudflare follower with nobody subscribed (wrangler dev, as `npm start` runs it):
 * the Cron Trigger wakes the chain's Durable Object, whose alarm then keeps following
 * the node and compacting final blocks into the lake, with no WebSocket and no request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { unstable_startWorker } from 'wrangler'
import { Chainlet, USERS } from './helpers.ts'
import { basic } from '../support/basic.ts'

process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'

const ALICE = { authorization: basic('alice', 'secret') }

let chain: Chainlet
let worker: Awaited<ReturnType<typeof unstable_startWorker>>
let http: string

beforeAll(async () => {
  chain = await Chainlet.start()
  const live = { DEVNET: { rpc: chain.url, finality: 2, compact_blocks: 2, poll_ms: 50 } }
  worker = await unstable_startWorker({
    config: join(import.meta.dirname, '..', '..', 'wrangler.toml'),
    bindings: { API_USERS: { type: 'plain_text', value: USERS }, LIVE_CHAINS: { type: 'plain_text', value: JSON.stringify(live) } },
    dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, persist: false, logLevel: 'error', testScheduled: true },
  } as Parameters<typeof unstable_startWorker>[0])
  await worker.ready
  http = (await worker.url).href.replace(/\/$/, '')
}, 120_000)
afterAll(async () => {
  await worker?.dispose()
  await chain?.stop()
})

describe('the Cloudflare follower without subscribers', () => {
  it('after the Cron Trigger alone, the lake advances while the node mines', async () => {
    const scheduled = await fetch(`${http}/__scheduled?cron=*+*+*+*+*`)
    expect(scheduled.status).toBe(200)
    await scheduled.body?.cancel()
    for (let i = 0; i < 12; i++) {
      await chain.mine([[1, '0x01']])
      await new Promise(r => setTimeout(r, 250))
    }
    const head = await chain.head()
    // Time for the last polls and compaction on a loaded machine; still no request.
    await new Promise(r => setTimeout(r, 3_000))
    // The first request this Worker serves: the blocks were compacted before it, by the alarm alone.
    const res = await fetch(`${http}/v1/api/blocks?chains=DEVNET&from_block=0&to_block=${head}&fields=block_number`, { headers: ALICE })
    await res.body?.cancel()
    expect(res.status).toBe(200)
    const served = /^0-(\d+)$/.exec(res.headers.get('x-blocks-served') ?? '')
    expect(Number(served?.[1])).toBeGreaterThanOrEqual(head - 2 - 2)
  })
})

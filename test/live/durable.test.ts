/**
 * The Worker of wrangler.toml (src/worker/index.ts) and its live Durable Object
 * under wrangler dev (wrangler's startWorker: the same workerd and Miniflare as
 * `wrangler dev`), following a real anvil node, with real clients.
 */
import { checkDocsExampleAndPoller, runDocsShellExample } from './helpers.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { unstable_startWorker } from 'wrangler'
import { addressTopic, Chainlet, globalClient, rawClient, rowsOf, TOPIC0, USERS, wsClient } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { credentialProtocol, PROTOCOL } from '../../src/api/websocket.ts'

// Local runs never reach Cloudflare's servers (Miniflare's Request.cf).
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'

const ALICE = { authorization: basic('alice', 'secret') }
const FINALITY = 3

let chain: Chainlet
let worker: Awaited<ReturnType<typeof unstable_startWorker>>
let http: string
let ws: string

beforeAll(async () => {
  chain = await Chainlet.start()
  const live = { DEVNET: { rpc: chain.url, finality: FINALITY, compact_blocks: 2, poll_ms: 50 } }
  worker = await unstable_startWorker({
    config: join(import.meta.dirname, '..', '..', 'wrangler.toml'),
    bindings: { API_USERS: { type: 'plain_text', value: USERS }, LIVE_CHAINS: { type: 'plain_text', value: JSON.stringify(live) } },
    dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, persist: false, logLevel: 'error' },
  } as Parameters<typeof unstable_startWorker>[0])
  await worker.ready
  http = (await worker.url).href.replace(/\/$/, '')
  ws = http.replace('http', 'ws')
}, 120_000)
afterAll(async () => {
  await worker?.dispose()
  await chain?.stop()
})

/** Mines blocks until the object's compaction has published blocks 0..n (as the HTTP API reports what it served). */
async function storedThrough(n: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${http}/v1/api/blocks?chains=DEVNET&from_block=0&to_block=${n}&fields=block_number`, { headers: ALICE })
    await res.body?.cancel()
    if (res.status === 200 && res.headers.get('x-blocks-served') === `0-${n}`) return
    await chain.mine([[3, '0x33']])
    await new Promise(r => setTimeout(r, 50))
  }
}

/** About 1 MB of log data per block: twenty calls of 24 KB of calldata each. */
async function mineBig(): Promise<number> {
  const data = `0x${'ab'.repeat(24 * 1024)}` as `0x${string}`
  return chain.mine(Array.from({ length: 20 }, (_, i) => [1 + (i % 3), data] as [number, `0x${string}`]))
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

/** Waits until HTTP serves blocks `from`..`to` (partitions or the object's window): the object has followed them. */
async function servedOverHttp(from: number, to: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${http}/v1/api/blocks?chains=DEVNET&from_block=${from}&to_block=${to}&fields=block_number`, { headers: ALICE })
    await res.body?.cancel()
    if (res.status === 200 && res.headers.get('x-blocks-served') === `${from}-${to}`) return
    await sleep(50)
  }
}

describe('the live Durable Object under wrangler dev', () => {
  it('follows anvil and delivers exactly the matching logs live', async () => {
    const a = chain.address(1)
    const client = await wsClient(`${ws}/v1/api/logs?chains=DEVNET&topic2=${addressTopic(a)}`, { headers: ALICE })
    const subscribed = await client.waitFor(m => m.type === 'subscribed')
    const from = subscribed.from_block as number
    await chain.mine([
      [1, '0x01'],
      [2, '0x02'],
    ])
    await chain.mine([[2, '0x03']])
    const last = await chain.mine([
      [1, '0x04'],
      [1, '0x05'],
    ])
    await client.waitFor(m => m.type === 'progress' && m.cursor === last)
    const expected = await chain.logRecords(from, last, { topics: [TOPIC0, null, addressTopic(a)] })
    expect(expected.length).toBe(3)
    expect(rowsOf(client.messages)).toEqual(expected)
    expect(client.messages.filter(m => m.type === 'progress').at(-1).hash).toBe(await chain.blockHash(last))
    client.close()
  })

  it('compacts final blocks into partitions that the HTTP API serves, and replays them before the window', async () => {
    const head = await chain.head()
    await storedThrough(head - 1)
    const res = await fetch(`${http}/v1/api/logs?chains=DEVNET&from_block=0&to_block=${head - 1}&format=json`, { headers: ALICE })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(await chain.logRecords(0, head - 1))

    const client = await wsClient(`${ws}/v1/api/logs?chains=DEVNET&from_block=0`, { headers: ALICE })
    const next = await chain.mine([[2, '0x0a']])
    await client.waitFor(m => m.type === 'progress' && m.cursor === next)
    expect(rowsOf(client.messages)).toEqual(await chain.logRecords(0, next))
    expect(client.messages.some(m => m.type === 'gap')).toBe(false)
    client.close()
  })

  it('serves over HTTP a block the moment the WebSocket delivered it, marked with X-Finalized-Block', async () => {
    const client = await wsClient(`${ws}/v1/api/logs?chains=DEVNET`, { headers: ALICE })
    await client.waitFor(m => m.type === 'subscribed')
    const last = await chain.mine([[2, '0x77']])
    await client.waitFor(m => m.type === 'progress' && m.cursor === last)
    const res = await fetch(`${http}/v1/api/logs?chains=DEVNET&from_block=${last - 5}&format=json`, { headers: ALICE })
    expect([res.status, res.status === 200 ? '' : await res.text()]).toEqual([200, ''])
    expect(await res.json()).toEqual(await chain.logRecords(last - 5, last))
    expect(res.headers.get('x-latest-block')).toBe(String(last))
    expect(Number(res.headers.get('x-finalized-block'))).toBe(last - FINALITY)
    const final = await fetch(`${http}/v1/api/logs?chains=DEVNET&from_block=${last}&finalized=true&format=json`, { headers: ALICE })
    expect(final.status).toBe(200)
    expect(await final.json()).toEqual([])
    client.close()
  })

  it('reports a reorg with the dropped hashes and rows, then the new canonical rows', async () => {
    const client = await wsClient(`${ws}/v1/api/logs?chains=DEVNET`, { headers: ALICE })
    await client.waitFor(m => m.type === 'subscribed')
    const b1 = await chain.mine([[1, '0x41']])
    const b2 = await chain.mine([
      [2, '0x42'],
      [1, '0x43'],
    ])
    await client.waitFor(m => m.type === 'progress' && m.cursor === b2)
    const oldRows = await chain.logRecords(b2, b2)
    const oldHash = await chain.blockHash(b2)
    await chain.syncNonces()
    await chain.reorg(1, [[await chain.signedCall(3, '0x44'), 0]])
    const newHash = await chain.blockHash(b2)
    await client.waitFor(m => m.type === 'progress' && m.cursor === b2 && m.hash === newHash)
    const at = client.messages.findIndex(m => m.type === 'reorg')
    expect(client.messages[at]).toEqual({ type: 'reorg', fork_point: b1, dropped: [{ block_number: b2, hash: oldHash }], cursor: b1 })
    const after = client.messages.slice(at + 1)
    expect(after.filter(m => m.type === 'rows' && m.removed).flatMap(m => m.rows)).toEqual(oldRows.map(r => ({ ...r, removed: true })))
    expect(rowsOf(after)).toEqual(await chain.logRecords(b2, b2))
    client.close()
  })

  it('serves a bounded range to a browser-style client (subprotocol credentials), then end and a 1000 close frame', async () => {
    const to = await chain.head()
    const client = await globalClient(`${ws}/v1/api/logs?chains=DEVNET&from_block=${to - 4}&to_block=${to}`, [
      PROTOCOL,
      credentialProtocol('bob', 'hunter2'),
    ])
    expect(await client.waitFor(m => m.type === 'end')).toEqual({ type: 'end', cursor: to })
    expect(rowsOf(client.messages)).toEqual(await chain.logRecords(to - 4, to))
    client.close()
    // workerd sends the close frame but keeps the TCP connection after the client answers it
    // (the same under wrangler dev and plain Miniflare), so read the frame itself.
    const raw = await rawClient(Number(new URL(http).port), `/v1/api/logs?chains=DEVNET&from_block=${to - 4}&to_block=${to}`, ALICE)
    expect(await raw.resume()).toBe(1000)
    expect(rowsOf(raw.messages)).toEqual(await chain.logRecords(to - 4, to))
    raw.destroy()
  })

  it('closes a client that acks, then stops reading, with slow_consumer and 4413 after the stall timeout; one that never acks gets everything, bursty or paused past that timeout', async () => {
    const woken = await chain.mine([[3, '0x33']])
    await servedOverHttp(woken, woken)
    const from = await mineBig()
    let to = from
    // Well past every window (4 MiB unacknowledged) and buffer, however many calls a block took.
    for (let size = JSON.stringify(await chain.logRecords(from, to)).length; size < 12 * 1024 * 1024;) {
      to = await mineBig()
      size += JSON.stringify(await chain.logRecords(to, to)).length
    }
    // History, not live pushes: the object has followed and compacted the range before anyone subscribes.
    // History, not live pushes: the object has followed the whole range before anyone subscribes.
    await servedOverHttp(from, to)
    const port = Number(new URL(http).port)
    const path = `/v1/api/logs?chains=DEVNET&from_block=${from}&to_block=${to}`
    const acking = await rawClient(port, path, ALICE)
    const paused = await rawClient(port, path, ALICE)
    paused.pause()
    const bursty = await rawClient(port, path, ALICE)
    const burstyClosed = bursty.resume()
    let burstyOpen = true
    void burstyClosed.then(() => (burstyOpen = false))
    const reading = (async () => {
      while (burstyOpen) {
        bursty.pause()
        await sleep(60)
        void bursty.resume()
        await sleep(40)
      }
    })()

    // It acks at once (nothing yet: from_block - 1), so from then on the object counts what it acknowledged, then stops reading.
    while (!acking.messages.some(m => m.type === 'subscribed')) await sleep(10)
    acking.send(JSON.stringify({ type: 'ack', cursor: from - 1 }))
    acking.pause()
    // Past the stall timeout: the acking client is closed; the paused one, which never acked, cannot be told from a slow reader.
    await sleep(32_000)
    expect(await acking.resume()).toBe(4413)
    const marker = acking.messages.findLastIndex(m => m.type === 'progress')
    const cursor = marker < 0 ? from - 1 : (acking.messages[marker].cursor as number)
    expect(acking.messages.at(-1)).toEqual({
      type: 'error',
      code: 'slow_consumer',
      message: 'nothing was read for 30000 ms; resume from cursor + 1',
      cursor,
    })
    expect(cursor).toBeLessThan(to)
    expect(rowsOf(acking.messages.slice(0, marker + 1))).toEqual(cursor < from ? [] : await chain.logRecords(from, cursor))

    const expected = await chain.logRecords(from, to)
    expect(JSON.stringify(expected).length).toBeGreaterThan(8 * 1024 * 1024)
    expect(await paused.resume()).toBe(1000)
    expect(rowsOf(paused.messages)).toEqual(expected)
    expect(paused.messages.at(-1)).toEqual({ type: 'end', cursor: to })
    expect(await burstyClosed).toBe(1000)
    await reading
    expect(rowsOf(bursty.messages)).toEqual(expected)
    expect(bursty.messages.at(-1)).toEqual({ type: 'end', cursor: to })
    for (const c of [acking, paused, bursty]) c.destroy()
  }, 300_000)

  it("runs the docs' shell example as written (npx wscat): the range's rows, then end", async () => {
    const from = await chain.mine([[1, '0x5a']])
    const to = await chain.mine([
      [2, '0x5b'],
      [3, '0x5c'],
    ])
    // wscat waits for the TCP close after the close handshake, which workerd delays (docs: Close codes): Ctrl-D at `end`.
    const run = await runDocsShellExample(ws, 'DEVNET', { from, to }, { user: 'alice', password: 'secret' }, true)
    expect([run.code, run.stderr]).toEqual([0, ''])
    expect(run.messages[0]).toMatchObject({ type: 'subscribed', chain: 'DEVNET', from_block: from, to_block: to })
    expect(rowsOf(run.messages)).toEqual(await chain.logRecords(from, to))
    expect(run.messages.at(-1)).toEqual({ type: 'end', cursor: to })
  })

  it('takes credentials from a first auth message, and refuses bad ones at the upgrade or with 4401', async () => {
    const ok = await globalClient(`${ws}/v1/api/blocks?chains=DEVNET&fields=block_number,hash`)
    ok.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'hunter2' }))
    const head = await chain.mine([])
    await ok.waitFor(m => m.type === 'progress' && m.cursor === head)
    expect(rowsOf(ok.messages).at(-1)).toEqual({ block_number: '0x' + head.toString(16), hash: await chain.blockHash(head) })
    ok.close()
    await expect(wsClient(`${ws}/v1/api/logs?chains=DEVNET`, { headers: { authorization: basic('bob', 'nope') } })).rejects.toMatchObject({
      status: 401,
    })
    await expect(wsClient(`${ws}/v1/api/logs?chains=DEVNET&topic0=0x12`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'topic0' } },
    })
    const bad = await globalClient(`${ws}/v1/api/logs?chains=DEVNET`)
    bad.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'nope' }))
    expect((await bad.closed).code).toBe(4401)
  })

  it('reports the followed chain in status with its lag from the object; a chain not followed has none', async () => {
    const head = await chain.mine([[1, '0x61']])
    for (;;) {
      const records = (await (await fetch(`${http}/v1/api/status?format=json`, { headers: ALICE })).json()) as Record<string, any>[]
      const devnet = records.find(r => r.chain_code === 'DEVNET')!
      expect(records.find(r => r.chain_code === 'ETH')).toMatchObject({ lag: null })
      expect(devnet.lag).toEqual({ blocks: expect.any(Number), seconds: expect.any(Number) })
      if (devnet.lag.blocks === 0 && devnet.latest_block_height !== null) {
        expect(devnet.status).toBe('Ok')
        expect(await chain.head()).toBeGreaterThanOrEqual(head)
        return
      }
      await new Promise(r => setTimeout(r, 50))
    }
  })

  it("serves the docs' browser example as written (Node's built-in WebSocket, never acking) and an HTTP poller from last + 1", async () => {
    await checkDocsExampleAndPoller(chain, ws, http)
  })
})

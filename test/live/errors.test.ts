import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chainKey } from '../../src/chains/registry.ts'
import type { LiveChain } from '../../src/live/hub.ts'
import { Chainlet, globalClient, rawClient, startLiveServer, wsClient, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs } from '../support/stores.ts'
import { credentialProtocol, PROTOCOL } from '../../src/api/websocket.ts'

const ALICE = { authorization: basic('alice', 'secret') }

let chain: Chainlet
let server: LiveServer
let live: LiveChain
let logsUrl: string

beforeAll(async () => {
  chain = await Chainlet.start()
  await chain.mine([[1, '0x01']])
  server = await startLiveServer({
    follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 64, noCompaction: true } }],
    limits: {
      maxSubscriptionsPerUser: 2,
      authTimeoutMs: 200,
      maxBufferedBytes: 256 * 1024,
      lowWaterBytes: 64 * 1024,
      // 3 s: a client reading in bursts on a CI machine whose 2 cores other test files share
      // once went 1 s without its buffer shrinking (closed with 4413 mid-history).
      stallTimeoutMs: 3000,
    },
    closeGraceMs: 60_000,
  })
  live = server.service.chains.get(chainKey(DEVNET))!
  logsUrl = `${server.wsUrl}/v1/api/logs?chains=DEVNET`
})
afterAll(async () => {
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

/** Waits until the server holds no connection and no subscription: nothing leaked. */
async function drained(): Promise<void> {
  while (server.service.connections > 0 || live.subscriptions.size > 0) await new Promise(r => setTimeout(r, 10))
  expect(server.service.users.count('alice')).toBe(0)
  expect(server.service.users.count('bob')).toBe(0)
}

describe('refused at the upgrade, as HTTP errors', () => {
  it('wrong or missing Basic credentials: 401 with WWW-Authenticate', async () => {
    await expect(wsClient(logsUrl, { headers: { authorization: basic('alice', 'wrong') } })).rejects.toMatchObject({
      status: 401,
      body: { error: { code: 'unauthorized' } },
    })
    await expect(wsClient(logsUrl, { headers: { authorization: 'Bearer x' } })).rejects.toMatchObject({ status: 401 })
    const err = await wsClient(logsUrl, { headers: { authorization: basic('mallory', 'secret') } }).catch(e => e)
    expect(err.headers['www-authenticate']).toMatch(/^Basic realm=/)
  })

  it('wrong credentials in the subprotocol: 401; our subprotocol missing from the offer: 400', async () => {
    await expect(wsClient(logsUrl, { protocols: [PROTOCOL, credentialProtocol('bob', 'nope')] })).rejects.toMatchObject({ status: 401 })
    await expect(wsClient(logsUrl, { protocols: [credentialProtocol('bob', 'hunter2')] })).rejects.toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_protocol' } },
    })
    await expect(wsClient(logsUrl, { protocols: [PROTOCOL, 'basic.%%%'] })).rejects.toMatchObject({ status: 401 })
  })

  it('bad parameters: 400 naming the parameter, as over HTTP', async () => {
    await expect(wsClient(`${logsUrl}&address__in=0x12`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'address__in' } },
    })
    await expect(wsClient(`${server.wsUrl}/v1/api/logs?chains=NOPE`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'chains' } },
    })
    await expect(wsClient(`${logsUrl}&limit=5`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'limit' } },
    })
    await expect(wsClient(`${logsUrl}&format=csv`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'format' } },
    })
    await expect(wsClient(`${logsUrl}&from_block=5&cursor_hash=0x12`, { headers: ALICE })).rejects.toMatchObject({
      status: 400,
      body: { error: { parameter: 'cursor_hash' } },
    })
    await expect(wsClient(`${server.wsUrl}/v1/api/nothing?chains=DEVNET`, { headers: ALICE })).rejects.toMatchObject({ status: 404 })
    await expect(wsClient(`${server.wsUrl}/v1/api/status`, { headers: ALICE })).rejects.toMatchObject({ status: 404 })
    await drained()
  })
})

describe('after the upgrade', () => {
  it('an auth message with wrong credentials: error, then 4401', async () => {
    const c = await globalClient(logsUrl)
    c.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'nope' }))
    expect((await c.closed).code).toBe(4401)
    expect(c.messages).toEqual([{ type: 'error', code: 'unauthorized', message: 'invalid credentials' }])
  })

  it('no auth message in time: 4401', async () => {
    const c = await globalClient(logsUrl)
    expect((await c.closed).code).toBe(4401)
    expect(c.messages[0]).toMatchObject({ type: 'error', code: 'unauthorized' })
    await drained()
  })

  it('malformed messages: error, then 4400 (text that is not JSON, an unknown type, a binary frame, auth twice)', async () => {
    for (const bad of ['not json', '{"type":"subscribe"}', '[1,2]', Buffer.from([1, 2, 3])]) {
      const c = await wsClient(logsUrl, { headers: ALICE })
      c.send(bad)
      expect((await c.closed).code).toBe(4400)
      expect(c.messages.at(-1)).toMatchObject({ type: 'error', code: 'invalid_message' })
    }
    const twice = await globalClient(logsUrl)
    twice.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'hunter2' }))
    twice.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'hunter2' }))
    expect((await twice.closed).code).toBe(4400)
    await drained()
  })

  it('an oversized message: 1009 from the socket layer', async () => {
    const c = await wsClient(logsUrl, { headers: ALICE })
    c.send(JSON.stringify({ type: 'ping', id: 'x'.repeat(10_000) }))
    expect((await c.closed).code).toBe(1009)
    await drained()
  })

  it('ping gets pong with its id', async () => {
    const c = await wsClient(logsUrl, { headers: ALICE })
    c.send(JSON.stringify({ type: 'ping', id: 7 }))
    expect(await c.waitFor(m => m.type === 'pong')).toEqual({ type: 'pong', id: 7 })
    c.close()
    await drained()
  })
})

describe('too many subscriptions per user', () => {
  it('refuses the third with 429 at the upgrade, or 4429 after an auth message; a closed one frees its slot', async () => {
    const one = await wsClient(logsUrl, { headers: ALICE })
    const two = await wsClient(logsUrl, { headers: ALICE })
    await one.waitFor(m => m.type === 'subscribed')
    await two.waitFor(m => m.type === 'subscribed')
    await expect(wsClient(logsUrl, { headers: ALICE })).rejects.toMatchObject({
      status: 429,
      body: { error: { code: 'too_many_subscriptions' } },
    })
    const third = await globalClient(logsUrl)
    third.send(JSON.stringify({ type: 'auth', user: 'alice', password: 'secret' }))
    expect((await third.closed).code).toBe(4429)
    const bob = await wsClient(logsUrl, { headers: { authorization: basic('bob', 'hunter2') } })
    await bob.waitFor(m => m.type === 'subscribed')
    one.close()
    await one.closed
    while (server.service.users.count('alice') > 1) await new Promise(r => setTimeout(r, 10))
    const again = await wsClient(logsUrl, { headers: ALICE })
    await again.waitFor(m => m.type === 'subscribed')
    for (const c of [two, bob, again]) c.close()
    await drained()
  })
})

describe('slow consumers', () => {
  const big: (number | undefined)[] = []

  /** About 1 MB of log data per block: twenty calls of 24 KB of calldata each. */
  async function mineBig(): Promise<number> {
    const data = `0x${'ab'.repeat(24 * 1024)}` as `0x${string}`
    return chain.mine(Array.from({ length: 20 }, (_, i) => [1 + (i % 3), data] as [number, `0x${string}`]))
  }

  it('a live subscriber that stops reading is closed with 4413 once its unsent bytes pass the limit', async () => {
    const c = await rawClient(server.port, '/v1/api/logs?chains=DEVNET', ALICE)
    expect(c.status).toBe(101)
    while (!c.messages.some(m => m.type === 'subscribed')) await new Promise(r => setTimeout(r, 10))
    c.pause()
    const before = live.stats.slowConsumerCloses
    while (live.stats.slowConsumerCloses === before) {
      const n = await mineBig()
      big[0] ??= n
      big[1] = n
      await new Promise(r => setTimeout(r, 30))
    }
    expect(live.subscriptions.size).toBe(0)
    expect(await c.resume()).toBe(4413)
    expect(c.messages.at(-1)).toMatchObject({ type: 'error', code: 'slow_consumer' })
    c.destroy()
    await drained()
  })

  it('a history subscriber that stops reading is closed with 4413 after the stall timeout', async () => {
    // The blocks that overflowed the live subscriber's socket overflow this one too.
    if (big[0] === undefined) for (let i = 0; i < 30; i++) big[i ? 1 : 0] = await mineBig()
    const [from, to] = big as [number, number]
    const c = await rawClient(server.port, `/v1/api/logs?chains=DEVNET&from_block=${from}&to_block=${to}`, ALICE)
    c.pause()
    const before = live.stats.slowConsumerCloses
    while (live.stats.slowConsumerCloses === before) await new Promise(r => setTimeout(r, 20))
    expect(await c.resume()).toBe(4413)
    const error = c.messages.at(-1)
    expect(error).toMatchObject({ type: 'error', code: 'slow_consumer' })
    // The cursor it reports is where a resume continues.
    const last = c.messages.filter(m => m.type === 'progress').at(-1)
    expect(error.cursor).toBe(last?.cursor ?? from - 1)
    c.destroy()
    await drained()
  })

  it('a history subscriber that never acks and reads in bursts gets all of a history larger than every buffer, then end', async () => {
    const from = await mineBig()
    let to = from
    for (let i = 0; i < 9; i++) to = await mineBig()
    const c = await rawClient(server.port, `/v1/api/logs?chains=DEVNET&from_block=${from}&to_block=${to}`, ALICE)
    let open = true
    const code = c.resume()
    void code.then(() => (open = false))
    while (open) {
      c.pause()
      await new Promise(r => setTimeout(r, 60))
      void c.resume()
      await new Promise(r => setTimeout(r, 40))
    }
    expect(await code).toBe(1000)
    const rows = c.messages.filter(m => m.type === 'rows').flatMap(m => m.rows)
    expect(JSON.stringify(rows).length).toBeGreaterThan(8 * 1024 * 1024)
    expect(rows).toEqual(await chain.logRecords(from, to))
    expect(c.messages.at(-1)).toEqual({ type: 'end', cursor: to })
    c.destroy()
    await drained()
  })
})

describe('sockets waiting to authenticate', () => {
  it('caps them per client address with 429, while an authenticated client still gets in', async () => {
    const capped = await startLiveServer({ limits: { maxPendingAuthPerClient: 2, authTimeoutMs: 10_000 } })
    try {
      const url = `${capped.wsUrl}/v1/api/logs?chains=DEVNET&from_block=0&to_block=0`
      const waiting = [await wsClient(url), await wsClient(url)]
      await expect(wsClient(url)).rejects.toMatchObject({ status: 429, body: { error: { code: 'too_many_pending' } } })
      const signed = await wsClient(url, { headers: ALICE })
      await signed.waitFor(m => m.type === 'subscribed' || m.type === 'error')
      waiting[0].send(JSON.stringify({ type: 'auth', user: 'alice', password: 'secret' }))
      await waiting[0].waitFor(m => m.type === 'subscribed' || m.type === 'error')
      const next = await wsClient(url)
      for (const c of [...waiting, signed, next]) c.close()
    } finally {
      await capped.close()
    }
  })
})

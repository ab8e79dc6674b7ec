/**
 * Per-user limits through the app and the Node server: the request rate (429
 * too_many_requests with Retry-After; a WebSocket that authenticates by message is
 * closed with 4429), the concurrent data streams (429 too_many_streams), whose
 * slots come back however a stream ends, the storage read per user (429 too_much_read)
 * and the fair shares of the CPU (src/api/fair.ts).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { ReadAllowance, REFUSAL_HOLD_MS, StreamSlots, WindowLimiter } from '../../src/api/limits.ts'
import { FairShare } from '../../src/api/fair.ts'
import { createApp } from '../../src/http/app.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { countingStore } from '../../src/store/counting.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { globalClient, wsClient } from '../live/helpers.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { buildHttpLake } from './fixture.ts'

const USERS = 'alice:wonderland,bob:builder'
const ALICE = basic('alice', 'wonderland')
const BOB = basic('bob', 'builder')
const EXPORT = '/v1/api/logs?chains=ETH&from_block=100&format=csv'

let store: ObjectStore
beforeAll(async () => {
  store = (await tempStore()).store
  await buildHttpLake(store)
})
afterAll(removeTempDirs)

type Envelope = { error: { status: number; code: string; message: string } }

describe('concurrent streams per user', () => {
  let streams: StreamSlots
  let app: ReturnType<typeof createApp>
  beforeAll(async () => {
    streams = new StreamSlots(2)
    app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers(USERS), limits: { streams } })
  })
  const get = (path: string, auth = ALICE, method = 'GET') =>
    app.fetch(new Request(`http://api.example.com${path}`, { method, headers: { authorization: auth } }))

  it('refuses a stream over the cap with 429 and Retry-After, per user, until one ends', async () => {
    const a = await get(EXPORT)
    const b = await get(EXPORT.replace('csv', 'json_stream'))
    expect([a.status, b.status]).toEqual([200, 200])
    const refused = await get(EXPORT)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(((await refused.json()) as Envelope).error).toMatchObject({ status: 429, code: 'too_many_streams' })
    // Status is not a stream, and another user has slots of their own.
    expect((await get('/v1/api/status')).status).toBe(200)
    const other = await get(EXPORT, BOB)
    expect(other.status).toBe(200)
    await other.body!.cancel()
    // A stream read to its end gives its slot back; so does one the client abandons.
    const text = await a.text()
    expect(text.split('\n').length).toBeGreaterThan(100)
    expect(streams.count('alice')).toBe(1)
    await b.body!.cancel()
    expect(streams.count('alice')).toBe(0)
  })

  it('gives the slot back after an error answer and after a HEAD', async () => {
    expect((await get('/v1/api/logs?chains=ETH&from_block=900000&to_block=900001')).status).toBe(404)
    expect(streams.count('alice')).toBe(0)
    expect((await get('/v1/api/logs?chains=ETH&from_block=100&to_block=101', ALICE, 'HEAD')).status).toBe(200)
    expect(streams.count('alice')).toBe(0)
    const held = await Promise.all([get(EXPORT), get(EXPORT)])
    expect((await get(EXPORT)).status).toBe(429)
    for (const r of held) await r.body!.cancel()
    expect(streams.count('alice')).toBe(0)
  })
})

/** `inner` whose reads of keys matching `shut` wait until it is cleared (reads asked meanwhile answer then). */
function gatedStore(inner: ObjectStore) {
  let shut: RegExp | null = null
  let waiters: (() => void)[] = []
  const pass = async (key: string) => {
    while (shut?.test(key)) await new Promise<void>(resolve => waiters.push(resolve))
  }
  const store: ObjectStore = {
    get: async (key, range) => (await pass(key), inner.get(key, range)),
    head: async key => (await pass(key), inner.head(key)),
    list: async prefix => (await pass(prefix), inner.list(prefix)),
    put: (key, body, options) => inner.put(key, body, options),
    delete: key => inner.delete(key),
  }
  return {
    store,
    shut: (keys: RegExp) => void (shut = keys),
    open: () => {
      shut = null
      for (const go of waiters.splice(0)) go()
    },
  }
}

describe('slots of requests that die before their body ends (Node server, real sockets)', () => {
  let server: NodeServer
  let streams: StreamSlots
  let gate: ReturnType<typeof gatedStore>
  beforeAll(async () => {
    gate = gatedStore(store)
    streams = new StreamSlots()
    server = await startNodeServer({ store: gate.store, users: await parseUsers(USERS), streams, waitForNodes: false })
  })
  afterAll(() => server.close())

  /** A GET over its own socket, answered once the response's headers are in. */
  const open = (path: string) => {
    const req = httpRequest(`${server.url}${path}`, { headers: { authorization: ALICE } })
    req.on('error', () => {})
    const response = new Promise<IncomingMessage>(resolve => req.on('response', resolve))
    req.end()
    return { req, response }
  }

  /** Every one of the user's 8 streams at once is served, then dropped. */
  async function allEight(): Promise<void> {
    const held = Array.from({ length: streams.max }, () => open(EXPORT))
    const statuses = await Promise.all(held.map(async h => (await h.response).statusCode))
    expect(statuses).toEqual(Array(streams.max).fill(200))
    for (const h of held) h.req.destroy()
    await vi.waitFor(() => expect(streams.count('alice')).toBe(0))
  }

  it('gives back the slots of requests whose client went away before their body started', async () => {
    // Storage does not answer: every request is stuck in its planning, holding a slot.
    gate.shut(/./)
    const dropped = Array.from({ length: streams.max }, () => open(EXPORT))
    await vi.waitFor(() => expect(streams.count('alice')).toBe(streams.max))
    for (const d of dropped) d.req.destroy()
    // Given back when the client goes (the request's abort signal), while the requests still wait for storage.
    await vi.waitFor(() => expect(streams.count('alice')).toBe(0))
    gate.open()
    await allEight()
  })

  it('gives back the slots of requests whose client went away during their body', async () => {
    // The first partition answers, the second does not: each body stops after its first part.
    gate.shut(/logs\/000000000200-/)
    const dropped = Array.from({ length: streams.max }, () => open(EXPORT))
    const first = await Promise.all(
      dropped.map(async d => new Promise<number>(async resolve => (await d.response).once('data', b => resolve(b.length)))),
    )
    expect(first.every(n => n > 0)).toBe(true)
    expect(streams.count('alice')).toBe(streams.max)
    for (const d of dropped) d.req.destroy()
    await vi.waitFor(() => expect(streams.count('alice')).toBe(0))
    gate.open()
    await allEight()
  })
})

describe('a stream slot is a lease', () => {
  it('reclaims the slots of requests stuck without progress, and their late release frees no other slot', async () => {
    const gate = gatedStore(store)
    const streams = new StreamSlots(2, { leaseMs: 200 })
    const app = createApp({
      store: gate.store,
      manifest: new ManifestReader(gate.store),
      users: await parseUsers(USERS),
      limits: { streams },
    })
    const get = () => app.fetch(new Request(`http://api.example.com${EXPORT}`, { headers: { authorization: ALICE } }))
    // Storage never answers these two (as a request workerd cancelled as hung never ends): they hold both slots.
    gate.shut(/./)
    const stuck = [get(), get()]
    await vi.waitFor(() => expect(streams.count('alice')).toBe(2))
    expect((await get()).status).toBe(429)
    // No progress for the lease's time: both slots come back, and two new requests take them.
    await new Promise(resolve => setTimeout(resolve, 250))
    const live = [get(), get()]
    await vi.waitFor(() => expect(streams.count('alice')).toBe(2))
    expect((await get()).status).toBe(429)
    gate.open()
    // The stuck ones end after all: giving back their reclaimed leases leaves the live ones' slots held.
    for (const r of await Promise.all(stuck)) expect((await r.text()).split('\n').length).toBeGreaterThan(100)
    const served = await Promise.all(live)
    expect(served.map(r => r.status)).toEqual([200, 200])
    expect(streams.count('alice')).toBe(2)
    for (const r of served) await r.body!.cancel()
    expect(streams.count('alice')).toBe(0)
  })
})

describe('fair shares between users', () => {
  const request = (app: ReturnType<typeof createApp>, path: string, auth = BOB, method = 'GET') =>
    app.fetch(new Request(`http://api.example.com${path}`, { method, headers: { authorization: auth } }))

  it('takes a slice of the user for the planning, each read of the body and the work after each storage read', async () => {
    const turns = new FairShare()
    const asked = vi.spyOn(turns, 'turn')
    const counted = countingStore(store)
    const app = createApp({ store: counted, manifest: new ManifestReader(counted), users: await parseUsers(USERS), limits: { turns } })
    const res = await request(app, EXPORT)
    expect(res.status).toBe(200)
    expect((await res.text()).split('\n').length).toBeGreaterThan(100)
    expect(counted.counts.requests).toBeGreaterThan(2)
    expect(asked.mock.calls.every(([user]) => user === 'bob')).toBe(true)
    // One per storage read, one for the planning, at least one per read of the body (and its end).
    expect(asked.mock.calls.length).toBeGreaterThanOrEqual(counted.counts.requests + 3)
  })

  it("waits for the user's next round when its slice of this one is taken", async () => {
    const ends: (() => void)[] = []
    const turns = new FairShare({ later: fn => ends.push(fn), rescueMs: 60_000 })
    const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers(USERS), limits: { turns } })
    await turns.turn('bob')
    const pending = request(app, EXPORT)
    await vi.waitFor(() => expect(turns.load('bob')).toEqual({ started: 1, waiting: 1 }))
    // Alice's slice of this round is free: her request starts while Bob's waits.
    const alice = request(app, EXPORT, ALICE)
    await vi.waitFor(() => expect(turns.load('alice').started).toBe(1))
    expect(turns.load('bob')).toEqual({ started: 1, waiting: 1 })
    const rounds = setInterval(() => ends.splice(0).forEach(fn => fn()), 1)
    try {
      const [b, a] = await Promise.all([pending, alice])
      expect(await b.text()).toBe(await a.text())
    } finally {
      clearInterval(rounds)
    }
  })

  it('loses no slice to a HEAD, a cancelled stream or a failed request', async () => {
    const turns = new FairShare()
    const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers(USERS), limits: { turns } })
    expect((await request(app, EXPORT, BOB, 'HEAD')).status).toBe(200)
    const dropped = await request(app, EXPORT)
    const reader = dropped.body!.getReader()
    await reader.read()
    await reader.cancel()
    expect((await request(app, '/v1/api/logs?chains=ETH&from_block=900000&to_block=900001')).status).toBe(404)
    await vi.waitFor(() => expect(turns.load()).toEqual({ started: 0, waiting: 0 }))
    const res = await request(app, EXPORT)
    expect((await res.text()).split('\n').length).toBeGreaterThan(100)
  })
})

describe('storage read per user', () => {
  it('refuses the data requests of a user over its allowance with 429 too_much_read and Retry-After, held; others are served', async () => {
    const reads = new ReadAllowance({ bytes: 1000, periodSeconds: 60 })
    const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers(USERS), limits: { reads } })
    const get = (path: string, auth = ALICE) =>
      app.fetch(new Request(`http://api.example.com${path}`, { headers: { authorization: auth } }))
    // The first export is served whole; what it read is charged when it ends.
    const first = await get(EXPORT)
    expect(first.status).toBe(200)
    expect((await first.text()).split('\n').length).toBeGreaterThan(100)
    const asked = performance.now()
    const refused = await get(EXPORT)
    expect(performance.now() - asked).toBeGreaterThanOrEqual(REFUSAL_HOLD_MS - 5)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(1)
    expect(((await refused.json()) as Envelope).error).toMatchObject({ status: 429, code: 'too_much_read' })
    // Status reads no data; Bob has an allowance of his own.
    expect((await get('/v1/api/status')).status).toBe(200)
    const other = await get(EXPORT, BOB)
    expect(other.status).toBe(200)
    await other.text()
  })
})

describe('request rate per user (Node server)', () => {
  let server: NodeServer
  beforeAll(async () => {
    server = await startNodeServer({
      store,
      users: await parseUsers(USERS),
      requests: new WindowLimiter({ limit: 3, periodSeconds: 60 }),
      waitForNodes: false,
    })
  })
  afterAll(() => server.close())
  const get = (path: string, auth = ALICE) => fetch(`${server.url}${path}`, { headers: { authorization: auth } })

  it('answers 429 too_many_requests with Retry-After once a user is over the rate; others are served', async () => {
    for (let i = 0; i < 3; i++) expect((await get('/v1/api/logs?chains=ETH&from_block=100&to_block=101')).status).toBe(200)
    const asked = performance.now()
    const refused = await get('/v1/api/status')
    expect(refused.status).toBe(429)
    // held before it is sent, so a client retrying in a loop makes one request a second, not hundreds
    expect(performance.now() - asked).toBeGreaterThanOrEqual(REFUSAL_HOLD_MS - 5)
    const wait = Number(refused.headers.get('retry-after'))
    expect(wait).toBeGreaterThanOrEqual(59)
    expect(wait).toBeLessThanOrEqual(60)
    expect(((await refused.json()) as Envelope).error).toMatchObject({ status: 429, code: 'too_many_requests' })
    expect((await get('/v1/api/status', BOB)).status).toBe(200)
  })

  it('refuses an upgrade with credentials over the rate, and closes one that authenticates by message with 4429', async () => {
    const ws = server.url.replace('http', 'ws') + '/v1/api/logs?chains=ETH&from_block=100&to_block=101'
    const refused = await wsClient(ws, { headers: { authorization: ALICE } }).catch(err => err as { status: number; body: Envelope })
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'too_many_requests' } } })
    const client = await globalClient(ws)
    client.send(JSON.stringify({ type: 'auth', user: 'alice', password: 'wonderland' }))
    const closed = await client.closed
    expect(closed.code).toBe(4429)
    expect(client.messages.at(-1)).toMatchObject({ type: 'error', code: 'too_many_requests' })
    // Bob is under the rate: the same subscription is served to its end.
    const ok = await globalClient(ws)
    ok.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'builder' }))
    expect((await ok.closed).code).toBe(1000)
  })
})

/**
 * Per-user limits in workerd: the request rate counted by Cloudflare's rate-limiting
 * binding (USER_REQUESTS in wrangler.toml: 50 per 10 s, as Miniflare runs it), at a
 * request and at a WebSocket's `auth` message in the live Durable Object (close 4429),
 * the concurrent streams and the storage read the isolate counts (MAX_STREAMS_PER_USER,
 * READ_LIMIT_BYTES), and the fair shares (SCAN_CONCURRENCY).
 */
/// <reference types="@cloudflare/vitest-plugin/types" />
import { env } from 'cloudflare:workers'
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { StreamSlots } from '../../src/api/limits.ts'
import { chainKey } from '../../src/chains/registry.ts'
import { createApp } from '../../src/http/app.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { r2Store } from '../../src/store/r2.ts'
import worker from '../../src/worker/index.ts'
import { LiveChainObject } from '../../src/worker/live-object.ts'
import { ETH } from '../support/chains.ts'
import { upgradeOnWorker } from './socket.ts'
import { buildHttpLake } from '../http/fixture.ts'
import { basic } from '../support/basic.ts'

type Envelope = { error: { status: number; code: string } }
const EXPORT = '/v1/api/logs?chains=ETH&from_block=100&format=csv'

beforeAll(async () => {
  await buildHttpLake(r2Store(env.LAKE))
})

async function call(bindings: object, path: string, user: string): Promise<Response> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(
    new Request(`http://api.example.com${path}`, { headers: { authorization: basic(user, 'pw') } }) as never,
    bindings as never,
    ctx,
  )
  await waitOnExecutionContext(ctx)
  return res
}

describe('worker limits', () => {
  it("refuses a user over the rate with the binding's 429 and Retry-After, and serves other users", async () => {
    const user = `rate${Date.now()}`
    const bindings = { ...env, API_USERS: `${user}:pw,other:pw` }
    expect(env.USER_REQUESTS).toBeDefined()
    let admitted = 0
    let refused: Response | undefined
    // 50 per 10 s window: within 101 requests one is refused even if a window rolls over.
    for (let i = 0; i < 101 && !refused; i++) {
      const res = await call(bindings, '/v1/api/nothing', user)
      if (res.status === 429) refused = res
      else {
        expect(res.status).toBe(404)
        admitted++
      }
    }
    expect(refused).toBeDefined()
    expect(admitted).toBeGreaterThanOrEqual(1)
    expect(refused!.headers.get('retry-after')).toBe('10')
    expect(((await refused!.json()) as Envelope).error).toMatchObject({ status: 429, code: 'too_many_requests' })
    expect((await call(bindings, '/v1/api/status', 'other')).status).toBe(200)
  })

  it('caps the streams a user runs at once in the isolate', async () => {
    const bindings = { ...env, API_USERS: 'streamer:pw', MAX_STREAMS_PER_USER: '1' }
    const held = await call(bindings, EXPORT, 'streamer')
    expect(held.status).toBe(200)
    const refused = await call(bindings, EXPORT, 'streamer')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(((await refused.json()) as Envelope).error.code).toBe('too_many_streams')
    expect((await held.text()).length).toBeGreaterThan(1000)
    expect((await call(bindings, EXPORT, 'streamer')).status).toBe(200)
  })

  it('refuses a user whose data responses read more than READ_LIMIT_BYTES with 429 too_much_read', async () => {
    const bindings = { ...env, API_USERS: 'reader:pw,other:pw', READ_LIMIT_BYTES: '1000' }
    const first = await call(bindings, EXPORT, 'reader')
    expect(first.status).toBe(200)
    expect((await first.text()).length).toBeGreaterThan(1000)
    const refused = await call(bindings, EXPORT, 'reader')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(((await refused.json()) as Envelope).error.code).toBe('too_much_read')
    expect((await call(bindings, EXPORT, 'other')).status).toBe(200)
  })

  it('serves concurrent exports of several users whole with the fair shares on (SCAN_CONCURRENCY)', async () => {
    const bindings = { ...env, API_USERS: 'fair1:pw,fair2:pw,fair3:pw', SCAN_CONCURRENCY: '1' }
    const alone = await (await call(bindings, EXPORT, 'fair1')).text()
    const texts = await Promise.all(
      ['fair1', 'fair2', 'fair3', 'fair1', 'fair2'].map(async user => (await call(bindings, EXPORT, user)).text()),
    )
    expect(alone.split('\n').length).toBeGreaterThan(100)
    for (const t of texts) expect(t).toBe(alone)
  })

  it('closes a socket that authenticates by message over the rate with 4429 too_many_requests (the Durable Object asks the binding)', async () => {
    const user = `flooder${Date.now()}`
    const LIVE = (env as unknown as { LIVE: DurableObjectNamespace }).LIVE
    // Miniflare's windows are aligned to the clock (10 s): begin early in one, so the `auth` below falls in it.
    const into = Date.now() % 10_000
    if (into > 4_000) await new Promise(r => setTimeout(r, 10_000 - into + 50))
    let over = false
    for (let i = 0; i <= 200 && !over; i++) over = !(await env.USER_REQUESTS.limit({ key: user })).success
    expect(over).toBe(true)

    // No credentials at the upgrade: the socket waits in the chain's object for its `auth` message.
    const client = '192.0.2.44'
    const { texts, closed } = await upgradeOnWorker('/v1/api/logs?chains=ETH&from_block=140&to_block=141', `${user}:pw`, {
      'cf-connecting-ip': client,
    })

    // The object's users come from its own env (wrangler.toml has none): an instance on the same state that knows the user takes the message.
    await runInDurableObject(LIVE.get(LIVE.idFromName(chainKey(ETH))), async (_old, state) => {
      const mine = state.getWebSockets().filter(ws => (ws.deserializeAttachment() as { client?: string } | null)?.client === client)
      expect(mine.length).toBe(1)
      const fresh = new LiveChainObject(state, { ...env, LIVE, API_USERS: `${user}:pw` } as never)
      const sessions = (fresh as unknown as { sessions: Map<WebSocket, unknown> }).sessions
      for (let i = 0; i < 100 && !sessions.has(mine[0]); i++) await new Promise(r => setTimeout(r, 20))
      await fresh.webSocketMessage(mine[0], JSON.stringify({ type: 'auth', user, password: 'pw' }))
    })

    expect(await closed).toBe(4429)
    expect(JSON.parse(texts.at(-1)!)).toMatchObject({ type: 'error', code: 'too_many_requests' })
    expect(texts.some(t => t.startsWith('{"type":"rows"'))).toBe(false)
  })
})

/** The R2 store, whose reads wait while `shut` (they answer once it opens). */
function gatedR2() {
  const inner = r2Store(env.LAKE)
  let shut = false
  let waiters: (() => void)[] = []
  const pass = async () => {
    while (shut) await new Promise<void>(resolve => waiters.push(resolve))
  }
  const store: ObjectStore = {
    get: async (key, range) => (await pass(), inner.get(key, range)),
    head: async key => (await pass(), inner.head(key)),
    list: async prefix => (await pass(), inner.list(prefix)),
    put: (key, body, options) => inner.put(key, body, options),
    delete: key => inner.delete(key),
  }
  return {
    store,
    shut: () => void (shut = true),
    open: () => {
      shut = false
      for (const go of waiters.splice(0)) go()
    },
  }
}

describe('stream slots in workerd', () => {
  const USERS = 'alice:pw'
  const get = (app: ReturnType<typeof createApp>, signal?: AbortSignal) =>
    app.fetch(new Request(`http://api.example.com${EXPORT}`, { headers: { authorization: basic('alice', 'pw') }, signal }))

  /** An app over a gated R2 bucket whose stream slots are `streams`. */
  const gatedApp = async (streams: StreamSlots) => {
    const gate = gatedR2()
    const app = createApp({
      store: gate.store,
      manifest: new ManifestReader(gate.store),
      users: await parseUsers(USERS),
      limits: { streams },
    })
    return { gate, app }
  }

  it('gives back the slot of a request aborted before its body, and of one aborted during it', async () => {
    const streams = new StreamSlots(8)
    const { gate, app } = await gatedApp(streams)
    gate.shut()
    const aborts = Array.from({ length: 8 }, () => new AbortController())
    const pending = aborts.map(a => get(app, a.signal))
    await vi.waitFor(() => expect(streams.count('alice')).toBe(8))
    expect((await get(app)).status).toBe(429)
    for (const a of aborts) a.abort()
    expect(streams.count('alice')).toBe(0)
    gate.open()
    await Promise.all(pending)
    // During the body: the request's signal aborts after its first chunk was read.
    const during = Array.from({ length: 8 }, () => new AbortController())
    const started = await Promise.all(during.map(a => get(app, a.signal)))
    for (const r of started) expect((await r.body!.getReader().read()).value!.length).toBeGreaterThan(0)
    expect(streams.count('alice')).toBe(8)
    for (const a of during) a.abort()
    expect(streams.count('alice')).toBe(0)
    const eight = await Promise.all(Array.from({ length: 8 }, () => get(app)))
    expect(eight.map(r => r.status)).toEqual(Array(8).fill(200))
    for (const r of eight) await r.body!.cancel()
    expect(streams.count('alice')).toBe(0)
  })

  it('reclaims the slots of requests stuck without progress (as one workerd cancels as hung)', async () => {
    const streams = new StreamSlots(2, { leaseMs: 100 })
    const { gate, app } = await gatedApp(streams)
    gate.shut()
    const stuck = [get(app), get(app)]
    await vi.waitFor(() => expect(streams.count('alice')).toBe(2))
    expect((await get(app)).status).toBe(429)
    await new Promise(resolve => setTimeout(resolve, 150))
    gate.open()
    const served = await Promise.all([get(app), get(app)])
    expect(served.map(r => r.status)).toEqual([200, 200])
    for (const r of [...served, ...(await Promise.all(stuck))]) await r.body!.cancel()
    expect(streams.count('alice')).toBe(0)
  })
})

/**
 * Per-user limits in workerd: the request rate counted by Cloudflare's rate-limiting
 * binding (USER_REQUESTS in wrangler.toml: 200 per 10 s, as Miniflare runs it), and
 * the concurrent streams the isolate counts (MAX_STREAMS_PER_USER).
 */
/// <reference types="@cloudflare/vitest-plugin/types" />
import { env } from 'cloudflare:workers'
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { r2Store } from '../../src/store/r2.ts'
import worker from '../../src/worker/index.ts'
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
    // 200 per 10 s window: within 401 requests one is refused even if a window rolls over.
    for (let i = 0; i < 401 && !refused; i++) {
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
})

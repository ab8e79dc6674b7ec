/**
 * The Worker entry in workerd (vitest Workers pool): R2 through the LAKE binding,
 * seeded with a lake written by the real partition writer and publisher.
 */
/// <reference types="@cloudflare/vitest-plugin/types" />
import { env } from 'cloudflare:workers'
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import type { Format } from '../../src/format/encode.ts'
import { r2Store } from '../../src/store/r2.ts'
import worker from '../../src/worker/index.ts'
import { DECODERS } from '../format/decode.ts'
import { buildHttpLake, canonicalRecords, inBlocks, SPANS, type HttpLake } from '../http/fixture.ts'
import { basic } from '../support/basic.ts'

let lake: HttpLake
const users = { ...env, API_USERS: 'dev:dev' }

beforeAll(async () => {
  lake = await buildHttpLake(r2Store(env.LAKE))
})

async function call(path: string, headers: Record<string, string> = {}, host = 'api.example.com'): Promise<Response> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(
    new Request(`http://${host}${path}`, { headers: { authorization: basic('dev', 'dev'), ...headers } }) as never,
    users,
    ctx,
  )
  await waitOnExecutionContext(ctx)
  return res
}

describe('worker', () => {
  it('refuses every request with 503 when API_USERS is not set', async () => {
    const ctx = createExecutionContext()
    const res = await worker.fetch(
      new Request('http://api.example.com/v1/api/status', { headers: { authorization: basic('dev', 'dev') } }) as never,
      { ...env, API_USERS: undefined },
      ctx,
    )
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_configured')
  })

  it('authenticates with API_USERS', async () => {
    const res = await call('/v1/api/status', { authorization: basic('dev', 'wrong') })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /)
  })

  it('serves status from the manifest in R2', async () => {
    const body = (await (await call('/v1/api/status')).json()) as { chain_code: string; latest_block_height: number; status: string }[]
    expect(body.find(r => r.chain_code === 'ETH')).toMatchObject({ latest_block_height: SPANS[1][1], status: 'Ok' })
  })

  it('serves the same records in every format', async () => {
    const fields = logs.fields.filter(f => !f.extra)
    const want = canonicalRecords(inBlocks(lake.rows.logs, 140, 205), fields, 1)
    for (const format of ['json', 'json_stream', 'csv', 'arrow'] as Format[]) {
      const res = await call(`/v1/api/logs?chains=ETH&from_block=140&to_block=205&format=${format}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('x-blocks-served')).toBe('140-149,200-205')
      expect(DECODERS[format](new Uint8Array(await res.arrayBuffer()), fields)).toEqual(want)
    }
  })

  it('gzips once, with encodeBody manual', async () => {
    const plain = await (await call('/v1/api/logs?chains=ETH&from_block=0&format=csv')).text()
    const res = await call('/v1/api/logs?chains=ETH&from_block=0&format=csv', { 'accept-encoding': 'gzip' })
    expect(res.headers.get('content-encoding')).toBe('gzip')
    const inflated = await new Response(res.body!.pipeThrough(new DecompressionStream('gzip'))).text()
    expect(inflated).toBe(plain)
  })

  it('routes Move hosts to their chain', async () => {
    const res = await call('/v1/api/transactions?chains=ETH', {}, 'movement.localhost')
    expect(res.status).toBe(400)
    const status = (await (await call('/v1/api/status', {}, 'movement.localhost')).json()) as { chain_code: string; status: string }[]
    expect(status).toEqual([expect.objectContaining({ chain_code: 'MOVEMENT', status: 'NoData' })])
  })
})

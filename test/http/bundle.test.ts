/**
 * The production bundle: `wrangler deploy --dry-run` must build it under the size
 * budget, and Miniflare running it the way production workerd does (no eval, no
 * `new Function`, unlike the vitest Workers pool) must serve a query in every format.
 */
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { request, type IncomingMessage } from 'node:http'
import { gunzipSync, gzipSync } from 'node:zlib'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import type { Format } from '../../src/format/encode.ts'
import { buildBundle, bundleMiniflare } from '../../scripts/dev/bundle.ts'
import { seedBucket, type SeedableBucket } from '../../scripts/dev/seed-r2.ts'
import { DECODERS } from '../format/decode.ts'

import { buildHttpLake, canonicalRecords, inBlocks, type HttpLake } from './fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

/**
 * Size budget of the Worker bundle: a sixth of Cloudflare's own limit (3 MB compressed on the
 * Free plan, 10 MB paid) once gzipped, so startup stays short; raw size bounds parse time.
 */
export const BUNDLE_BUDGET = { bytes: 2 * 1024 * 1024, gzipBytes: 512 * 1024 }

const root = join(import.meta.dirname, '..', '..')

let outdir: string
let bundle: Uint8Array
let mf: Miniflare
let lake: HttpLake

beforeAll(async () => {
  const built = await buildBundle(root)
  outdir = built.outdir
  bundle = await readFile(built.script)
  mf = await bundleMiniflare(root, outdir, { API_USERS: 'dev:dev' })
  const { store } = await tempStore()
  lake = await buildHttpLake(store)
  await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, store)
}, 180_000)

afterAll(async () => {
  await mf?.dispose()
  await rm(outdir, { recursive: true, force: true })
  await removeTempDirs()
})

/** A GET over a plain socket: no client-side decompression, headers as sent. */
function raw(url: URL, headers: Record<string, string>): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
      .on('error', reject)
      .end()
  })
}

describe('production bundle', () => {
  it(`builds under the budget (${BUNDLE_BUDGET.bytes} bytes, ${BUNDLE_BUDGET.gzipBytes} gzipped)`, () => {
    expect(bundle.length).toBeGreaterThan(10_000)
    expect(bundle.length).toBeLessThan(BUNDLE_BUDGET.bytes)
    expect(gzipSync(bundle).length).toBeLessThan(BUNDLE_BUDGET.gzipBytes)
  })

  it('runs where code generation is refused, as in production', async () => {
    const probe = new Miniflare(
      convertV4MiniflareOptions({
        modules: true,
        script:
          "export default { fetch() { try { new Function('return 1')(); return new Response('allowed') } catch { return new Response('refused') } } }",
      }),
    )
    try {
      expect(await (await probe.dispatchFetch('http://x/')).text()).toBe('refused')
    } finally {
      await probe.dispose()
    }
  })

  it('serves the same records in every format, arrow included', async () => {
    const fields = logs.fields.filter(f => !f.extra)
    const want = canonicalRecords(inBlocks(lake.rows.logs, 100, 249), fields, 1)
    for (const format of ['json', 'json_stream', 'csv', 'arrow'] as Format[]) {
      const res = await mf.dispatchFetch(`http://api.example.com/v1/api/logs?chains=ETH&from_block=0&format=${format}`, {
        headers: { authorization: basic('dev', 'dev') },
      })
      expect(res.status).toBe(200)
      expect(DECODERS[format](new Uint8Array(await res.arrayBuffer()), fields)).toEqual(want)
    }
  })

  it('gzips exactly once', async () => {
    const url = new URL('/v1/api/logs?chains=ETH&from_block=0&format=json_stream', await mf.ready)
    const headers = { authorization: basic('dev', 'dev'), host: 'api.example.com' }
    const plain = await raw(url, headers)
    expect(plain.headers['content-encoding']).toBe(undefined)
    const zipped = await raw(url, { ...headers, 'accept-encoding': 'gzip' })
    expect(zipped.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(zipped.body).toString()).toBe(plain.body.toString())
  })

  it('routes a Move host and answers errors as JSON', async () => {
    const res = await mf.dispatchFetch('http://aptos.localhost/v1/api/blocks?chains=APTOS', {
      headers: { authorization: basic('dev', 'dev') },
    })
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found')
  })

  it("gives a user's stream slots back when clients go before or during their bodies (MAX_STREAMS_PER_USER 8)", async () => {
    const url = new URL('/v1/api/logs?chains=ETH&from_block=0&format=csv', await mf.ready)
    const open = () => {
      const req = request(url, { headers: { authorization: basic('dev', 'dev'), host: 'api.example.com' } })
      req.on('error', () => {})
      const response = new Promise<IncomingMessage>(resolve => req.on('response', resolve))
      req.end()
      return { req, response }
    }
    // Eight go while the Worker plans them (before any byte of the answer), eight after the first bytes of their body.
    for (const d of Array.from({ length: 8 }, open)) setTimeout(() => d.req.destroy(), 2)
    const during = Array.from({ length: 8 }, open)
    await Promise.all(during.map(async d => new Promise(async resolve => (await d.response).once('data', resolve))))
    for (const d of during) d.req.destroy()
    // All eight slots come back (long before a stale lease would be reclaimed, 30 s): eight streams at once are served.
    await expect
      .poll(
        async () => {
          const held = Array.from({ length: 8 }, open)
          const statuses = await Promise.all(held.map(async h => (await h.response).statusCode))
          for (const h of held) h.req.destroy()
          return statuses.filter(s => s === 200).length
        },
        { timeout: 10_000, interval: 500 },
      )
      .toBe(8)
  })
})

/**
 * The production bundle under faults, in Miniflare as production workerd runs it: a
 * socket that never authenticates is told so and closed with 4401 (the close path of the
 * Durable Object's alarm), and a partition deleted after the isolate read the manifest
 * that names it fails visibly, over HTTP (503 storage_corrupt) and over a WebSocket (an
 * error, then 4503), never as a complete answer.
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildBundle, bundleMiniflare } from '../../scripts/dev/bundle.ts'
import { seedBucket, type SeedableBucket } from '../../scripts/dev/seed-r2.ts'
import { buildHttpLake } from '../http/fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const root = join(import.meta.dirname, '..', '..')
let outdir: string
let mf: Miniflare

beforeAll(async () => {
  outdir = (await buildBundle(root)).outdir
  mf = await bundleMiniflare(root, outdir, { API_USERS: 'dev:dev' })
  const { store } = await tempStore()
  await buildHttpLake(store)
  await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, store)
}, 180_000)

afterAll(async () => {
  await mf?.dispose()
  await rm(outdir, { recursive: true, force: true })
  await removeTempDirs()
})

/** Opens a WebSocket on the bundle; its messages and how it closed. */
async function socket(path: string, headers: Record<string, string> = {}) {
  const res = await mf.dispatchFetch(`http://api.example.com${path}`, { headers: { upgrade: 'websocket', ...headers } })
  expect(res.status).toBe(101)
  const ws = res.webSocket!
  const messages: { type: string; code?: string }[] = []
  const closed = new Promise<number>(resolve => ws.addEventListener('close', e => resolve(e.code)))
  ws.addEventListener('message', e => messages.push(JSON.parse(String(e.data))))
  ws.accept()
  return { messages, closed }
}

describe('production bundle under faults', () => {
  it('closes a WebSocket that never authenticates with an error and 4401', async () => {
    const started = Date.now()
    const s = await socket('/v1/api/logs?chains=ETH&from_block=100&to_block=101')
    expect(await s.closed).toBe(4401)
    expect(s.messages).toEqual([expect.objectContaining({ type: 'error', code: 'unauthorized' })])
    expect(Date.now() - started).toBeGreaterThanOrEqual(9_000)
  }, 60_000)

  it('fails visibly when a partition is deleted after the manifest that names it was read', async () => {
    const path = '/v1/api/logs?chains=ETH&from_block=200&to_block=249&format=csv'
    const auth = { authorization: basic('dev', 'dev') }
    const before = await mf.dispatchFetch(`http://api.example.com${path}`, { headers: auth })
    expect(before.status).toBe(200)
    await before.arrayBuffer()
    const bucket = await mf.getR2Bucket('LAKE')
    const gone = (await bucket.list({ prefix: 'evm-1/logs/' })).objects.map(o => o.key).filter(k => k.includes('000000000200-'))
    expect(gone.length).toBeGreaterThan(0)
    for (const key of gone) await bucket.delete(key)

    const res = await mf.dispatchFetch(`http://api.example.com${path}`, { headers: auth })
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('storage_corrupt')

    const s = await socket('/v1/api/logs?chains=ETH&from_block=200&to_block=249', auth)
    expect(await s.closed).toBe(4503)
    expect(s.messages.some(m => m.type === 'end')).toBe(false)
    expect(s.messages.at(-1)).toMatchObject({ type: 'error', code: 'storage_corrupt' })
  }, 60_000)
})

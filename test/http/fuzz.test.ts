/**
 * Random and hostile requests at every endpoint, through the app and through the
 * Node server: only documented statuses, every error a JSON envelope, every 200
 * body complete, nothing logged as unexpected. Deterministic (fixed seed), bounded.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/http/app.ts'
import { WindowLimiter } from '../../src/api/limits.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { serve, type RunningServer } from '../../src/node/serve.ts'
import { DATASETS } from '../../src/api/datasets.ts'
import { rng } from '../query/lake.ts'
import { buildHttpLake } from './fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

/** Every status the API documents (503 needs a storage failure, which this test does not cause). */
const DOCUMENTED = new Set([200, 204, 400, 401, 404, 405, 406, 413, 414, 429, 431])
const REQUESTS = 1500

let app: ReturnType<typeof createApp>
let server: RunningServer
const unexpected: unknown[] = []

beforeAll(async () => {
  const { store } = await tempStore()
  await buildHttpLake(store)
  app = createApp({
    store,
    manifest: new ManifestReader(store),
    users: await parseUsers('dev:dev'),
    log: (_m, e) => unexpected.push(e),
    // Inputs are what is fuzzed here, not the request rate (test/http/limits.test.ts).
    limits: { requests: new WindowLimiter({ limit: 1_000_000 }) },
  })
  server = await serve({ fetch: r => app.fetch(r), port: 0, log: (_m, e) => unexpected.push(e) })
}, 60_000)

afterAll(async () => {
  await server?.close()
  await removeTempDirs()
})

const r = rng(20260815)
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]

const PATHS = [
  '/v1/api/status',
  '/v1/api/blocks',
  '/v1/api/transactions',
  '/v1/api/logs',
  '/v1/api/transactions/decoded',
  '/v1/api/status/',
  '/v1/api/',
  '/v1/api',
  '/',
  '/v1/api/blocks/x',
  '/v1/api/%2e%2e/status',
  '/v1/api/LOGS',
  '//v1/api/logs',
  '/v1/api/logs/../blocks',
]
const HOSTS = [
  'api.example.com',
  'aptos.localhost',
  'movement.localhost:8787',
  'movement-testnet.example.com',
  'APTOS.LOCALHOST.',
  '127.0.0.1:1',
  'x',
]
const FIELDS = [...new Set(DATASETS.flatMap(d => d.fields.map(f => f.name)))]
const NAMES = [
  'chains',
  'from_block',
  'to_block',
  'from_version',
  'to_version',
  'format',
  'fields',
  'limit',
  'kind__in',
  'type__in',
  'transaction_type__in',
  '',
  'x',
  '__in',
  'chains__in',
]
const OPS = ['', '__in', '__gte', '__lte', '__gt', '__ne', '__IN', '__']
const VALUES = [
  '',
  '%00',
  '%00,%00',
  'latest',
  'LATEST',
  '0',
  '1',
  '-1',
  '0x',
  '0x0',
  '0xZZ',
  '1e9',
  '1.5',
  '9007199254740993',
  '184467440737095516160',
  '0x' + 'f'.repeat(64),
  '0x' + 'F'.repeat(65),
  '0x' + '1'.repeat(40),
  '0x' + 'ab'.repeat(32),
  'ETH',
  'eth',
  '1',
  '31337',
  'APTOS',
  'MOVEMENT',
  'ETH,DEVNET',
  'json',
  'json_stream',
  'csv',
  'arrow',
  'xml',
  'true',
  'false',
  'UserTransaction',
  'é',
  '%F0%9F%92%A5',
  '%ZZ',
  '%',
  "';--",
  '../../etc',
  'a'.repeat(3000),
  Array.from({ length: 1200 }, (_, i) => i).join(','),
  'hash,block_number',
  'nope,hash',
  '100',
  '0xc8',
  '249',
  '10000',
  '20000',
]
const ACCEPTS = [
  undefined,
  '*/*',
  'application/json',
  'application/jsonstream',
  'text/csv',
  'application/vnd.apache.arrow.stream',
  'text/html',
  'image/*;q=0',
  'application/json;q=0.0001, text/csv;q=0',
  ';;;',
  'a/b/c',
  '*/*;q=abc',
]
const ENCODINGS = [undefined, 'gzip', 'br', 'gzip;q=0', '*', 'identity', 'x-gzip, deflate', 'garbage;;']
const AUTHS = [
  basic('dev', 'dev'),
  basic('dev', 'dev'),
  basic('dev', 'dev'),
  basic('dev', 'dev'),
  undefined,
  basic('dev', 'x'),
  'Basic',
  'Basic ====',
  'Basic ' + btoa('dev'),
  'bearer dev',
  'Basic ' + 'A'.repeat(5000),
]
const METHODS = ['GET', 'GET', 'GET', 'GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']

function randomQuery(): string {
  const parts: string[] = []
  const n = Math.floor(r() * 6)
  if (r() < 0.8) parts.push(`chains=${pick(['ETH', 'eth', '1', 'APTOS', 'MOVEMENT_TESTNET', 'ethereum-mainnet', 'DEVNET', 'x'])}`)
  if (r() < 0.7) parts.push(`from_block=${pick(['0', '100', '140', '0x64', 'latest', '200', '150'])}`)
  for (let i = 0; i < n; i++) {
    const name = r() < 0.5 ? pick(NAMES) : pick(FIELDS) + pick(OPS)
    parts.push(`${name}=${pick(VALUES)}`)
  }
  return parts.length ? '?' + parts.join('&') : ''
}

function randomRequest(): { method: string; path: string; host: string; headers: Record<string, string> } {
  // Half the requests are valid ones with a random part changed, so every status is reached.
  const plausible = r() < 0.5
  const headers: Record<string, string> = {}
  const set = (name: string, v: string | undefined) => v !== undefined && (headers[name] = v)
  set('authorization', plausible || r() < 0.5 ? basic('dev', 'dev') : pick(AUTHS))
  set('accept', plausible && r() < 0.7 ? undefined : pick(ACCEPTS))
  set('accept-encoding', pick(ENCODINGS))
  if (r() < 0.1) headers.upgrade = 'websocket'
  if (r() < 0.1) headers['x-forwarded-host'] = 'aptos.localhost'
  const method = plausible || r() < 0.5 ? 'GET' : pick(METHODS)
  const path = plausible
    ? pick(PATHS.slice(0, 4)) + '?chains=ETH&from_block=' + pick(['100', '0', '140', 'latest']) + randomQuery().replace('?', '&')
    : pick(PATHS) + randomQuery()
  return { method, path, host: plausible ? 'api.example.com' : pick(HOSTS), headers }
}

async function check(res: Response, method: string, where: string): Promise<void> {
  expect(DOCUMENTED.has(res.status), `${where} → ${res.status}`).toBe(true)
  if (res.status === 204) {
    expect(method).toBe('OPTIONS')
    return
  }
  if (res.status === 200) {
    await res.arrayBuffer()
    return
  }
  if (method === 'HEAD') {
    // A HEAD answer has the GET answer's status and headers, never a body.
    expect(await res.text()).toBe('')
    return
  }
  expect(res.headers.get('content-type'), where).toMatch(/^application\/json/)
  const body = (await res.json()) as { error: { status: number; code: string; message: string } }
  expect(body.error.status, where).toBe(res.status)
  expect(typeof body.error.code).toBe('string')
  expect(typeof body.error.message).toBe('string')
}

describe('fuzz', () => {
  it(`gives ${REQUESTS} random requests only documented answers (app)`, async () => {
    const seen = new Map<number, number>()
    for (let i = 0; i < REQUESTS; i++) {
      const req = randomRequest()
      const res = await app.fetch(new Request(`http://${req.host}${req.path}`, { method: req.method, headers: req.headers }))
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1)
      await check(res, req.method, `${req.method} ${req.host}${req.path.slice(0, 200)}`)
    }
    expect(unexpected).toEqual([])
    // The mix reached the interesting statuses, not only 401s.
    for (const status of [200, 400, 401, 404, 405]) expect(seen.get(status) ?? 0).toBeGreaterThan(10)
  }, 300_000)

  it('gives random requests over real HTTP only documented answers', async () => {
    for (let i = 0; i < 200; i++) {
      const req = randomRequest()
      delete req.headers.upgrade // fetch refuses to send it
      const res = await fetch(`${server.url}${req.path}`, { method: req.method, headers: { ...req.headers, host: req.host } })
      await check(res, req.method, `${req.method} ${req.path.slice(0, 200)}`)
    }
    expect(unexpected).toEqual([])
  }, 120_000)

  it('answers malformed HTTP with the JSON envelope or closes the connection', async () => {
    const hostile = [
      'GET /v1/api/status HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n',
      'GET /v1/api/status HTTP/1.1\r\nHost: a\r\nX: \u0001\r\n\r\n',
      'GARBAGE\r\n\r\n',
      'GET /v1/api/status?x=\u00ff HTTP/1.1\r\nHost: a\r\n\r\n',
      `GET /v1/api/status HTTP/1.1\r\nHost: a\r\nX: ${'a'.repeat(70_000)}\r\n\r\n`,
      'GET http://aptos.localhost/v1/api/status HTTP/1.1\r\nHost: [::1\r\nAuthorization: ' + basic('dev', 'dev') + '\r\n\r\n',
      'GET /v1/api/status HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc',
    ]
    const { port } = server
    for (const text of hostile) {
      const reply = await new Promise<string>(resolve => {
        const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(text, 'latin1')))
        const chunks: Buffer[] = []
        socket.on('data', c => chunks.push(c))
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
        socket.on('error', () => {})
      })
      if (reply === '') continue
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1])
      expect(DOCUMENTED.has(status), `${JSON.stringify(text.slice(0, 60))} → ${reply.slice(0, 80)}`).toBe(true)
      if (status !== 200)
        expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, '')).error.status).toBe(
          status,
        )
    }
    expect(unexpected).toEqual([])
  })
})

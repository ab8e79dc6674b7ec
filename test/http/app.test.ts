import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHAINS } from '../../src/chains/registry.ts'
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { moveDecodedTransactions, moveTransactions } from '../../src/datasets/move.ts'
import type { Format } from '../../src/format/encode.ts'
import { WindowLimiter } from '../../src/api/limits.ts'
import { createApp } from '../../src/http/app.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { MAX_JSON_BLOCK_RANGE } from '../../src/api/params.ts'
import { STATUS_FIELDS } from '../../src/http/status.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { countingStore } from '../../src/store/counting.ts'
import { StorageError, type ObjectStore } from '../../src/store/types.ts'
import { DECODERS, type Canonical } from '../format/decode.ts'
import { buildLake, makePools, rng, makeRows, type Row } from '../query/lake.ts'
import { buildHttpLake, canonicalRecords, hexOf, inBlocks, LATEST, SPANS, type HttpLake } from './fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const AUTH = basic('alice', 'wonderland')
const APTOS = CHAINS.find(c => c.code === 'APTOS')!

let store: ObjectStore
let lake: HttpLake
let moveRows: Row[]
let app: ReturnType<typeof createApp>
const logged: unknown[] = []

/** Makes a Move lake of one row per version for APTOS: versions 1000-1059. */
async function buildMoveLake(target: ObjectStore): Promise<Row[]> {
  const r = rng(11)
  const pools = makePools(r)
  const rows: Row[] = []
  for (let v = 1000; v < 1060; v++) {
    let row: Row | undefined
    while (!row) row = makeRows(moveTransactions, [v], r, pools, 1)[0]
    row.kind = v % 3 === 0 ? 'BlockMetadataTransaction' : 'UserTransaction'
    row.block_metadata_failed_proposer_indices = '[]'
    rows.push(row)
  }
  await buildLake(target, APTOS, moveTransactions, [{ from: 1000, to: 1059, rows }], { rowGroupSize: 20 })
  return rows
}

beforeAll(async () => {
  store = (await tempStore()).store
  lake = await buildHttpLake(store)
  moveRows = await buildMoveLake(store)
  app = createApp({
    store,
    manifest: new ManifestReader(store),
    users: await parseUsers('alice:wonderland'),
    log: (_m, e) => logged.push(e),
    // One user sends this file's hundreds of requests; the rate has tests of its own (test/http/limits.test.ts).
    limits: { requests: new WindowLimiter({ limit: 1_000_000 }) },
  })
})
afterAll(removeTempDirs)

const get = (path: string, headers: Record<string, string> = {}, host = 'api.example.com') =>
  app.fetch(new Request(`http://${host}${path}`, { headers: { authorization: AUTH, ...headers } }))

async function records(res: Response, format: Format, fields: readonly FieldDecl[]): Promise<Canonical[]> {
  expect(res.status).toBe(200)
  return DECODERS[format](new Uint8Array(await res.arrayBuffer()), fields)
}

async function errorOf(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  const body = (await res.json()) as { error: Record<string, any> }
  expect(body.error.status).toBe(res.status)
  return body.error
}

const defaults = (fields: readonly FieldDecl[]) => fields.filter(f => !f.extra)

describe('authentication', () => {
  it('refuses a request without or with wrong credentials, status included', async () => {
    for (const headers of [{}, { authorization: basic('alice', 'nope') }, { authorization: 'Bearer x' }] as Record<string, string>[]) {
      const res = await app.fetch(new Request('http://api.example.com/v1/api/status', { headers }))
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="/)
      expect((await errorOf(res)).code).toBe('unauthorized')
    }
  })

  it('refuses everything with a 503 when no users are configured', async () => {
    const closed = createApp({ store, manifest: new ManifestReader(store), users: null })
    const res = await closed.fetch(new Request('http://api.example.com/v1/api/status', { headers: { authorization: AUTH } }))
    expect(res.status).toBe(503)
    expect((await errorOf(res)).code).toBe('not_configured')
  })
})

describe('access log', () => {
  it('writes one line per request: user, path, status, and for a stream its rows, storage I/O and how it ended', async () => {
    const lines: string[] = []
    const logged = createApp({
      store,
      manifest: new ManifestReader(store),
      users: await parseUsers('alice:wonderland'),
      accessLog: l => lines.push(l),
    })
    const ok = await logged.fetch(
      new Request('http://api.example.com/v1/api/logs?chains=ETH&from_block=100&to_block=120', { headers: { authorization: AUTH } }),
    )
    const rows = (await ok.text()).split('\n').filter(Boolean).length
    await logged.fetch(new Request('http://api.example.com/v1/api/logs?chains=ETH', { headers: { authorization: basic('alice', 'nope') } }))
    await logged.fetch(new Request('http://api.example.com/v1/api/logs?chains=ETH&colour=red', { headers: { authorization: AUTH } }))
    const [streamed, refused, invalid] = lines.map(l => JSON.parse(l) as Record<string, unknown>)
    expect(streamed).toMatchObject({
      method: 'GET',
      path: '/v1/api/logs?chains=ETH&from_block=100&to_block=120',
      user: 'alice',
      status: 200,
      rows,
      end: 'complete',
    })
    expect(streamed.requests).toBeGreaterThan(0)
    expect(refused).toMatchObject({ status: 401, user: null, error: 'unauthorized' })
    expect(invalid).toMatchObject({ status: 400, user: 'alice', error: 'unknown_parameter' })
    expect(lines.join('\n')).not.toMatch(/nope|wonderland/)
  })

  it('says a stream that failed part-way was aborted, and why', async () => {
    const lines: string[] = []
    const counted = countingStore(store)
    const path = 'http://api.example.com/v1/api/logs?chains=ETH&from_block=0&format=json'
    await (
      await createApp({ store: counted, manifest: new ManifestReader(counted), users: await parseUsers('alice:wonderland') }).fetch(
        new Request(path, { headers: { authorization: AUTH } }),
      )
    ).text()
    let reads = 0
    const failing: ObjectStore = {
      ...store,
      get: (key, range) =>
        reads++ >= counted.counts.requests - 1 ? Promise.reject(new StorageError('R2 went away')) : store.get(key, range),
      head: k => store.head(k),
      put: (k, b, o) => store.put(k, b, o),
      list: p => store.list(p),
      delete: k => store.delete(k),
    }
    const app = createApp({
      store: failing,
      manifest: new ManifestReader(failing),
      users: await parseUsers('alice:wonderland'),
      accessLog: l => lines.push(l),
    })
    const res = await app.fetch(new Request(path, { headers: { authorization: AUTH } }))
    await res.arrayBuffer().catch(() => {})
    expect(JSON.parse(lines[0])).toMatchObject({ status: 200, end: 'aborted', cause: 'R2 went away' })
  })
})

describe('failed logins', () => {
  it('refuses an address with 429 and Retry-After once it failed too often, without checking; a user verified before still gets in, other addresses are untouched', async () => {
    const throttled = createApp({
      store,
      manifest: new ManifestReader(store),
      users: await parseUsers('alice:wonderland'),
      failedLogins: { max: 3 },
    })
    const from = (address: string, authorization: string) =>
      throttled.fetch(new Request('http://api.example.com/v1/api/status', { headers: { authorization, 'cf-connecting-ip': address } }))
    expect((await from('192.0.2.1', AUTH)).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await from('192.0.2.1', basic('alice', 'guess' + i))).status).toBe(401)
    const refused = await from('192.0.2.1', basic('alice', 'guess'))
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await errorOf(refused)).code).toBe('too_many_failures')
    expect((await from('192.0.2.1', AUTH)).status).toBe(200)
    expect((await from('192.0.2.2', basic('alice', 'guess'))).status).toBe(401)
  })
})

describe('methods and paths', () => {
  it('answers 405 with Allow for methods other than GET and HEAD', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await app.fetch(
        new Request('http://api.example.com/v1/api/blocks?chains=ETH', { method, headers: { authorization: AUTH } }),
      )
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    }
  })

  it('answers HEAD with the headers of the GET and no body', async () => {
    const url = 'http://api.example.com/v1/api/logs?chains=ETH&from_block=100&to_block=120&format=csv'
    const [head, get] = await Promise.all(
      ['HEAD', 'GET'].map(method => app.fetch(new Request(url, { method, headers: { authorization: AUTH } }))),
    )
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    for (const name of ['content-type', 'x-block-range', 'x-blocks-served']) expect(head.headers.get(name)).toBe(get.headers.get(name))
    expect((await get.text()).length).toBeGreaterThan(0)
    const unsigned = await app.fetch(new Request(url, { method: 'HEAD' }))
    expect(unsigned.status).toBe(401)
  })

  it('answers a CORS preflight without credentials', async () => {
    const res = await app.fetch(
      new Request('http://api.example.com/v1/api/logs', {
        method: 'OPTIONS',
        headers: { origin: 'https://x.test', 'access-control-request-headers': 'authorization' },
      }),
    )
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/)
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Range/)
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
  })

  it("answers 404 for unknown paths, and for the other family's endpoints", async () => {
    expect((await errorOf(await get('/v1/api/nothing?chains=ETH'))).code).toBe('not_found')
    expect((await get('/other')).status).toBe(404)
    const decoded = await errorOf(await get('/v1/api/transactions/decoded?chains=ETH'))
    expect(decoded.message).toMatch(/Move/)
    const blocksOnMove = await get('/v1/api/blocks?chains=APTOS', {}, 'aptos.localhost')
    expect(blocksOnMove.status).toBe(404)
  })
})

describe('status', () => {
  it('has one record per chain of the host with every field of the spec', async () => {
    const before = Math.floor(Date.now() / 1000) - 3600
    const res = await get('/v1/api/status')
    const body = (await res.json()) as Record<string, any>[]
    const evm = CHAINS.filter(c => c.family === 'evm')
    expect(body.map(r => r.chain_code)).toEqual(evm.map(c => c.code))
    const eth = body.find(r => r.chain_code === 'ETH')!
    expect(Object.keys(eth)).toEqual(STATUS_FIELDS.map(f => f.name))
    expect(eth).toMatchObject({
      type: 'Chain',
      chain: 1,
      chain_code: 'ETH',
      chain_name: 'ethereum-mainnet',
      service: 'chain',
      entity: 'block',
      latest_block_height: LATEST,
      status: 'Ok',
    })
    expect(eth.timestamp).toBeGreaterThan(before)
    expect(eth.timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))
    expect(eth.datasets.logs.coverage).toEqual(SPANS)
    expect(eth.datasets.blocks.rows).toBe(lake.rows.blocks.length)
    const devnet = body.find(r => r.chain_code === 'DEVNET')
    expect(devnet).toMatchObject({ status: 'NoData', latest_block_height: null, timestamp: null })
  })

  it('serves the Move host its own chain only', async () => {
    const body = (await (await get('/v1/api/status', {}, 'aptos.localhost:8787')).json()) as Record<string, any>[]
    expect(body).toHaveLength(1)
    expect(body[0]).toMatchObject({ chain: 1, chain_code: 'APTOS', latest_block_height: 1059, status: 'Ok' })
    expect(body[0].datasets['transactions/decoded'].coverage).toEqual([[1000, 1059]])
  })

  it('takes format and one chain, and refuses other parameters', async () => {
    const csv = await get('/v1/api/status?format=csv&chains=eth')
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/)
    expect((await csv.text()).trim().split('\n')).toHaveLength(2)
    expect((await errorOf(await get('/v1/api/status?from_block=1'))).parameter).toBe('from_block')
  })
})

describe('data endpoints', () => {
  it('serves the same records in all four formats, matching the source rows', async () => {
    const fields = defaults(logs.fields)
    const want = canonicalRecords(inBlocks(lake.rows.logs, 120, 210), fields, 1)
    expect(want.length).toBeGreaterThan(50)
    for (const format of ['json', 'json_stream', 'csv', 'arrow'] as Format[]) {
      const res = await get(`/v1/api/logs?chains=ETH&from_block=120&to_block=210&format=${format}`)
      expect(await records(res, format, fields)).toEqual(want)
    }
  })

  it('reports the served ranges of a range that crosses a gap, and the I/O', async () => {
    const res = await get('/v1/api/blocks?chains=eth&from_block=140&to_block=0xd2')
    expect(res.headers.get('x-block-range')).toBe('140-210')
    expect(res.headers.get('x-blocks-served')).toBe('140-149,200-210')
    expect(Number(res.headers.get('x-storage-requests'))).toBeGreaterThan(0)
    expect(Number(res.headers.get('x-bytes-fetched'))).toBeGreaterThan(0)
    expect(res.headers.get('access-control-expose-headers')).toMatch(/X-Blocks-Served/)
    const got = await records(res, 'json_stream', defaults(blocks.fields))
    expect(got.map(r => r.block_number)).toEqual([...range(140, 149), ...range(200, 210)].map(b => '0x' + b.toString(16)))
  })

  it('defaults to the latest block, json_stream', async () => {
    const res = await get('/v1/api/blocks?chains=ETH')
    expect(res.headers.get('content-type')).toMatch(/^application\/jsonstream/)
    const got = await records(res, 'json_stream', defaults(blocks.fields))
    expect(got.map(r => r.block_number)).toEqual(['0x' + LATEST.toString(16)])
  })

  it('answers a poll from above the newest block (to_block omitted or latest) with 200, no rows, and X-Latest-Block', async () => {
    const fields = defaults(logs.fields)
    for (const format of ['json', 'json_stream', 'csv', 'arrow'] as const) {
      for (const to of ['', '&to_block=latest']) {
        const res = await get(`/v1/api/logs?chains=ETH&from_block=${LATEST + 1}${to}&format=${format}`)
        expect(res.status, `${format}${to}`).toBe(200)
        expect(res.headers.get('x-latest-block')).toBe(String(LATEST))
        expect(res.headers.get('x-blocks-served')).toBe('')
        expect(await records(res, format, fields)).toEqual([])
      }
    }
    const res = await get(`/v1/api/logs?chains=ETH&from_block=${LATEST}`)
    expect(res.headers.get('x-latest-block')).toBe(String(LATEST))
    expect(res.headers.get('x-block-range')).toBe(`${LATEST}-${LATEST}`)
  })

  it('answers 404 with the coverage for a range wholly in a gap or past the data', async () => {
    for (const q of ['from_block=150&to_block=199', 'from_block=1000&to_block=2000']) {
      const err = await errorOf(await get(`/v1/api/transactions?chains=ETH&${q}`))
      expect(err.code).toBe('no_data')
      expect(err.coverage).toEqual(SPANS)
    }
    const empty = await errorOf(await get('/v1/api/transactions?chains=DEVNET&from_block=0'))
    expect(empty.code).toBe('no_data')
  })

  it('filters to__in=%00 to contract deployments', async () => {
    const fields = defaults(transactions.fields)
    const want = canonicalRecords(
      lake.rows.transactions.filter(r => r.to === null),
      fields,
      1,
    )
    expect(want.length).toBeGreaterThan(0)
    expect(await records(await get('/v1/api/transactions?chains=ETH&from_block=0&to__in=%00'), 'json_stream', fields)).toEqual(want)
  })

  it('gives the same answer to value__gte in decimal and in hex', async () => {
    const fields = defaults(transactions.fields)
    const threshold = 2n ** 200n
    const want = canonicalRecords(
      lake.rows.transactions.filter(r => BigInt(hexOf(r.value)) >= threshold),
      fields,
      1,
    )
    expect(want.length).toBeGreaterThan(0)
    expect(want.length).toBeLessThan(lake.rows.transactions.length)
    const dec = await records(await get(`/v1/api/transactions?chains=ETH&from_block=0&value__gte=${threshold}&format=csv`), 'csv', fields)
    const hex = await records(
      await get(`/v1/api/transactions?chains=ETH&from_block=0&value__gte=0x${threshold.toString(16)}&format=csv`),
      'csv',
      fields,
    )
    expect(dec).toEqual(want)
    expect(hex).toEqual(want)
  })

  it('filters logs by address and topic0 lists', async () => {
    const fields = defaults(logs.fields)
    const addresses = [...new Set(lake.rows.logs.map(r => hexOf(r.address)))].slice(0, 2)
    const topic = lake.rows.logs.find(r => r.topic0 !== null)!.topic0
    const want = canonicalRecords(
      lake.rows.logs.filter(r => addresses.includes(hexOf(r.address)) && r.topic0 !== null && hexOf(r.topic0) === hexOf(topic)),
      fields,
      1,
    )
    expect(want.length).toBeGreaterThan(0)
    const res = await get(
      `/v1/api/logs?chains=ETH&from_block=0&address__in=${addresses.map(a => a.toUpperCase().replace('0X', '0x')).join(',')}&topic0=${hexOf(topic)}&format=arrow`,
    )
    expect(res.headers.get('x-filters-pushed-down')).toMatch(/address__in/)
    expect(await records(res, 'arrow', fields)).toEqual(want)
  })

  it('selects fields, extras included, in the order asked', async () => {
    const fields = [logs.fields.find(f => f.name === 'block_timestamp')!, logs.fields.find(f => f.name === 'log_index')!]
    const res = await get('/v1/api/logs?chains=ETH&from_block=100&to_block=110&fields=block_timestamp,log_index&format=json')
    expect(await records(res, 'json', fields)).toEqual(canonicalRecords(inBlocks(lake.rows.logs, 100, 110), fields, 1))
  })

  it('pages with limit and X-Next-From-Block, every row once', async () => {
    const fields = defaults(logs.fields)
    const seen: Canonical[] = []
    let from: string | null = '0'
    let pages = 0
    while (from !== null) {
      const res = await get(`/v1/api/logs?chains=ETH&from_block=${from}&to_block=latest&limit=50`)
      from = res.headers.get('x-next-from-block')
      seen.push(...(await records(res, 'json_stream', fields)))
      pages++
    }
    expect(pages).toBeGreaterThan(3)
    expect(seen).toEqual(canonicalRecords(lake.rows.logs, fields, 1))
  })

  it('refuses format=json over more than the documented range with 413', async () => {
    const err = await errorOf(await get(`/v1/api/logs?chains=ETH&from_block=0&to_block=${MAX_JSON_BLOCK_RANGE}&format=json`))
    expect(err.code).toBe('range_too_large')
    expect(err.message).toMatch(/json_stream/)
    expect((await get(`/v1/api/logs?chains=ETH&from_block=0&to_block=${MAX_JSON_BLOCK_RANGE - 1}&format=json`)).status).toBe(200)
    expect((await get(`/v1/api/logs?chains=ETH&from_block=0&to_block=${MAX_JSON_BLOCK_RANGE}&format=csv`)).status).toBe(200)
    expect(err.message).toMatch(/limit=/)
  })

  it('serves format=json over any range with limit, which bounds the answer', async () => {
    const res = await get(`/v1/api/logs?chains=ETH&from_block=0&to_block=${10 * MAX_JSON_BLOCK_RANGE}&format=json&limit=20`)
    expect(res.status).toBe(200)
    const rows = (await res.json()) as unknown[]
    expect(rows.length).toBeGreaterThan(0)
    expect(res.headers.get('x-next-from-block')).not.toBeNull()
  })

  it('negotiates by Accept and answers 406 when it cannot', async () => {
    const res = await get('/v1/api/blocks?chains=ETH', { accept: 'text/csv' })
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/)
    expect((await get('/v1/api/blocks?chains=ETH', { accept: 'image/png' })).status).toBe(406)
    expect((await get('/v1/api/blocks?chains=ETH&format=xml')).status).toBe(400)
  })

  it('gzips when asked, and the bytes inflate to the plain response', async () => {
    const plain = new Uint8Array(await (await get('/v1/api/logs?chains=ETH&from_block=0&format=csv')).arrayBuffer())
    const res = await get('/v1/api/logs?chains=ETH&from_block=0&format=csv', { 'accept-encoding': 'gzip, br' })
    expect(res.headers.get('content-encoding')).toBe('gzip')
    expect(res.headers.get('vary')).toMatch(/Accept-Encoding/)
    const zipped = new Uint8Array(await res.arrayBuffer())
    expect(zipped.length).toBeLessThan(plain.length)
    expect(new Uint8Array(gunzipSync(zipped))).toEqual(plain)
  })

  it('answers 400 naming the parameter for bad input', async () => {
    const cases: [string, string][] = [
      ['chains=ETH&from_block=10&to_block=9', 'from_block'],
      ['chains=ETH&colour=red', 'colour'],
      ['chains=ETH,DEVNET', 'chains'],
      ['chains=ETH&address=0x12', 'address'],
      ['chains=ETH&fields=nope', 'fields'],
      ['chains=ETH&limit=0', 'limit'],
    ]
    for (const [q, parameter] of cases) {
      const err = await errorOf(await get(`/v1/api/logs?${q}`))
      expect(err.status).toBe(400)
      expect(err.parameter).toBe(parameter)
    }
  })

  it('serves Move transactions at the Move host, with kind aliases and versions', async () => {
    const plainFields = defaults(moveTransactions.fields)
    const want = canonicalRecords(
      moveRows.filter(r => r.kind === 'BlockMetadataTransaction' && (r.version as bigint) >= 1010n && (r.version as bigint) <= 1030n),
      plainFields,
      1,
    )
    expect(want.length).toBeGreaterThan(0)
    for (const p of ['kind__in', 'transaction_type__in', 'type__in']) {
      const res = await get(
        `/v1/api/transactions?chains=APTOS&from_version=1010&to_version=1030&${p}=BlockMetadataTransaction`,
        {},
        'aptos.localhost',
      )
      expect(await records(res, 'json_stream', plainFields)).toEqual(want)
    }
    const decodedFields = defaults(moveDecodedTransactions.fields)
    const decoded = await records(
      await get('/v1/api/transactions/decoded?chains=1&from_block=1000&to_block=1001', {}, 'aptos.localhost'),
      'json_stream',
      decodedFields,
    )
    expect(decoded.map(r => r.version)).toEqual(['0x3e8', '0x3e9'])
  })

  it("never serves another host's chain", async () => {
    expect((await errorOf(await get('/v1/api/transactions?chains=APTOS&from_block=0'))).parameter).toBe('chains')
    expect((await errorOf(await get('/v1/api/transactions?chains=ETH', {}, 'aptos.localhost'))).parameter).toBe('chains')
    expect((await errorOf(await get('/v1/api/transactions?chains=MOVEMENT', {}, 'aptos.localhost'))).parameter).toBe('chains')
  })
})

describe('failures', () => {
  /** The lake's store, failing every read once `failAfter` reads have been made. */
  const failing = (failAfter: number, error: () => Error): ObjectStore => {
    let reads = 0
    return {
      ...store,
      get: (key, range) => (reads++ >= failAfter ? Promise.reject(error()) : store.get(key, range)),
      head: key => store.head(key),
      put: (k, b, o) => store.put(k, b, o),
      list: p => store.list(p),
      delete: k => store.delete(k),
    }
  }
  const appOver = async (s: ObjectStore) =>
    createApp({ store: s, manifest: new ManifestReader(s), users: await parseUsers('alice:wonderland'), log: (_m, e) => logged.push(e) })

  it('answers 503 with Retry-After when storage fails', async () => {
    const broken = await appOver(failing(0, () => new StorageError('R2 is down')))
    const res = await broken.fetch(new Request('http://api.example.com/v1/api/logs?chains=ETH', { headers: { authorization: AUTH } }))
    expect(res.status).toBe(503)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await errorOf(res)).code).toBe('storage_unavailable')
    const status = await broken.fetch(new Request('http://api.example.com/v1/api/status', { headers: { authorization: AUTH } }))
    expect(status.status).toBe(503)
  })

  it('answers an unexpected error with a 500 that shows no internals, and logs it', async () => {
    logged.length = 0
    const broken = await appOver(failing(0, () => new Error('secret internal detail at /srv/x.ts:1')))
    const res = await broken.fetch(new Request('http://api.example.com/v1/api/logs?chains=ETH', { headers: { authorization: AUTH } }))
    expect(res.status).toBe(500)
    const text = await res.text()
    expect(text).not.toMatch(/secret|\/srv/)
    expect(JSON.parse(text).error.code).toBe('internal_error')
    expect(logged).toHaveLength(1)
  })

  /** The lake's store with some objects replaced: `damage(key, bytes)` returns the bytes to serve, or null for a missing object. */
  const damaged = (damage: (key: string, bytes: Uint8Array) => Uint8Array | null): ObjectStore => ({
    ...store,
    get: async (key, range) => {
      const got = await store.get(key)
      const bytes = got && damage(key, got.body)
      if (!got || !bytes) return null
      const start = range && 'offset' in range ? range.offset : range && 'suffix' in range ? Math.max(0, bytes.length - range.suffix) : 0
      const end = range && 'length' in range && range.length !== undefined ? Math.min(bytes.length, start + range.length) : bytes.length
      return { ...got, body: bytes.subarray(start, end), offset: start, size: bytes.length }
    },
    head: key => store.head(key),
    put: (k, b, o) => store.put(k, b, o),
    list: p => store.list(p),
    delete: k => store.delete(k),
  })

  it('answers a damaged manifest, a missing shard or a missing partition with 503 storage_corrupt, no Retry-After, and logs the object', async () => {
    const cases: [string, (key: string, bytes: Uint8Array) => Uint8Array | null][] = [
      ['root', (key, bytes) => (key.endsWith('manifest/root.json') ? bytes.subarray(0, bytes.length - 7) : bytes)],
      ['shard', (key, bytes) => (key.includes('/manifest/logs/') ? null : bytes)],
      ['partition', (key, bytes) => (key.endsWith('.parquet') && key.includes('/logs/') ? null : bytes)],
    ]
    for (const [what, damage] of cases) {
      logged.length = 0
      const app = await appOver(damaged(damage))
      const res = await app.fetch(
        new Request('http://api.example.com/v1/api/logs?chains=ETH&from_block=0', { headers: { authorization: AUTH } }),
      )
      expect(res.status, what).toBe(503)
      expect(res.headers.get('retry-after'), what).toBeNull()
      expect((await errorOf(res)).code, what).toBe('storage_corrupt')
      expect(String(logged[0]), what).toMatch(/evm-1\//)
    }
    // The status of the host: the damaged chain says so, the others are answered.
    logged.length = 0
    const app = await appOver(damaged(cases[0][1]))
    const res = await app.fetch(new Request('http://api.example.com/v1/api/status', { headers: { authorization: AUTH } }))
    expect(res.status).toBe(200)
    const records = (await res.json()) as { chain_code: string; status: string; error: { code: string } | null }[]
    expect(records.find(r => r.chain_code === 'ETH')).toMatchObject({ status: 'Error', error: { code: 'storage_corrupt' } })
    expect(records.find(r => r.chain_code === 'DEVNET')).toMatchObject({ status: 'NoData', error: null })
    expect(logged).toHaveLength(1)
  })

  it('aborts the body when storage fails part-way, never ending it cleanly', async () => {
    const path = 'http://api.example.com/v1/api/logs?chains=ETH&from_block=0&format=json'
    const counted = countingStore(store)
    const whole = await (await appOver(counted)).fetch(new Request(path, { headers: { authorization: AUTH } }))
    expect(JSON.parse(await whole.text())).toHaveLength(lake.rows.logs.length)
    // The same query again, its last read failing: the first partition is already out.
    const broken = await appOver(failing(counted.counts.requests - 1, () => new StorageError('R2 went away')))
    const res = await broken.fetch(new Request(path, { headers: { authorization: AUTH } }))
    expect(res.status).toBe(200)
    await expect(res.arrayBuffer()).rejects.toThrow(/R2 went away/)
  })
})

function range(a: number, b: number): number[] {
  return Array.from({ length: b - a + 1 }, (_, i) => a + i)
}

/**
 * The Node server's text responses encoded in its encoding thread
 * (src/node/encode-threads.ts) are byte for byte those encoded in place, over HTTP,
 * in every format, gzipped or not, and a paged response's cursor is unchanged; so are
 * answers built in column memory that earlier answers handed back.
 */
import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { nodeScan, startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { ColumnBuffers } from '../../src/query/column-buffers.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { buildHttpLake, hexOf, type HttpLake } from '../http/fixture.ts'

const AUTH = basic('alice', 'wonderland')

/** Status, headers and raw body bytes of a GET (node:http, so Accept-Encoding is sent as given). */
function get(server: NodeServer, path: string, gzip: boolean): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}${path}`,
      { headers: { authorization: AUTH, ...(gzip ? { 'accept-encoding': 'gzip' } : {}) } },
      res => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

describe('Node server: encoding thread', () => {
  let store: ObjectStore
  let lake: HttpLake
  let threaded: NodeServer
  let inPlace: NodeServer
  /** The threaded server's column memory, lending every column (src/query/column-buffers.ts). */
  const columns = new ColumnBuffers({ minBytes: 1 })
  beforeAll(async () => {
    store = (await tempStore()).store
    lake = await buildHttpLake(store)
    const users = await parseUsers('alice:wonderland')
    threaded = await startNodeServer({
      store,
      users,
      waitForNodes: false,
      encodeThread: { minRows: 1 },
      scan: { ...(await nodeScan()), columns },
    })
    // The reference: encoded in place, every column in fresh memory.
    const { columns: _fresh, ...freshScan } = await nodeScan()
    inPlace = await startNodeServer({ store, users, waitForNodes: false, encodeThread: false, scan: freshScan })
  })
  afterAll(async () => {
    await Promise.all([threaded?.close(), inPlace?.close()])
    await removeTempDirs()
  })

  const paths = [
    '/v1/api/logs?chains=ETH&from_block=100&format=json_stream',
    '/v1/api/logs?chains=ETH&from_block=100&format=csv',
    '/v1/api/logs?chains=ETH&from_block=100&format=arrow',
    '/v1/api/transactions?chains=ETH&from_block=100&to_block=400&format=json',
    '/v1/api/logs?chains=ETH&from_block=100&format=json&limit=7',
  ]
  for (const path of paths) {
    for (const gzip of [false, true]) {
      it(`${path}${gzip ? ', gzipped' : ''}: the same bytes`, async () => {
        const sent = threaded.encoding!.threadBatches
        const [a, b] = await Promise.all([get(threaded, path, gzip), get(inPlace, path, gzip)])
        expect(threaded.encoding!.threadBatches > sent).toBe(!path.includes('arrow'))
        expect(inPlace.encoding).toBeUndefined()
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        const body = (r: typeof a) => (r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.body) : r.body)
        expect(body(a).length).toBeGreaterThan(100)
        expect(Buffer.compare(body(a), body(b))).toBe(0)
        for (const h of ['x-next-cursor', 'link', 'content-type']) expect(a.headers[h]).toEqual(b.headers[h])
      })
    }
  }

  it('answers at once and over and over in memory the answers before handed back: the bytes encoded in place', async () => {
    // Filtered answers too: the scan hands back the columns it selected with.
    const [a, b] = lake.rows.logs
    const filtered = [
      `/v1/api/logs?chains=ETH&from_block=100&topic0=${hexOf(a.topic0)}&format=json_stream`,
      `/v1/api/logs?chains=ETH&from_block=100&address__in=${hexOf(a.address)},${hexOf(b.address)}&format=csv`,
      `/v1/api/logs?chains=ETH&from_block=100&address=${hexOf(a.address)}&topic0=${hexOf(a.topic0)}&format=json`,
    ]
    const text = [...paths.filter(p => !p.includes('arrow')), ...filtered]
    const want = await Promise.all(text.map(p => get(inPlace, p, false)))
    want.forEach((r, i) => expect(r.body.length, `${text[i]} answers rows`).toBeGreaterThan(100))
    const before = columns.recycled
    for (let round = 0; round < 3; round++) {
      const got = await Promise.all(text.map(p => get(threaded, p, false)))
      got.forEach((r, i) => expect(Buffer.compare(r.body, want[i].body), `round ${round + 1}: ${text[i]}`).toBe(0))
    }
    expect(columns.recycled - before).toBeGreaterThan(50)
    expect(columns.size).toBeGreaterThan(0)
    // An Arrow answer's columns are its body: its scan takes none of the idle memory.
    const idle = columns.size
    const arrow = await get(threaded, '/v1/api/logs?chains=ETH&from_block=100&format=arrow', false)
    expect([arrow.status, columns.size]).toEqual([200, idle])
  })
})

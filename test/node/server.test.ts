/**
 * The Node server's text responses encoded in its encoding thread
 * (src/node/encode-threads.ts) are byte for byte those encoded in place, over HTTP,
 * in every format, gzipped or not, and a paged response's cursor is unchanged; so are
 * answers built in column memory that earlier answers handed back, Arrow bodies (the
 * columns' own memory, back once the socket has written it) read late among them.
 */
import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { nodeScan, startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { ColumnBuffers } from '../../src/query/column-buffers.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { logs } from '../../src/datasets/evm.ts'
import { basic } from '../support/basic.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { buildHttpLake, hexOf, type HttpLake } from '../http/fixture.ts'
import { buildLake, makePools, makeRows, rng } from '../query/lake.ts'

const AUTH = basic('alice', 'wonderland')

/**
 * Status, headers and raw body bytes of a GET (node:http, so Accept-Encoding is sent as given).
 * With `paused`, the body is not read from its first chunk until `paused` settles, so the
 * server's writes wait on the socket meanwhile.
 */
function get(
  server: NodeServer,
  path: string,
  gzip: boolean,
  paused?: Promise<unknown>,
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}${path}`,
      { headers: { authorization: AUTH, ...(gzip ? { 'accept-encoding': 'gzip' } : {}) } },
      res => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => {
          parts.push(c)
          if (paused && parts.length === 1) {
            res.pause()
            paused.then(() => res.resume())
          }
        })
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
  })
})

describe('Node server: Arrow bodies in column memory', () => {
  let inPlace: NodeServer
  let lent: NodeServer
  /** Every column lent; row groups of 3,000 logs, so a column's memory is more than a chunk and goes out as it is. */
  const columns = new ColumnBuffers({ minBytes: 1 })
  beforeAll(async () => {
    const { store } = await tempStore()
    const r = rng(11)
    const rows = makeRows(
      logs,
      Array.from({ length: 1000 }, (_, i) => 1000 + i),
      r,
      makePools(r),
      60,
    )
    await buildLake(store, ETH, logs, [{ from: 1000, to: 1999, rows }], { rowGroupSize: 3000 })
    const users = await parseUsers('alice:wonderland')
    lent = await startNodeServer({ store, users, waitForNodes: false, scan: { ...(await nodeScan()), columns } })
    const { columns: _fresh, ...freshScan } = await nodeScan()
    inPlace = await startNodeServer({ store, users, waitForNodes: false, encodeThread: false, scan: freshScan })
  })
  afterAll(async () => {
    await Promise.all([lent?.close(), inPlace?.close()])
    await removeTempDirs()
  })

  it('answers Arrow read late beside other answers in memory handed back, byte for byte, the memory back once written', async () => {
    const arrow = '/v1/api/logs?chains=ETH&from_block=1000&format=arrow'
    const others = [
      '/v1/api/logs?chains=ETH&from_block=1000&format=csv',
      '/v1/api/logs?chains=ETH&from_block=1100&to_block=1250&format=arrow',
      '/v1/api/logs?chains=ETH&from_block=1000&format=json_stream',
    ]
    const [want, ...wantOthers] = await Promise.all([arrow, ...others].map(p => get(inPlace, p, false)))
    expect(want.body.length).toBeGreaterThan(7_000_000)
    for (let round = 0; round < 3; round++) {
      // One Arrow answer waits on its socket, unread, while the others are scanned and written.
      let go!: () => void
      const paused = new Promise<void>(resolve => (go = resolve))
      const slow = get(lent, arrow, false, paused)
      await new Promise(resolve => setTimeout(resolve, 100))
      const [fast, ...rest] = await Promise.all([get(lent, arrow, false), ...others.map(p => get(lent, p, false))])
      go()
      expect(Buffer.compare((await slow).body, want.body), `round ${round + 1}: read after the others`).toBe(0)
      expect(Buffer.compare(fast.body, want.body), `round ${round + 1}`).toBe(0)
      rest.forEach((r, i) => expect(Buffer.compare(r.body, wantOthers[i].body), `round ${round + 1}: ${others[i]}`).toBe(0))
    }
    // Columns went out as the body and came back once written, and later answers were built in them.
    expect(columns.written).toBeGreaterThan(20)
    expect(columns.size).toBeGreaterThan(0)
    const gzipped = await get(lent, arrow, true)
    expect(Buffer.compare(gunzipSync(gzipped.body), want.body)).toBe(0)
  })
})

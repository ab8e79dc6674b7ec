/**
 * The Node server's text responses encoded in its encoding thread
 * (src/node/encode-threads.ts) are byte for byte those encoded in place, over HTTP,
 * in every format, gzipped or not, and a paged response's cursor is unchanged.
 */
import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { buildHttpLake } from '../http/fixture.ts'

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
  let threaded: NodeServer
  let inPlace: NodeServer
  beforeAll(async () => {
    store = (await tempStore()).store
    await buildHttpLake(store)
    const users = await parseUsers('alice:wonderland')
    threaded = await startNodeServer({ store, users, waitForNodes: false, encodeThread: { minRows: 1 } })
    inPlace = await startNodeServer({ store, users, waitForNodes: false, encodeThread: false })
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
})

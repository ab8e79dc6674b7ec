import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve, type RunningServer } from '../../src/node/serve.ts'

/** Raw HTTP exchange, so the test sees exactly what went over the socket. */
function exchange(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer; aborted: boolean }> {
  return new Promise(resolve => {
    const req = httpRequest(url, { headers }, res => {
      const chunks: Buffer[] = []
      let aborted = false
      res.on('data', c => chunks.push(c))
      res.on('aborted', () => (aborted = true))
      res.on('error', () => (aborted = true))
      res.on('close', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), aborted: aborted || !res.complete }),
      )
    })
    // A connection dropped before the status line arrived is an abort too.
    req.on('error', () => resolve({ status: 0, headers: {}, body: Buffer.alloc(0), aborted: true }))
    req.end()
  })
}

let cancelled = 0
let pulled = 0

const handler = async (request: Request): Promise<Response> => {
  const url = new URL(request.url)
  if (url.pathname === '/echo') {
    return Response.json({ method: request.method, host: url.host, path: url.pathname + url.search, x: request.headers.get('x-test') })
  }
  if (url.pathname === '/big') {
    // 64 MiB in 64 KiB chunks, produced only as fast as the client reads.
    const chunk = new Uint8Array(64 * 1024).fill(97)
    let sent = 0
    return new Response(
      new ReadableStream<Uint8Array>(
        {
          pull(c) {
            pulled++
            if (sent++ >= 1024) c.close()
            else c.enqueue(chunk)
          },
          cancel() {
            cancelled++
          },
        },
        { highWaterMark: 0 },
      ),
    )
  }
  if (url.pathname === '/fail') {
    let n = 0
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(c) {
          if (n++ < 3) c.enqueue(new TextEncoder().encode('line\n'))
          else c.error(new Error('storage went away'))
        },
      }),
    )
  }
  throw new Error('boom')
}

let server: RunningServer

beforeAll(async () => {
  server = await serve({ fetch: handler, port: 0, log: () => {} })
})
afterAll(() => server.close())

describe('node adapter', () => {
  it('listens on 127.0.0.1 on a free port', () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    expect(server.port).toBeGreaterThan(0)
  })

  it('passes method, Host, path, query and headers through', async () => {
    const r = await exchange(`${server.url}/echo?a=1&b=%00`, { host: 'aptos.localhost:1234', 'x-test': 'yes' })
    expect(r.status).toBe(200)
    expect(JSON.parse(r.body.toString())).toEqual({ method: 'GET', host: 'aptos.localhost:1234', path: '/echo?a=1&b=%00', x: 'yes' })
  })

  it('streams a large body completely', async () => {
    const r = await exchange(`${server.url}/big`)
    expect(r.aborted).toBe(false)
    expect(r.body.length).toBe(64 * 1024 * 1024)
  })

  it('stops pulling when the client goes away', async () => {
    cancelled = 0
    pulled = 0
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${server.url}/big`, res => {
        let got = 0
        res.on('data', c => {
          got += c.length
          if (got > 1024 * 1024) req.destroy()
        })
        res.on('close', () => resolve())
      })
      req.on('error', () => resolve())
      req.on('close', () => resolve())
      req.end()
      setTimeout(() => reject(new Error('no close')), 30_000).unref()
    })
    await new Promise<void>(resolve => {
      const check = () => (cancelled > 0 ? resolve() : setTimeout(check, 10))
      check()
    })
    expect(cancelled).toBe(1)
    expect(pulled).toBeLessThan(1024)
  })

  it('aborts the connection when a body fails part-way, never ending it cleanly', async () => {
    const r = await exchange(`${server.url}/fail`)
    expect(r.aborted).toBe(true)
    expect('line\n'.repeat(3).startsWith(r.body.toString())).toBe(true)
  })

  it('tells of each chunk once the socket has taken it: overwritten then, the answer is still whole', async () => {
    const sizes = Array.from({ length: 200 }, (_, i) => 1 + ((i * 7919) % (256 * 1024)))
    const want = Buffer.concat(sizes.map((n, i) => Buffer.alloc(n, i & 255)))
    const told: number[] = []
    const own = await serve({
      port: 0,
      log: () => {},
      fetch: async () => {
        let i = 0
        return new Response(
          new ReadableStream<Uint8Array>({
            pull(c) {
              if (i === sizes.length) return c.close()
              c.enqueue(new Uint8Array(sizes[i]).fill(i & 255))
              i++
            },
          }),
        )
      },
      // What the encoding thread does with a buffer it gets back: write other bytes into it.
      written: chunk => {
        told.push(chunk.length)
        chunk.fill(0xee)
      },
    })
    try {
      const r = await exchange(own.url)
      expect(r.aborted).toBe(false)
      expect(Buffer.compare(r.body, want)).toBe(0)
      expect(told).toEqual(sizes)
    } finally {
      await own.close()
    }
  })

  it('answers a handler crash with a JSON 500 without internals', async () => {
    const r = await exchange(`${server.url}/crash`)
    expect(r.status).toBe(500)
    const body = JSON.parse(r.body.toString())
    expect(body.error.code).toBe('internal_error')
    expect(r.body.toString()).not.toContain('boom')
  })
})

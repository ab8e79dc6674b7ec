import { afterEach, describe, expect, it } from 'vitest'
import { type RpcRetry, createRpcClient, RpcError, type RpcOptions } from '../../src/ingest/rpc.ts'
import { decodeBody, nodeHttpFetch } from '../../src/ingest/http-fetch.ts'
import { recordedResult, startFakeNode, type FakeNode, type FakeNodeOptions } from './fixtures.ts'

/** Every case over both transports: the global fetch, and the Node ingester's node:http one. */
const TRANSPORTS = [
  ['fetch', {}],
  ['node:http', { fetch: nodeHttpFetch() }],
] as const
let node: FakeNode | undefined
afterEach(async () => {
  await node?.close()
  node = undefined
})
const start = async (o: FakeNodeOptions = {}) => (node = await startFakeNode(o))
const block = (n: number) => ({ method: 'eth_getBlockByNumber', params: ['0x' + n.toString(16), false] })

async function rejection(p: Promise<unknown>): Promise<RpcError> {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(e).toBeInstanceOf(RpcError)
  return e as RpcError
}

describe.each(TRANSPORTS)('createRpcClient over %s', (_, transport) => {
  const FAST: RpcOptions = { retries: 3, backoffMs: 1, maxBackoffMs: 5, timeoutMs: 2_000, ...transport }
  it('sends calls as JSON-RPC batches and returns results in call order', async () => {
    // Answer each batch in reverse order: results are matched by id.
    const n = await start({
      reply: (calls, _n, batch) =>
        batch ? { body: JSON.stringify(calls.map(c => ({ jsonrpc: '2.0', id: c.id, result: c.params[0] })).reverse()) } : undefined,
    })
    const rpc = createRpcClient(n.url, { ...FAST, batchSize: 10 })
    const calls = Array.from({ length: 25 }, (_, i) => ({ method: 'echo', params: [i] }))
    expect(await rpc.batch(calls)).toEqual(calls.map((_, i) => i))
    expect(n.requests).toBe(3)
    expect(rpc.stats.requests).toBe(3)
  })

  it("reads UTF-8 text whose characters span the body's chunks", async () => {
    const text = '€😀é'.repeat(40_000)
    const n = await start({ reply: calls => ({ body: JSON.stringify({ jsonrpc: '2.0', id: calls[0].id, result: text }) }) })
    expect(await createRpcClient(n.url, FAST).request<string>('echo')).toBe(text)
  })

  it('retries 429 responses and then succeeds', async () => {
    const n = await start({ reply: (_c, i) => (i < 2 ? { status: 429, body: 'slow down', headers: { 'retry-after': '0' } } : undefined) })
    const rpc = createRpcClient(n.url, FAST)
    const got = await rpc.request<{ hash: string }>('eth_getBlockByNumber', ['0x1036640', true])
    expect(got.hash).toBe(recordedResult(block(17000000)).result.hash)
    expect(n.requests).toBe(3)
    expect(rpc.stats.retries).toBe(2)
  })

  it('gives up on a node that keeps answering 500, naming the call', async () => {
    const n = await start({ reply: () => ({ status: 500, body: 'internal error' }) })
    const e = await rejection(createRpcClient(n.url, FAST).request('eth_getBlockByNumber', ['0x1036640', true]))
    expect(e.message).toMatch(/^eth_getBlockByNumber\(0x1036640, true\) failed: HTTP 500/)
    expect(e.message).toMatch(/gave up after 4 attempts/)
    expect(n.requests).toBe(4)
  })

  it('retries malformed JSON and names it when it persists', async () => {
    const once = await start({ reply: (_c, i) => (i === 0 ? { body: '{"jsonrpc":"2.0","id":1,"res' } : undefined) })
    expect(await createRpcClient(once.url, FAST).request('eth_blockNumber')).toBe('0x11a49a0')
    await once.close()
    const always = await start({ reply: () => ({ body: '<html>bad gateway</html>' }) })
    const e = await rejection(createRpcClient(always.url, FAST).request('eth_blockNumber'))
    expect(e.message).toMatch(/eth_blockNumber\(\) failed: malformed JSON from the node/)
    expect(e.message).toMatch(/bad gateway/)
  })

  it('fails at once on a JSON-RPC error that is not transient', async () => {
    const n = await start({
      reply: calls => ({
        body: JSON.stringify({ jsonrpc: '2.0', id: calls[0].id, error: { code: -32000, message: 'missing trie node' } }),
      }),
    })
    const e = await rejection(createRpcClient(n.url, FAST).request('eth_getBlockReceipts', ['0x1036640']))
    expect(e.message).toBe('eth_getBlockReceipts(0x1036640) failed: JSON-RPC error -32000: missing trie node')
    expect(e.code).toBe(-32000)
    expect(n.requests).toBe(1)
  })

  it('retries rate-limit errors inside a batch, only for the calls that got them', async () => {
    let limited = 0
    const n = await start({
      reply: (calls, i) => {
        if (i > 0) return undefined
        // First request: the second call is rate limited, the others answered.
        return {
          body: JSON.stringify(
            calls.map((c, k) => {
              if (k !== 1) return { jsonrpc: '2.0', id: c.id, ...recordedResult(c) }
              limited++
              return { jsonrpc: '2.0', id: c.id, error: { code: -32005, message: 'request rate exceeded' } }
            }),
          ),
        }
      },
    })
    const rpc = createRpcClient(n.url, FAST)
    const got = await rpc.batch<{ number: string }>([block(17000000), block(18000000), block(18500000)])
    expect(got.map(b => Number(b.number))).toEqual([17000000, 18000000, 18500000])
    expect(limited).toBe(1)
    expect(n.calls.length).toBe(4)
  })

  it('retries a request that times out', async () => {
    const n = await start({ reply: (_c, i) => (i === 0 ? { delayMs: 1_500, body: '{}' } : undefined) })
    const rpc = createRpcClient(n.url, { ...FAST, timeoutMs: 300 })
    expect(await rpc.request('eth_blockNumber')).toBe('0x11a49a0')
    expect(rpc.stats.retries).toBe(1)
  })

  it('tells each retry before waiting for it: the calls, the attempt and why', async () => {
    const n = await start({ reply: () => ({ delayMs: 1_000, body: '{}' }) })
    const retries: RpcRetry[] = []
    await rejection(
      createRpcClient(n.url, { ...FAST, retries: 2, timeoutMs: 200, onRetry: r => retries.push(r) }).request('eth_blockNumber'),
    )
    expect(retries.map(r => [r.calls, r.method, r.attempt, r.attempts])).toEqual([
      [1, 'eth_blockNumber', 2, 3],
      [1, 'eth_blockNumber', 3, 3],
    ])
    expect(retries[0].reason).toMatch(/timed out after 200 ms/)
  })

  it('names a timeout when every attempt times out', async () => {
    const n = await start({ reply: () => ({ delayMs: 1_000, body: '{}' }) })
    const e = await rejection(createRpcClient(n.url, { ...FAST, retries: 1, timeoutMs: 200 }).request('eth_blockNumber'))
    expect(e.message).toMatch(/eth_blockNumber\(\) failed: timed out after 200 ms \(gave up after 2 attempts\)/)
  })

  it('reports a node that cannot be reached', async () => {
    const n = await start()
    const url = n.url
    await n.close()
    node = undefined
    const e = await rejection(createRpcClient(url, { ...FAST, retries: 1 }).request('eth_chainId'))
    expect(e.message).toMatch(/eth_chainId\(\) failed: network error/)
  })

  it('splits batches for a node that refuses them', async () => {
    const n = await start({
      reply: (_c, _i, batch) =>
        batch
          ? { body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } }) }
          : undefined,
    })
    const rpc = createRpcClient(n.url, FAST)
    const got = await rpc.batch<{ number: string }>([block(17000000), block(18000000), block(18500000)])
    expect(got.map(b => Number(b.number))).toEqual([17000000, 18000000, 18500000])
    const before = n.requests
    await rpc.batch([block(17000000), block(18000000)])
    expect(n.requests - before).toBe(2)
  })

  it('retries a call the node left out of a batch answer', async () => {
    const n = await start({
      reply: (calls, i, batch) =>
        i === 0 && batch
          ? { body: JSON.stringify(calls.slice(1).map(c => ({ jsonrpc: '2.0', id: c.id, ...recordedResult(c) }))) }
          : undefined,
    })
    const got = await createRpcClient(n.url, FAST).batch<{ number: string }>([block(17000000), block(18000000)])
    expect(got.map(b => Number(b.number))).toEqual([17000000, 18000000])
  })

  it('keeps each call settled on its own for callers that fall back', async () => {
    const n = await start()
    const settled = await createRpcClient(n.url, FAST).batchSettled([block(17000000), { method: 'eth_nope', params: [] }])
    expect(settled[0].ok).toBe(true)
    expect(settled[1].ok).toBe(false)
    if (!settled[1].ok) expect(settled[1].error.kind).toBe('unsupported')
  })
})

describe('decodeBody', () => {
  it('decodes an ASCII body and one with multi-byte UTF-8 as UTF-8 would', () => {
    for (const text of ['{"jsonrpc":"2.0","id":1,"result":"0x1b4"}', '{"error":{"message":"Blöck nöt föund ✗ 🧱"}}', '']) {
      const body = Buffer.from(text, 'utf8')
      expect(decodeBody(body)).toBe(text)
    }
    // a lone byte past ASCII is not latin1's character but UTF-8's replacement
    expect(decodeBody(Buffer.from([0x7b, 0xe9, 0x7d]))).toBe('{\ufffd}')
  })
})

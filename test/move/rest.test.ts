import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fullnodeClient, FullnodeError, type FullnodeClient, type FullnodeRetry } from '../../src/move/rest.ts'
import { AbiCache, missingModules, prefetchAbis } from '../../src/move/abi-cache.ts'
import { toMoveRows } from '../../src/move/transform.ts'
import { recordedAbis, restTransactions } from './data.ts'
import { startReplay, type Replay } from './replay.ts'

describe('fullnodeClient against the replay server', () => {
  let replay: Replay
  let client: FullnodeClient
  const recorded = restTransactions('testnet')

  beforeAll(async () => {
    replay = await startReplay('testnet')
    client = fullnodeClient({ url: replay.url, retries: 0 })
  })
  afterAll(() => replay?.stop())

  it('reads the ledger info', async () => {
    const info = await client.ledgerInfo()
    expect(info.chain_id).toBe(2)
    expect(info.ledger_version).toBe(recorded[recorded.length - 1].version)
    expect(info.oldest_ledger_version).toBe(recorded[0].version)
  })

  it('pages through every transaction', async () => {
    const seen: string[] = []
    let start = 0n
    for (;;) {
      const page = await client.transactions(start, 5)
      expect(page.length).toBeLessThanOrEqual(5)
      seen.push(...page.map(t => t.version))
      if (page.length < 5) break
      start = BigInt(page[page.length - 1].version) + 1n
    }
    expect(seen).toEqual(recorded.map(t => t.version))
  })

  it('refuses page sizes the API does not serve, without a request', async () => {
    await expect(client.transactions(0, 0)).rejects.toThrow(RangeError)
    await expect(client.transactions(0, 101)).rejects.toThrow(RangeError)
  })

  it('reads one transaction, and names the URL and status of a missing one', async () => {
    expect((await client.transactionByVersion(3)).hash).toBe(recorded[2].hash)
    const e = await client.transactionByVersion(4).catch(x => x)
    expect(e).toBeInstanceOf(FullnodeError)
    expect(e).toMatchObject({ status: 404, code: 'transaction_not_found' })
    expect(e.message).toContain(`${replay.url}/v1/transactions/by_version/4`)
    expect(e.message).toContain('HTTP 404')
  })

  it('reads module ABIs, and null for a module that does not exist', async () => {
    const coin = await client.moduleAbi('0x1', 'coin')
    expect(coin?.name).toBe('coin')
    expect(coin?.exposed_functions.some(f => f.name === 'transfer')).toBe(true)
    expect(await client.moduleAbi('0x' + '1'.padStart(64, '0'), 'coin')).not.toBeNull()
    expect(await client.moduleAbi('0x1', 'no_such_module')).toBeNull()
  })

  it('prefetches every ABI a batch needs, then transforms it like with the recorded ABIs', async () => {
    const mainnet = restTransactions('mainnet')
    const cache = new AbiCache()
    let requests = 0
    await prefetchAbis(mainnet, cache, (a, n) => (requests++, client.moduleAbi(a, n)))
    expect(missingModules(mainnet, cache)).toEqual([])
    expect(cache.module('0x1', 'aptos_account')).toBeTruthy()
    // Third-party modules the replay server does not know are remembered as missing.
    expect(cache.module('0xa3f6a53c57395401ce64f09a188e2259dc9b156387e76c88a7a80a8fe5254476', 'momentum_safe')).toBeNull()
    expect(requests).toBe(cache.modules.size)
    const fetched = toMoveRows(mainnet, { abis: cache, chainId: 1 })
    const local = toMoveRows(mainnet, { abis: recordedAbis(), chainId: 1 })
    expect(fetched.batch.columns.entry_function_decoded).toEqual(local.batch.columns.entry_function_decoded)
    expect(fetched.report.verified).toBe(local.report.verified)
  })
})

describe('fullnodeClient retries', () => {
  let server: http.Server
  let url: string
  let script: ((res: http.ServerResponse) => void)[] = []
  let hits = 0

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++
      const next = script.shift()
      if (next) next(res)
      // no scripted answer left: leave the request hanging (a stalled node)
    })
    await new Promise<void>(r => server.listen(0, '127.0.0.1', () => r()))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => {
    server.closeAllConnections()
    return new Promise<void>(r => server.close(() => r()))
  })

  const status =
    (code: number, body: unknown, headers: Record<string, string> = {}) =>
    (res: http.ServerResponse) => {
      res.writeHead(code, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify(body))
    }
  const ledger = {
    chain_id: 126,
    ledger_version: '10',
    oldest_ledger_version: '0',
    epoch: '1',
    ledger_timestamp: '1',
    node_role: 'full_node',
    oldest_block_height: '0',
    block_height: '1',
  }

  it('retries 429 and 5xx answers until the node answers', async () => {
    hits = 0
    script = [
      status(503, { message: 'busy' }),
      status(429, { message: 'slow down' }, { 'retry-after': '0' }),
      status(502, 'bad gateway'),
      status(200, ledger),
    ]
    const told: FullnodeRetry[] = []
    const info = await fullnodeClient({ url, retries: 3, backoffMs: 1, onRetry: r => told.push(r) }).ledgerInfo()
    expect(info.chain_id).toBe(126)
    expect(hits).toBe(4)
    // Each retry is told before its wait: a node that keeps failing is never silent.
    expect(told.map(r => [r.attempt, r.attempts, r.reason])).toEqual([
      [2, 4, 'HTTP 503: busy'],
      [3, 4, 'HTTP 429: slow down'],
      [4, 4, 'HTTP 502: "bad gateway"'],
    ])
    expect(told.every(r => r.url === `${url}/v1`)).toBe(true)
  })

  it('gives up after its retries, naming the URL, the status and the attempts', async () => {
    hits = 0
    script = [
      status(500, { message: 'boom', error_code: 'internal_error' }),
      status(500, { message: 'boom', error_code: 'internal_error' }),
    ]
    const e = await fullnodeClient({ url: url + '/v1/', retries: 1, backoffMs: 1 })
      .transactions(7, 10)
      .catch(x => x)
    expect(e).toBeInstanceOf(FullnodeError)
    expect(e.status).toBe(500)
    expect(e.message).toBe(`${url}/v1/transactions?start=7&limit=10: HTTP 500 internal_error: boom (2 attempts)`)
    expect(hits).toBe(2)
  })

  it('does not retry a client error', async () => {
    hits = 0
    script = [status(400, { message: 'bad start', error_code: 'invalid_input' }), status(200, [])]
    const e = await fullnodeClient({ url, retries: 3, backoffMs: 1 })
      .transactions(1, 1)
      .catch(x => x)
    expect(e).toMatchObject({ status: 400, code: 'invalid_input' })
    expect(hits).toBe(1)
    script = []
  })

  it('times out a stalled request and retries it', async () => {
    hits = 0
    script = []
    const told: FullnodeRetry[] = []
    const e = await fullnodeClient({ url, retries: 1, backoffMs: 1, timeoutMs: 50, onRetry: r => told.push(r) })
      .ledgerInfo()
      .catch(x => x)
    expect(told).toMatchObject([{ attempt: 2, attempts: 2, reason: 'timed out after 50 ms' }])
    expect(e).toBeInstanceOf(FullnodeError)
    expect(e.status).toBe(0)
    expect(e.message).toMatch(/timed out after 50 ms \(2 attempts\)/)
    expect(hits).toBe(2)
  })

  it('reports a node that refuses connections', async () => {
    const closed = http.createServer()
    await new Promise<void>(r => closed.listen(0, '127.0.0.1', () => r()))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>(r => closed.close(() => r()))
    const e = await fullnodeClient({ url: `http://127.0.0.1:${port}`, retries: 0 })
      .ledgerInfo()
      .catch(x => x)
    expect(e).toMatchObject({ status: 0, url: `http://127.0.0.1:${port}/v1` })
  })
})

import { checkDocsExampleAndPoller, runDocsShellExample } from './helpers.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressTopic, Chainlet, globalClient, rowsOf, startLiveServer, TOPIC0, wsClient, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs } from '../support/stores.ts'
import { credentialProtocol, PROTOCOL } from '../../src/api/websocket.ts'

const ALICE = { authorization: basic('alice', 'secret') }

let chain: Chainlet
let server: LiveServer

beforeAll(async () => {
  chain = await Chainlet.start()
  server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 4, compactBlocks: 3 } }] })
})
afterAll(async () => {
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

describe('live subscriptions over the Node server', () => {
  it('delivers exactly the logs that match the filter, block by block, with progress markers', async () => {
    const head = await chain.head()
    const a = chain.address(1)
    const url = `${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${head + 1}&topic2=${addressTopic(a)}`
    const client = await wsClient(url, { headers: ALICE })
    const subscribed = await client.waitFor(m => m.type === 'subscribed')
    expect(subscribed).toMatchObject({ chain: 'DEVNET', chain_id: 31337, dataset: 'logs', from_block: head + 1, to_block: null })
    const first = await chain.mine([
      [1, '0x01'],
      [2, '0x02'],
      [1, '0x0303'],
    ])
    const second = await chain.mine([[2, '0x04']])
    const third = await chain.mine([
      [3, '0x05'],
      [1, '0x06'],
    ])
    await client.waitFor(m => m.type === 'progress' && m.cursor === third)
    const expected = await chain.logRecords(head + 1, third, { topics: [TOPIC0, null, addressTopic(a)] })
    expect(expected.length).toBe(3)
    expect(rowsOf(client.messages)).toEqual(expected)
    const cursors = client.messages.filter(m => m.type === 'progress').map(m => m.cursor)
    expect(cursors).toEqual([first, second, third])
    const hashes = client.messages.filter(m => m.type === 'progress').map(m => m.hash)
    expect(hashes).toEqual([await chain.blockHash(first), await chain.blockHash(second), await chain.blockHash(third)])
    client.close()
    expect((await client.closed).code).toBe(1005)
  })

  it("runs the docs' shell example as written (npx wscat): the range's rows, end, then exits at the close", async () => {
    const from = await chain.mine([[1, '0x5a']])
    const to = await chain.mine([
      [2, '0x5b'],
      [3, '0x5c'],
    ])
    const run = await runDocsShellExample(server.wsUrl, 'DEVNET', { from, to }, { user: 'alice', password: 'secret' })
    expect([run.code, run.stderr]).toEqual([0, ''])
    expect(run.messages[0]).toMatchObject({ type: 'subscribed', chain: 'DEVNET', from_block: from, to_block: to })
    expect(rowsOf(run.messages)).toEqual(await chain.logRecords(from, to))
    expect(run.messages.at(-1)).toEqual({ type: 'end', cursor: to })
  })

  it('with to_block sends the range, then end, then closes normally', async () => {
    const from = await chain.mine([[1, '0xaa']])
    const to = await chain.mine([
      [2, '0xbb'],
      [3, '0xcc'],
    ])
    const client = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${from}&to_block=${to}`, { headers: ALICE })
    const closed = await client.closed
    expect(closed.code).toBe(1000)
    expect(rowsOf(client.messages)).toEqual(await chain.logRecords(from, to))
    expect(client.messages.at(-1)).toEqual({ type: 'end', cursor: to })
  })

  it('accepts a browser-style client: built-in WebSocket with credentials in a subprotocol', async () => {
    const from = await chain.mine([[1, '0x11']])
    const client = await globalClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${from}&to_block=${from}`, [
      PROTOCOL,
      credentialProtocol('bob', 'hunter2'),
    ])
    expect((await client.closed).code).toBe(1000)
    expect(rowsOf(client.messages)).toEqual(await chain.logRecords(from, from))
  })

  it('accepts a browser-style client that sends an auth message first', async () => {
    const from = await chain.mine([[2, '0x12']])
    const client = await globalClient(
      `${server.wsUrl}/v1/api/transactions?chains=DEVNET&from_block=${from}&to_block=${from}&fields=hash,from`,
    )
    client.send(JSON.stringify({ type: 'auth', user: 'bob', password: 'hunter2' }))
    expect((await client.closed).code).toBe(1000)
    const block = (await (
      await fetch(chain.url, {
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['0x' + from.toString(16), true] }),
        headers: { 'content-type': 'application/json' },
      })
    ).json()) as { result: { transactions: { hash: string; from: string }[] } }
    expect(rowsOf(client.messages)).toEqual(block.result.transactions.map(t => ({ hash: t.hash, from: t.from.toLowerCase() })))
  })
  it("serves the docs' browser example as written (Node's built-in WebSocket, never acking) and an HTTP poller from last + 1", async () => {
    await checkDocsExampleAndPoller(chain, server.wsUrl, server.url)
  })
})

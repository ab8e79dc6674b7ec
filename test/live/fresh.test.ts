/**
 * HTTP as fresh as the stream (src/http/fresh.ts) on the Node server: a block
 * delivered over a WebSocket is readable over HTTP at the same moment, marked with
 * the final height; `finalized=true` keeps to final blocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Chainlet, startLiveServer, wsClient, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { chainKey } from '../../src/chains/registry.ts'
import { removeTempDirs } from '../support/stores.ts'

const ALICE = { authorization: basic('alice', 'secret') }
const FINALITY = 4

let chain: Chainlet
let server: LiveServer

beforeAll(async () => {
  chain = await Chainlet.start()
  server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: FINALITY, compactBlocks: 3 } }] })
})
afterAll(async () => {
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

const get = (query: string) => fetch(`${server.url}/v1/api/logs?chains=DEVNET&format=json&${query}`, { headers: ALICE })

describe('HTTP over the unfinalized window', () => {
  it('serves a block the moment the WebSocket delivered it, with X-Finalized-Block; finalized=true keeps to final blocks', async () => {
    const client = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET`, { headers: ALICE })
    await client.waitFor(m => m.type === 'subscribed')
    let last = 0
    for (let i = 0; i < 8; i++) last = await chain.mine([[1 + (i % 3), '0x0102']])
    await client.waitFor(m => m.type === 'progress' && m.cursor === last)
    const res = await get(`from_block=0`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(await chain.logRecords(0, last))
    expect(res.headers.get('x-latest-block')).toBe(String(last))
    expect(res.headers.get('x-blocks-served')).toBe(`0-${last}`)
    const finalized = Number(res.headers.get('x-finalized-block'))
    expect(finalized).toBe(last - FINALITY)

    const head = await get(`from_block=${last}&to_block=${last}`)
    expect(await head.json()).toEqual(await chain.logRecords(last, last))

    const final = await get(`from_block=0&finalized=true`)
    expect(final.headers.get('x-latest-block')).toBe(String(finalized))
    expect(await final.json()).toEqual(await chain.logRecords(0, finalized))
    const beyond = await get(`from_block=${finalized + 1}&finalized=true`)
    expect(beyond.status).toBe(200)
    expect(await beyond.json()).toEqual([])

    const limited = await get(`from_block=${finalized - 1}&limit=2`)
    const next = Number(limited.headers.get('x-next-from-block'))
    expect(await limited.json()).toEqual(await chain.logRecords(finalized - 1, next - 1))
    expect((await get(`finalized=maybe`)).status).toBe(400)

    const status = (await (await fetch(`${server.url}/v1/api/status?chains=DEVNET`, { headers: ALICE })).json()) as Record<
      string,
      unknown
    >[]
    expect(status[0]).toMatchObject({ latest_block_height: last, finalized_block_height: finalized, status: 'Ok' })
    client.close()
  })

  it('progress markers of stored history carry the block hash, so a client can resume from any of them with cursor_hash', async () => {
    const live = server.service.chains.get(chainKey(DEVNET))!
    while (live.window()!.anchor.number < 6) {
      await chain.mine([[1, '0x0a']])
      await new Promise(r => setTimeout(r, 50))
    }
    const to = live.window()!.anchor.number
    const client = await wsClient(`${server.wsUrl}/v1/api/blocks?chains=DEVNET&from_block=0&to_block=${to}&fields=hash`, {
      headers: ALICE,
    })
    expect((await client.closed).code).toBe(1000)
    const markers = client.messages.filter(m => m.type === 'progress')
    expect(markers.length).toBeGreaterThan(0)
    for (const m of markers) expect(m.hash).toBe(await chain.blockHash(m.cursor))
  })
})

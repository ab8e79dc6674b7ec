/**
 * The WebSocket API in workerd (vitest Workers pool): the Worker entry forwards
 * upgrades to the chain's Durable Object (LIVE in wrangler.toml), which accepts
 * them with the hibernation API and replays history from R2. No node is followed
 * here (LIVE_CHAINS unset: history only); following anvil is tested under
 * wrangler dev in test/live/durable.test.ts.
 */
/// <reference types="@cloudflare/vitest-plugin/types" />
import { env } from 'cloudflare:workers'
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { logs, EVM_DATASETS } from '../../src/datasets/evm.ts'
import { storagePersistence } from '../../src/worker/live-object.ts'
import { windowBlock } from '../../src/live/window.ts'
import { r2Store } from '../../src/store/r2.ts'
import worker from '../../src/worker/index.ts'
import { decodeJson } from '../format/decode.ts'
import { buildHttpLake, canonicalRecords, inBlocks, type HttpLake } from '../http/fixture.ts'
import { buildLake, makePools, makeRows, rng, toColumns } from '../query/lake.ts'
import { DEVNET } from '../support/chains.ts'
import { basic } from '../support/basic.ts'
import { credentialProtocol, PROTOCOL } from '../../src/api/websocket.ts'

type Json = any
const LIVE = (env as unknown as { LIVE: DurableObjectNamespace }).LIVE
const bindings = { ...env, API_USERS: 'alice:secret,bob:hunter2', LIVE }
const fields = logs.fields.filter(f => !f.extra)

let lake: HttpLake

beforeAll(async () => {
  lake = await buildHttpLake(r2Store(env.LAKE))
})

async function upgrade(path: string, headers: Record<string, string>): Promise<Response> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(
    new Request(`http://api.example.com${path}`, { headers: { upgrade: 'websocket', ...headers } }) as never,
    bindings,
    ctx,
  )
  await waitOnExecutionContext(ctx)
  return res
}

/** Accepts the client end of the socket and collects its text messages until the server closes it. */
function listen(res: Response): { texts: string[]; closed: Promise<number>; socket: WebSocket } {
  const socket = res.webSocket
  if (!socket) throw new Error(`no WebSocket (HTTP ${res.status})`)
  const texts: string[] = []
  const closed = new Promise<number>(resolve => socket.addEventListener('close', e => resolve(e.code)))
  socket.addEventListener('message', e => texts.push(e.data as string))
  socket.accept()
  return { texts, closed, socket }
}

/** The records of `rows` messages, read back the way the HTTP tests read JSON. */
const rowsOf = (texts: string[]) =>
  texts
    .filter(t => t.startsWith('{"type":"rows","rows":'))
    .flatMap(t => decodeJson(Buffer.from(t.slice('{"type":"rows","rows":'.length, -1)), fields))

describe('the WebSocket API in workerd', () => {
  it('caps sockets waiting to authenticate per client address (CF-Connecting-IP) with 429; another client still gets in', async () => {
    const path = '/v1/api/logs?chains=ETH&from_block=140&to_block=141'
    const sockets = []
    for (let i = 0; i < 8; i++) {
      const res = await upgrade(path, { 'cf-connecting-ip': '203.0.113.9' })
      expect(res.status).toBe(101)
      sockets.push(listen(res).socket)
    }
    const refused = await upgrade(path, { 'cf-connecting-ip': '203.0.113.9' })
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_pending')
    const other = await upgrade(path, { 'cf-connecting-ip': '198.51.100.7' })
    expect(other.status).toBe(101)
    sockets.push(listen(other).socket)
    for (const socket of sockets) socket.close(1000)
  })

  it('replays a stored range through the Durable Object: rows as over HTTP, a gap where nothing is stored, then end and 1000', async () => {
    const res = await upgrade('/v1/api/logs?chains=ETH&from_block=140&to_block=210', { authorization: basic('alice', 'secret') })
    expect(res.status).toBe(101)
    const { texts, closed } = listen(res)
    expect(await closed).toBe(1000)
    const messages = texts.map(t => JSON.parse(t) as Json)
    expect(messages[0]).toMatchObject({ type: 'subscribed', chain: 'ETH', dataset: 'logs', from_block: 140, to_block: 210 })
    expect(messages.filter(m => m.type === 'gap')).toEqual([{ type: 'gap', from_block: 150, to_block: 199 }])
    expect(rowsOf(texts)).toEqual(canonicalRecords(inBlocks(lake.rows.logs, 140, 210), fields, 1))
    expect(messages.at(-1)).toEqual({ type: 'end', cursor: 210 })
  })

  it('paces a client that never acks through a history larger than every buffer: all of it, then end and 1000', async () => {
    const r = rng(11)
    const rows = makeRows(
      logs,
      Array.from({ length: 1500 }, (_, i) => i),
      r,
      makePools(r),
      30,
    )
    await buildLake(r2Store(env.LAKE), DEVNET, logs, [{ from: 0, to: 1499, rows }], { rowGroupSize: 2000 })
    const res = await upgrade('/v1/api/logs?chains=DEVNET&from_block=0&to_block=1499', { authorization: basic('alice', 'secret') })
    const { texts, closed } = listen(res)
    expect(await closed).toBe(1000)
    const bytes = texts.reduce((n, t) => n + t.length, 0)
    // Beyond the object's 4 MiB window, where a client that never acked used to stall and be closed with 4413.
    expect(bytes).toBeGreaterThan(3 * 4 * 1024 * 1024)
    expect(rowsOf(texts)).toEqual(canonicalRecords(rows, fields, DEVNET.id))
    expect(JSON.parse(texts.at(-1)!)).toEqual({ type: 'end', cursor: 1499 })
  })

  it('answers bad credentials and bad parameters at the upgrade, before the Durable Object', async () => {
    expect((await upgrade('/v1/api/logs?chains=ETH&from_block=100&to_block=101', { authorization: basic('alice', 'nope') })).status).toBe(
      401,
    )
    const bad = await upgrade('/v1/api/logs?chains=ETH&topic0=0x12', { authorization: basic('alice', 'secret') })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as Json).error.parameter).toBe('topic0')
  })

  it('refuses a live subscription when the chain is not followed', async () => {
    const res = await upgrade('/v1/api/logs?chains=ETH', { authorization: basic('alice', 'secret') })
    expect(res.status).toBe(400)
    expect(((await res.json()) as Json).error.code).toBe('live_unavailable')
  })

  it('takes browser credentials from a subprotocol, and never echoes them', async () => {
    const res = await upgrade('/v1/api/blocks?chains=ETH&from_block=100&to_block=102&fields=block_number', {
      'sec-websocket-protocol': `${PROTOCOL}, ${credentialProtocol('bob', 'hunter2')}`,
    })
    expect(res.headers.get('sec-websocket-protocol')).toBe(PROTOCOL)
    const a = listen(res)
    expect(await a.closed).toBe(1000)
    expect(a.texts.flatMap(t => JSON.parse(t).rows ?? [])).toEqual([
      { block_number: '0x64' },
      { block_number: '0x65' },
      { block_number: '0x66' },
    ])
    // (The `auth` message is checked by the object itself, with the object's own API_USERS: see test/live/durable.test.ts.)
  })

  it('keeps the window in Durable Object storage: blocks, rollback and finalization survive a reload', async () => {
    const r = rng(3)
    const pools = makePools(r)
    const rows = (n: number) => Object.fromEntries(EVM_DATASETS.map(d => [d.storage, toColumns(d, makeRows(d, [n], r, pools, 3))]))
    const hash = (n: number, tag = 'a') => '0x' + `${tag}${n}`.padStart(64, '0')
    const blocks = [11, 12, 13].map(n => windowBlock({ number: n, hash: hash(n), parentHash: hash(n - 1) }, EVM_DATASETS, rows(n)))
    const stub = LIVE.get(LIVE.idFromName('persistence-test'))
    await runInDurableObject(stub, async (_instance, state) => {
      const p = storagePersistence(state.storage)
      expect(await p.load()).toBeNull()
      await p.reset({ number: 10, hash: hash(10) })
      for (const b of blocks) await p.append(b)
      await p.rollback(12, blocks.slice(2))
      await p.finalize({ number: 11, hash: hash(11) }, blocks.slice(0, 1))
    })
    await runInDurableObject(stub, async (_instance, state) => {
      const loaded = await storagePersistence(state.storage).load()
      expect(loaded?.anchor).toEqual({ number: 11, hash: hash(11) })
      expect(loaded?.blocks.map(b => b.number)).toEqual([12])
      expect(loaded?.blocks[0].data.logs).toEqual(blocks[1].data.logs)
    })
  })
})

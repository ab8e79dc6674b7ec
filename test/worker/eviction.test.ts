/**
 * The Durable Object after eviction (part of the chaos suite, here because it runs in
 * workerd): workerd may drop the object's instance while its hibernatable WebSockets
 * stay open, and builds a new one on the same state when a socket speaks again. The
 * new instance must find every socket's session from its attachment and carry on. A
 * second LiveChainObject on the same state stands for that new instance: a socket waiting
 * for its auth message, and a subscription resumed from the cursor its attachment kept.
 */
/// <reference types="@cloudflare/vitest-plugin/types" />
import { env } from 'cloudflare:workers'
import { runInDurableObject } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { chainKey } from '../../src/chains/registry.ts'
import { r2Store } from '../../src/store/r2.ts'
import { LiveChainObject } from '../../src/worker/live-object.ts'
import { decodeJson } from '../format/decode.ts'
import { buildHttpLake, canonicalRecords, inBlocks, type HttpLake } from '../http/fixture.ts'
import { ETH } from '../support/chains.ts'
import { LIVE, upgradeOnWorker } from './socket.ts'

const fields = logs.fields.filter(f => !f.extra)
let lake: HttpLake

beforeAll(async () => {
  lake = await buildHttpLake(r2Store(env.LAKE))
})

/** The records of the `rows` messages, in order. */
const rowsOf = (texts: string[]) =>
  texts
    .filter(t => t.startsWith('{"type":"rows","rows":'))
    .flatMap(t => decodeJson(Buffer.from(t.slice('{"type":"rows","rows":'.length, -1)), fields))

describe('Durable Object eviction', () => {
  it('restores a socket waiting for its auth message in a new instance, which then serves the subscription', async () => {
    const { texts, closed } = await upgradeOnWorker('/v1/api/logs?chains=ETH&from_block=140&to_block=205', 'alice:secret')

    await runInDurableObject(LIVE.get(LIVE.idFromName(chainKey(ETH))), async (_old, state) => {
      const sockets = state.getWebSockets()
      expect(sockets.length).toBeGreaterThan(0)
      const fresh = new LiveChainObject(state, { ...env, LIVE, API_USERS: 'alice:secret' } as never)
      // The constructor restores in blockConcurrencyWhile; wait until it has.
      const restored = fresh as unknown as { sessions: Map<WebSocket, unknown> }
      for (let i = 0; i < 100 && restored.sessions.size < sockets.length; i++) await new Promise(r => setTimeout(r, 20))
      expect(restored.sessions.size).toBe(sockets.length)
      for (const ws of sockets) await fresh.webSocketMessage(ws, JSON.stringify({ type: 'auth', user: 'alice', password: 'secret' }))
    })

    expect(await closed).toBe(1000)
    const messages = texts.map(t => JSON.parse(t) as { type: string })
    expect(messages[0]).toMatchObject({ type: 'subscribed', from_block: 140, to_block: 205 })
    const rows = rowsOf(texts)
    expect(rows).toEqual(canonicalRecords(inBlocks(lake.rows.logs, 140, 205), fields, 1))
    expect(messages.at(-1)).toEqual({ type: 'end', cursor: 205 })
  })

  it('resumes a subscription in a new instance from the cursor its attachment kept: the rest of the range once, then end', async () => {
    const { texts, closed } = await upgradeOnWorker('/v1/api/logs?chains=ETH&from_block=100&to_block=205', 'alice:secret')

    await runInDurableObject(LIVE.get(LIVE.idFromName(chainKey(ETH))), async (_old, state) => {
      const sockets = state.getWebSockets().filter(ws => String(ws.deserializeAttachment()?.url).includes('from_block=100&'))
      expect(sockets).toHaveLength(1)
      // What the old instance checkpointed after delivering blocks up to 150 to alice, before it was evicted.
      sockets[0].serializeAttachment({ ...sockets[0].deserializeAttachment(), user: 'alice', cursor: 150, to: 205 })
      const fresh = new LiveChainObject(state, { ...env, LIVE, API_USERS: 'alice:secret' } as never)
      const restored = fresh as unknown as { sessions: Map<WebSocket, { state: string }> }
      for (let i = 0; i < 100 && restored.sessions.size < state.getWebSockets().length; i++) await new Promise(r => setTimeout(r, 20))
      expect([...restored.sessions.entries()].find(([ws]) => ws === sockets[0])?.[1].state).toBe('subscribed')
    })

    expect(await closed).toBe(1000)
    const messages = texts.map(t => JSON.parse(t) as { type: string; cursor?: number })
    const rows = rowsOf(texts)
    expect(rows).toEqual(canonicalRecords(inBlocks(lake.rows.logs, 151, 205), fields, 1))
    expect(messages.filter(m => m.type === 'progress').every(m => m.cursor! > 150)).toBe(true)
    expect(messages.at(-1)).toEqual({ type: 'end', cursor: 205 })
  })
})

/// <reference types="@cloudflare/vitest-plugin/types" />
/** A WebSocket upgraded on the Worker in workerd, and what it receives until it closes. */
import { env } from 'cloudflare:workers'
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { expect } from 'vitest'
import worker from '../../src/worker/index.ts'

export const LIVE = (env as unknown as { LIVE: DurableObjectNamespace }).LIVE

/** Upgrades `path` (under api.example.com) with `users` as API_USERS and `headers`; the socket is accepted and its messages collected. */
export async function upgradeOnWorker(path: string, users: string, headers: Record<string, string> = {}) {
  const ctx = createExecutionContext()
  const res = await worker.fetch(
    new Request(`http://api.example.com${path}`, { headers: { upgrade: 'websocket', ...headers } }) as never,
    { ...env, API_USERS: users, LIVE } as never,
    ctx,
  )
  await waitOnExecutionContext(ctx)
  expect(res.status).toBe(101)
  const socket = res.webSocket!
  const texts: string[] = []
  const closed = new Promise<number>(resolve => socket.addEventListener('close', e => resolve(e.code)))
  // Every server message is a text frame (workerd sends bytes as a binary one).
  socket.addEventListener('message', e => {
    expect(typeof e.data, 'a binary frame from the server').toBe('string')
    texts.push(e.data as string)
  })
  socket.accept()
  return { texts, closed }
}

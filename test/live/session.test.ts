/**
 * LiveSession's auth deadline: it bounds the wait for the `auth` message, not the
 * verification of one that arrived in time (PBKDF2 on a loaded machine, the rate binding).
 */
import { describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import type { LiveChain } from '../../src/live/hub.ts'
import { LiveSession } from '../../src/live/session.ts'
import type { Connection, Subscription } from '../../src/live/subscription.ts'
import type { QuerySpec } from '../../src/query/types.ts'

function session(requests: { limit(user: string): Promise<number> }) {
  const sent: unknown[] = []
  const closes: number[] = []
  const subscribed: string[] = []
  const conn: Connection = {
    send: m => sent.push(JSON.parse(typeof m === 'string' ? m : new TextDecoder().decode(m))),
    close: code => closes.push(code),
    buffered: () => 0,
  }
  const chain = {
    limits: { authTimeoutMs: 10, maxClientMessageBytes: 4096 },
    users: { max: 16 },
    subscribe: (user: string) => (subscribed.push(user), { drop: () => {} } as unknown as Subscription),
  } as unknown as LiveChain
  return { sent, closes, subscribed, conn, chain, requests }
}

describe('LiveSession auth deadline', () => {
  it('closes a socket whose auth message never came, and not one whose auth message is being verified', async () => {
    let admit!: (wait: number) => void
    const s = session({ limit: () => new Promise<number>(r => (admit = r)) })
    const users = await parseUsers('alice:secret')
    const opts = { chain: s.chain, spec: {} as QuerySpec, user: null, users, requests: s.requests, deadline: 1 }

    const silent = new LiveSession(s.conn, opts)
    expect(silent.expire(2)).toBe(true)
    expect(s.closes).toEqual([4401])
    expect(s.sent).toEqual([{ type: 'error', code: 'unauthorized', message: 'no auth message within 10 ms' }])

    const verifying = new LiveSession(s.conn, opts)
    const done = verifying.message(JSON.stringify({ type: 'auth', user: 'alice', password: 'secret' }))
    while (!admit) await new Promise(r => setTimeout(r, 1))
    expect(verifying.state).toBe('authenticating')
    expect(verifying.expire(Date.now() + 60_000)).toBe(false)
    admit(0)
    await done
    expect(verifying.state).toBe('subscribed')
    expect(s.subscribed).toEqual(['alice'])
    expect(s.closes).toEqual([4401])
  })
})

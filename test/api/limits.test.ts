import { describe, expect, it } from 'vitest'
import { bindingLimiter, ReadAllowance, StreamSlots, userLimits, WindowLimiter } from '../../src/api/limits.ts'

describe('WindowLimiter', () => {
  it('admits `limit` requests per key in a window, then says how long to wait', async () => {
    let now = 1_000_000
    const l = new WindowLimiter({ limit: 3, periodSeconds: 10, now: () => now })
    for (let i = 0; i < 3; i++) expect(await l.limit('a')).toBe(0)
    expect(await l.limit('b')).toBe(0)
    now += 2_500
    expect(await l.limit('a')).toBe(8)
    now += 7_400
    expect(await l.limit('a')).toBe(1)
    now += 100
    expect(await l.limit('a')).toBe(0)
  })
})

describe('bindingLimiter', () => {
  it("asks for one period when Cloudflare's binding refuses", async () => {
    let left = 1
    const keys: string[] = []
    const l = bindingLimiter({ limit: async ({ key }) => (keys.push(key), { success: left-- > 0 }) }, 60)
    expect(await l.limit('alice')).toBe(0)
    expect(await l.limit('alice')).toBe(60)
    expect(keys).toEqual(['alice', 'alice'])
  })
})

describe('ReadAllowance', () => {
  it('admits a user while its charge is within the allowance, then asks it to wait until enough has drained', () => {
    let now = 1_000_000
    const a = new ReadAllowance({ bytes: 1000, periodSeconds: 10, now: () => now })
    a.charge('alice', 900)
    expect(a.wait('alice')).toBe(0)
    a.charge('alice', 600)
    // 1,500 charged against 1,000 per 10 s: 500 over, drained in 5 s.
    expect(a.wait('alice')).toBe(5)
    expect(a.wait('bob')).toBe(0)
    now += 4_000
    expect(a.wait('alice')).toBe(1)
    now += 1_001
    expect(a.wait('alice')).toBe(0)
  })

  it('serves one response larger than the allowance, then makes its user wait in proportion', () => {
    let now = 0
    const a = new ReadAllowance({ bytes: 100, periodSeconds: 10, now: () => now })
    expect(a.wait('alice')).toBe(0)
    a.charge('alice', 1_000)
    expect(a.wait('alice')).toBe(90)
    now += 90_000
    expect(a.wait('alice')).toBe(0)
  })

  it('asks for at least a second, and forgets the oldest users beyond maxKeys', () => {
    const now = 0
    const a = new ReadAllowance({ bytes: 1000, periodSeconds: 10, maxKeys: 2, now: () => now })
    a.charge('alice', 1_001)
    expect(a.wait('alice')).toBe(1)
    a.charge('bob', 2_000)
    a.charge('carol', 2_000)
    expect(a.wait('alice')).toBe(0)
    expect(a.wait('carol')).toBe(10)
  })
})

describe('StreamSlots', () => {
  it('holds `max` streams per user and gives each slot back once', () => {
    const s = new StreamSlots(2)
    const a = s.acquire('alice')!
    const b = s.acquire('alice')!
    expect(s.acquire('alice')).toBeNull()
    expect(s.acquire('bob')).not.toBeNull()
    a.release()
    a.release()
    expect(s.count('alice')).toBe(1)
    expect(s.acquire('alice')).not.toBeNull()
    b.release()
    expect(s.count('alice')).toBe(1)
  })

  it('reclaims a lease without progress for leaseMs while it works; a reclaimed lease frees no other slot', () => {
    let now = 0
    const s = new StreamSlots(2, { leaseMs: 1000, now: () => now })
    const dead = s.acquire('alice')!
    const live = s.acquire('alice')!
    expect(s.acquire('alice')).toBeNull()
    now = 900
    live.renew(false)
    now = 1000
    // The dead one (no progress since 0) is reclaimed; the live one renewed at 900 is not.
    expect(s.count('alice')).toBe(1)
    const next = s.acquire('alice')!
    expect(next).not.toBeNull()
    expect(s.acquire('alice')).toBeNull()
    // The dead request's late release must not free the slot `next` holds.
    dead.release()
    expect(s.count('alice')).toBe(2)
    expect(s.acquire('alice')).toBeNull()
    next.release()
    live.release()
    expect(s.count('alice')).toBe(0)
  })

  it('never reclaims a lease waiting for its client to read, however long', () => {
    let now = 0
    const s = new StreamSlots(1, { leaseMs: 1000, now: () => now })
    const slow = s.acquire('alice')!
    slow.renew(true)
    now = 60_000
    expect(s.acquire('alice')).toBeNull()
    // A read that answers renews without changing the state; the client asking for more makes it work again.
    slow.renew()
    now = 120_000
    expect(s.count('alice')).toBe(1)
    slow.renew(false)
    now = 121_000
    expect(s.count('alice')).toBe(0)
    expect(s.acquire('alice')).not.toBeNull()
  })
})

describe('StreamSlots.outweighs', () => {
  it('says whether a user runs at least twice the streams of another user with one running', () => {
    const s = new StreamSlots(8)
    const take = (user: string, n: number) => Array.from({ length: n }, () => s.acquire(user)!)
    const alice = take('alice', 2)
    expect(s.outweighs('alice')).toBe(false)
    const bob = take('bob', 1)
    expect([s.outweighs('alice'), s.outweighs('bob')]).toEqual([true, false])
    bob.push(...take('bob', 1))
    // Alike: neither is held.
    expect([s.outweighs('alice'), s.outweighs('bob')]).toEqual([false, false])
    alice.push(...take('alice', 2))
    expect([s.outweighs('alice'), s.outweighs('bob')]).toEqual([true, false])
    bob.forEach(l => l.release())
    expect(s.outweighs('alice')).toBe(false)
    alice.forEach(l => l.release())
  })
})

describe('userLimits', () => {
  it("binds a user's fair share only while it runs at least twice another user's streams", async () => {
    const l = userLimits({ SCAN_CONCURRENCY: '1' }, undefined, { direct: true })
    const mine = [l.streams.acquire('alice')!, l.streams.acquire('alice')!]
    const steps: Promise<void>[] = []
    for (let i = 0; i < 3; i++) steps.push(l.turns!.turn('alice'))
    // Alone: every slice started at once.
    expect(l.turns!.load('alice')).toEqual({ started: 3, waiting: 0 })
    await Promise.all(steps)
    await new Promise(r => setImmediate(r))
    const theirs = l.streams.acquire('bob')!
    const held = [l.turns!.turn('alice'), l.turns!.turn('alice')]
    expect(l.turns!.load('alice')).toEqual({ started: 1, waiting: 1 })
    await Promise.all(held)
    theirs.release()
    mine.forEach(l => l.release())
  })

  it('reads the settings and refuses nonsense', async () => {
    const l = userLimits({
      RATE_LIMIT_REQUESTS: '2',
      RATE_LIMIT_PERIOD: '60',
      MAX_STREAMS_PER_USER: '3',
      READ_LIMIT_BYTES: '5000',
      SCAN_CONCURRENCY: '4',
    })
    expect(l.streams.max).toBe(3)
    expect(l.turns?.perRound).toBe(4)
    expect([l.reads.bytes, l.reads.periodMs]).toEqual([5000, 60_000])
    expect(userLimits({}).reads.bytes).toBe(512 * 2 ** 20)
    expect(() => userLimits({ READ_LIMIT_BYTES: '0' })).toThrow(/READ_LIMIT_BYTES/)
    expect(userLimits({}).turns?.perRound).toBe(1)
    expect(userLimits({ SCAN_CONCURRENCY: 'off' }).turns).toBeUndefined()
    expect(() => userLimits({ SCAN_CONCURRENCY: '-1' })).toThrow(/SCAN_CONCURRENCY/)
    expect((l.requests as WindowLimiter).max).toBe(2)
    expect((l.requests as WindowLimiter).periodMs).toBe(60_000)
    expect(() => userLimits({ MAX_STREAMS_PER_USER: '0' })).toThrow(/MAX_STREAMS_PER_USER/)
    expect(() => userLimits({ RATE_LIMIT_REQUESTS: '1e3x' })).toThrow(/RATE_LIMIT_REQUESTS/)
    expect(userLimits({}).streams.max).toBe(8)
  })
})

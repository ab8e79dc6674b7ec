import { describe, expect, it } from 'vitest'
import { FailedLogins } from '../../src/api/throttle.ts'

describe('FailedLogins', () => {
  it('lets an address fail `max` times in the window, then says how long to wait, per address', () => {
    let now = 1_000_000
    const f = new FailedLogins({ max: 3, windowMs: 60_000, now: () => now })
    for (let i = 0; i < 3; i++) {
      expect(f.retryAfter('a')).toBe(0)
      f.fail('a')
      now += 1_000
    }
    expect(f.retryAfter('a')).toBe(57)
    expect(f.retryAfter('b')).toBe(0)
    now += 56_500
    expect(f.retryAfter('a')).toBe(1)
    now += 600
    expect(f.retryAfter('a')).toBe(0)
  })

  it('forgets the oldest addresses past its size', () => {
    const f = new FailedLogins({ max: 1, maxKeys: 2 })
    for (const key of ['a', 'b', 'c']) f.fail(key)
    expect(f.retryAfter('a')).toBe(0)
    expect(f.retryAfter('c')).toBeGreaterThan(0)
  })
})

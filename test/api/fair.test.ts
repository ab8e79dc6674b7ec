import { describe, expect, it } from 'vitest'
import { FairShare } from '../../src/api/fair.ts'

/** A step that records when it starts and ends only when the test says so. */
function gated(log: string[], name: string): { step: () => Promise<string>; finish: () => void } {
  let finish!: () => void
  const done = new Promise<void>(r => (finish = r))
  return {
    step: async () => {
      log.push(name)
      await done
      return name
    },
    finish: () => finish(),
  }
}

const tick = () => new Promise(r => setTimeout(r, 0))

describe('FairShare', () => {
  it('runs at most `concurrency` steps at once and returns what each step returns', async () => {
    const share = new FairShare(2)
    const log: string[] = []
    const steps = ['a1', 'a2', 'a3'].map(n => gated(log, n))
    const results = steps.map(s => share.run('a', s.step))
    await tick()
    expect(log).toEqual(['a1', 'a2'])
    expect(share.load()).toEqual({ running: 2, waiting: 1 })
    steps[0].finish()
    await tick()
    expect(log).toEqual(['a1', 'a2', 'a3'])
    steps[1].finish()
    steps[2].finish()
    expect(await Promise.all(results)).toEqual(['a1', 'a2', 'a3'])
    expect(share.load()).toEqual({ running: 0, waiting: 0 })
  })

  it("puts a user's queued work behind another user's single step", async () => {
    const share = new FairShare(1)
    const log: string[] = []
    const abuser = Array.from({ length: 6 }, (_, i) => gated(log, `abuser${i}`))
    const mine = gated(log, 'other')
    const runs = abuser.map(s => share.run('abuser', s.step))
    await tick()
    const other = share.run('other', mine.step)
    abuser[0].finish()
    await tick()
    // The other user's step comes next, ahead of the five the abuser queued before it.
    expect(log).toEqual(['abuser0', 'other'])
    expect(share.load('abuser')).toEqual({ running: 0, waiting: 5 })
    mine.finish()
    for (const s of abuser.slice(1)) {
      s.finish()
      await tick()
    }
    await Promise.all([...runs, other])
    expect(log).toEqual(['abuser0', 'other', 'abuser1', 'abuser2', 'abuser3', 'abuser4', 'abuser5'])
  })

  it('gives the next turn to the waiting user running the fewest steps, in turn among equals', async () => {
    const share = new FairShare(2)
    const log: string[] = []
    const a = Array.from({ length: 4 }, (_, i) => gated(log, `a${i}`))
    const b = Array.from({ length: 2 }, (_, i) => gated(log, `b${i}`))
    const c = gated(log, 'c0')
    const runs = [...a.map(s => share.run('a', s.step))]
    await tick()
    runs.push(...b.map(s => share.run('b', s.step)), share.run('c', c.step))
    await tick()
    expect(log).toEqual(['a0', 'a1'])
    // a still runs one step: b and c (none running) come first, b having waited longer.
    a[0].finish()
    await tick()
    expect(log).toEqual(['a0', 'a1', 'b0'])
    a[1].finish()
    await tick()
    expect(log).toEqual(['a0', 'a1', 'b0', 'c0'])
    // b and c each run one; a runs none now, so a goes before b's second step.
    b[0].finish()
    await tick()
    expect(log.at(-1)).toBe('a2')
    c.finish()
    await tick()
    expect(log.at(-1)).toBe('b1')
    for (const s of [a[2], b[1], a[3]]) {
      s.finish()
      await tick()
    }
    await Promise.all(runs)
    expect(log).toEqual(['a0', 'a1', 'b0', 'c0', 'a2', 'b1', 'a3'])
  })

  it('frees the turn of a step that fails', async () => {
    const share = new FairShare(1)
    await expect(share.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(await share.run('b', async () => 'next')).toBe('next')
    expect(share.load()).toEqual({ running: 0, waiting: 0 })
  })

  it('refuses a concurrency that is not a positive integer', () => {
    expect(() => new FairShare(0)).toThrow(/concurrency/)
    expect(() => new FairShare(1.5)).toThrow(/concurrency/)
  })
})

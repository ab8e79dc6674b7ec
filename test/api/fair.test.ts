import { readFile } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { stripTypeScriptTypes } from 'node:module'
import { join } from 'node:path'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { describe, expect, it, vi } from 'vitest'
import { fairStore, FairShare } from '../../src/api/fair.ts'
import type { ObjectStore } from '../../src/store/types.ts'

/** A FairShare whose rounds end only when the test says (`endRound()`), not at the next task. */
function manual(perRound = 1): { share: FairShare; endRound: () => Promise<void> } {
  const ends: (() => void)[] = []
  const share = new FairShare({ perRound, later: fn => ends.push(fn), rescueMs: 60_000 })
  return {
    share,
    endRound: async () => {
      ends.splice(0).forEach(fn => fn())
      await tick()
    },
  }
}

const tick = () => new Promise(r => setTimeout(r, 0))

/** A promise and its resolve/reject. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => ([resolve, reject] = [res, rej]))
  return { promise, resolve, reject }
}

describe('FairShare', () => {
  it('starts one slice per user per round; more wait for the next round; run returns what the step returns', async () => {
    const { share, endRound } = manual()
    const log: string[] = []
    const runs = ['a1', 'a2', 'a3'].map(n => share.run('a', async () => (log.push(n), n)))
    await tick()
    expect(log).toEqual(['a1'])
    expect(share.load('a')).toEqual({ started: 1, waiting: 2 })
    await endRound()
    expect(log).toEqual(['a1', 'a2'])
    await endRound()
    expect(await Promise.all(runs)).toEqual(['a1', 'a2', 'a3'])
    await endRound()
    expect(share.load()).toEqual({ started: 0, waiting: 0 })
  })

  it("lets another user's slice run in the same round, ahead of what the busy user queued", async () => {
    const { share, endRound } = manual()
    const log: string[] = []
    const abuser = Array.from({ length: 6 }, (_, i) => share.run('abuser', async () => void log.push(`abuser${i}`)))
    await tick()
    const other = share.run('other', async () => void log.push('other'))
    await tick()
    // The other user starts at once: its slice of this round is free, the abuser's five queued ones wait.
    expect(log).toEqual(['abuser0', 'other'])
    expect(share.load('abuser')).toEqual({ started: 1, waiting: 5 })
    for (let i = 1; i < 6; i++) {
      await endRound()
      expect(log.at(-1)).toBe(`abuser${i}`)
    }
    await Promise.all([...abuser, other])
  })

  it('starts one slice of each waiting user per round', async () => {
    const { share, endRound } = manual()
    const log: string[] = []
    const step = (name: string) => async () => void log.push(name)
    const runs = [share.run('a', step('a0')), share.run('b', step('b0'))]
    await tick()
    runs.push(share.run('b', step('b1')), share.run('a', step('a1')), share.run('a', step('a2')), share.run('c', step('c0')))
    await tick()
    expect(log).toEqual(['a0', 'b0', 'c0'])
    await endRound()
    // One slice of each waiting user (each goes on from its own timer); a's second waits again.
    expect(log.slice(0, 3)).toEqual(['a0', 'b0', 'c0'])
    expect(log.slice(3).sort()).toEqual(['a1', 'b1'])
    await endRound()
    expect(log.at(-1)).toBe('a2')
    await Promise.all(runs)
  })

  it('holds nothing while a step waits: the same user starts again in the next round', async () => {
    const { share, endRound } = manual()
    const never = deferred<void>()
    void share.run('a', () => never.promise)
    await tick()
    await endRound()
    let ran = false
    await share.run('a', async () => void (ran = true))
    expect(ran).toBe(true)
    never.resolve()
  })

  it('loses no slice when a step fails', async () => {
    const { share, endRound } = manual()
    await expect(share.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    const next = share.run('a', async () => 'next')
    await endRound()
    expect(await next).toBe('next')
    await endRound()
    expect(share.load()).toEqual({ started: 0, waiting: 0 })
  })

  it('starts the next round from a waiting slice when the timer that should end the round never fires', async () => {
    // A Worker drops the pending timers of a request that ended or was cancelled.
    const share = new FairShare({ later: () => {} })
    await share.turn('a')
    const asked = performance.now()
    await share.turn('a')
    expect(performance.now() - asked).toBeGreaterThanOrEqual(40)
  })

  it('starts a waiting slice when its own timer fires, though an older slice of its user was left by a request gone', async () => {
    vi.useFakeTimers()
    try {
      // No round ends by itself (the request that scheduled it ended), and a request of the user left a
      // waiting slice whose timer was dropped with it (a Worker drops an ended request's timers).
      const share = new FairShare({ later: () => {}, rescueMs: 50 })
      await share.turn('a')
      void share.turn('a')
      vi.clearAllTimers()
      let started = false
      const mine = share.turn('a').then(() => (started = true))
      // Its timer ends the round, which goes to the older slice; the slice must start anyway, not wait on without a timer.
      await vi.advanceTimersByTimeAsync(50)
      expect(started).toBe(true)
      await mine
    } finally {
      vi.useRealTimers()
    }
  })

  it('allows `perRound` slices per user per round', async () => {
    const { share, endRound } = manual(2)
    const log: string[] = []
    const runs = ['a1', 'a2', 'a3'].map(n => share.run('a', async () => void log.push(n)))
    await tick()
    expect(log).toEqual(['a1', 'a2'])
    await endRound()
    await Promise.all(runs)
    expect(log).toEqual(['a1', 'a2', 'a3'])
  })

  it('holds a user to `perRound` only while it is contended, asked once a round', async () => {
    const busy = new Set<string>()
    const ends: (() => void)[] = []
    const share = new FairShare({ later: fn => ends.push(fn), rescueMs: 60_000, contended: user => [...busy].some(u => u !== user) })
    const log: string[] = []
    busy.add('a')
    const alone = ['a1', 'a2', 'a3'].map(n => share.run('a', async () => void log.push(n)))
    await tick()
    // Nobody else runs: every slice starts in the same round.
    expect(log).toEqual(['a1', 'a2', 'a3'])
    await Promise.all(alone)
    ends.splice(0).forEach(fn => fn())
    busy.add('b')
    const contended = ['a4', 'a5', 'a6'].map(n => share.run('a', async () => void log.push(n)))
    await tick()
    // A new round, b running: a's first slice starts, the others wait.
    expect(log.at(-1)).toBe('a4')
    expect(share.load('a')).toEqual({ started: 1, waiting: 2 })
    // b's request ended before the round did: a's waiting slices all start in the next.
    busy.delete('b')
    ends.splice(0).forEach(fn => fn())
    await tick()
    expect(log.slice(3)).toEqual(['a4', 'a5', 'a6'])
    await Promise.all(contended)
  })

  it('resumes waiting slices from the round itself when `direct` (no timer of their own)', async () => {
    vi.useFakeTimers()
    try {
      const ends: (() => void)[] = []
      const share = new FairShare({ later: fn => ends.push(fn), rescueMs: 50, direct: true })
      const log: string[] = []
      const runs = ['a1', 'a2'].map(n => share.run('a', async () => void log.push(n)))
      await Promise.resolve()
      await Promise.resolve()
      expect(log).toEqual(['a1'])
      // No timer fires (they are faked and never advanced): the round's end alone resumes the slice.
      ends.splice(0).forEach(fn => fn())
      await Promise.all(runs)
      expect(log).toEqual(['a1', 'a2'])
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  it('refuses a number of slices per round that is not a positive integer', () => {
    expect(() => new FairShare(0)).toThrow(/positive integer/)
    expect(() => new FairShare(1.5)).toThrow(/positive integer/)
  })

  it('ends rounds by itself at the next task', async () => {
    const share = new FairShare()
    const runs = Array.from({ length: 20 }, (_, i) => share.run(`u${i % 2}`, async () => i))
    expect(await Promise.all(runs)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    await tick()
    expect(share.load()).toEqual({ started: 0, waiting: 0 })
  })
})

describe('fairStore', () => {
  /** A store whose reads answer when the test says. */
  function slowStore() {
    const pending: { key: string; answer: ReturnType<typeof deferred<Uint8Array>> }[] = []
    const store = {
      get: async (key: string) => {
        const answer = deferred<Uint8Array>()
        pending.push({ key, answer })
        const body = await answer.promise
        return { key, size: body.length, etag: 'e', body, offset: 0 }
      },
      head: async () => null,
      list: async () => [],
      put: async () => null,
      delete: async () => {},
    } as ObjectStore
    return { store, pending }
  }

  it('takes no slice while storage answers, then one before the reader goes on', async () => {
    const { share, endRound } = manual()
    const { store, pending } = slowStore()
    const read = fairStore(store, share, 'a').get('k')
    await tick()
    // While a's read is out, a's slices of this round are free for other work.
    expect(share.load('a')).toEqual({ started: 0, waiting: 0 })
    await share.turn('a')
    pending[0].answer.resolve(new Uint8Array([1, 2]))
    await tick()
    // a started a slice in this round already: the read's caller goes on in the next one.
    expect(share.load('a')).toEqual({ started: 1, waiting: 1 })
    let done = false
    void read.then(() => (done = true))
    await tick()
    expect(done).toBe(false)
    await endRound()
    expect((await read)!.body).toEqual(new Uint8Array([1, 2]))
  })

  it('gives each of concurrent reads of one request its own slice, in turn', async () => {
    const { share, endRound } = manual()
    const { store, pending } = slowStore()
    const io = fairStore(store, share, 'a')
    const reads = [io.get('x'), io.get('y')]
    await tick()
    for (const p of pending) p.answer.resolve(new Uint8Array([p.key.charCodeAt(0)]))
    await tick()
    expect(share.load('a')).toEqual({ started: 1, waiting: 1 })
    await endRound()
    expect((await Promise.all(reads)).map(r => r!.key)).toEqual(['x', 'y'])
    await endRound()
    expect(share.load()).toEqual({ started: 0, waiting: 0 })
  })

  it('waits for a slice after a failed read too, then rethrows', async () => {
    const { share, endRound } = manual()
    const { store, pending } = slowStore()
    await share.turn('a')
    const read = fairStore(store, share, 'a').get('k')
    const failed = expect(read).rejects.toThrow('storage down')
    await tick()
    pending[0].answer.reject(new Error('storage down'))
    await tick()
    expect(share.load('a')).toEqual({ started: 1, waiting: 1 })
    await endRound()
    await failed
    await endRound()
    expect(share.load()).toEqual({ started: 0, waiting: 0 })
  })
})

/**
 * A Worker of FairShare alone: each request takes slices for its planning and for each read of
 * its body, and waits for one after each of its parallel "storage reads" (as fairStore does),
 * all of one of 8 users. Rounds then start slices of other requests, which workerd must not see
 * as one request waiting on another's promise.
 */
const FAIR_WORKER = `import { FairShare } from './api/fair.ts'
let share
const sleep = ms => new Promise(r => setTimeout(r, ms))
async function read(u) {
  try { await sleep(1 + Math.random() * 3) } finally { await share.turn(u) }
}
export default {
  async fetch(req) {
    share ??= new FairShare(1)
    const u = new URL(req.url).searchParams.get('u')
    await share.run(u, () => Promise.all([read(u), read(u), read(u)]))
    let n = 0
    return new Response(new ReadableStream({
      async pull(c) {
        if (n++ >= 8) return c.close()
        await share.run(u, async () => {
          await Promise.all([read(u), read(u)])
          c.enqueue(new TextEncoder().encode('chunk ' + n + '\\n'))
        })
      },
    }, { highWaterMark: 0 }))
  },
}`

describe('FairShare in workerd', () => {
  it('answers every request of 32 clients taking turns, none cancelled as hung', async () => {
    // fair.ts and what it imports, as they lie in src/, their types stripped
    const module = async (path: string) => ({
      type: 'ESModule' as const,
      path: `/fair-test/${path}`,
      contents: stripTypeScriptTypes(await readFile(join(import.meta.dirname, '../../src', path), 'utf8')),
    })
    const mf = new Miniflare(
      convertV4MiniflareOptions({
        modules: [
          { type: 'ESModule', path: '/fair-test/worker.js', contents: FAIR_WORKER },
          await module('api/fair.ts'),
          await module('store/wrap-reads.ts'),
        ],
        modulesRoot: '/fair-test',
        compatibilityDate: '2026-08-15',
        compatibilityFlags: ['nodejs_compat'],
        handleStructuredLogs: () => {},
      }),
    )
    const agent = new Agent({ keepAlive: true })
    try {
      const url = (await mf.ready).toString()
      const statuses: (number | string)[] = []
      const end = performance.now() + 3000
      const once = (user: string) =>
        new Promise<void>(resolve => {
          const req = request(`${url}?u=${user}`, { agent, timeout: 10_000 }, res => {
            res.resume()
            res.on('end', () => (statuses.push(res.statusCode!), resolve()))
            res.on('error', () => (statuses.push('broken'), resolve()))
          })
          req.on('timeout', () => req.destroy(new Error('no answer in 10 s')))
          req.on('error', err => (statuses.push(err.message), resolve()))
          req.end()
        })
      await Promise.all(
        Array.from({ length: 32 }, async (_, i) => {
          while (performance.now() < end) await once(`user${i % 8}`)
        }),
      )
      expect(statuses.length).toBeGreaterThan(32)
      expect(statuses.filter(s => s !== 200)).toEqual([])
    } finally {
      agent.destroy()
      await mf.dispose()
    }
  })
})

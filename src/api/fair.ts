/**
 * Fair shares of the server's CPU between users. Per-user limits bound what one user may
 * run (8 streams), but eight exports of one user beside one request of another still leave
 * the other a ninth of the CPU: its latency grows with the abuser's allowance.
 *
 * JavaScript runs one thing at a time, so what can be shared out is the order in which
 * work that is ready runs. The CPU work of data responses runs in slices: a slice is what
 * runs from the moment work may go on (a step of a response begins, a storage read has
 * answered) until it waits again. Slices are started in rounds: in each round a user may
 * start `perRound` slices (default 1) at once, and a user who asks for more waits for the
 * next round. A round ends when the task that began it is over (the next macrotask), and
 * the users who waited then start one slice each.
 * So a user with eight streams gets one slice per round like a user with one request, and
 * a user with one request waits for at most one slice of each other busy user. Nothing is
 * held while storage answers: a wait for storage is nobody's turn (holding a turn through
 * the reads, as this module first did, capped throughput and let one slow read delay all).
 *
 * Rounds end on a timer (setImmediate, else setTimeout 0) of whichever request began them, so a
 * round may start another request's slices. It only marks them started: each waiting slice goes
 * on from a timer of its own, which looks every POLL_MS. A promise of one request resolved by
 * another's code left requests that workerd cancelled as hung (500), tens a minute under load
 * with the fair shares on (BENCHMARKS.md, run W; scripts/dev/fair-hang.ts reproduces it). On a
 * Worker a request that ends or is cancelled also drops its pending timers, so a slice that waited
 * `rescueMs` without a round ends one itself, and starts.
 *
 * On the Node server nothing cancels a request for being resumed by another's code, so a round
 * resumes the slices it starts itself (`direct`), with no poll timers: with hundreds of slices
 * waiting, their polls cost the throughput the fair shares were measured to lose (run Z).
 *
 * The shares bind only where they change something (`contended`; by default always): the
 * server holds a user to `perRound` only while it runs at least twice the streams of another
 * user with one running (`StreamSlots.outweighs`). A user alone, or users running alike (who get
 * alike CPU anyway), start every slice at once: the rounds' own cost, a macrotask each, took
 * 12–56 % of the Node server's throughput at 256 clients of 16 users (BENCHMARKS.md, runs Z and AA).
 * Asked once per user per round.
 *
 * Counted per process (Node), or per isolate (Worker).
 */
import type { ObjectStore } from '../store/types.ts'
import { wrapReads } from '../store/wrap-reads.ts'

/** Slices a user may start per round by default (README "Limits"). */
export const DEFAULT_SCAN_CONCURRENCY = 1

/** A waiting slice starts the next round itself if none came within this many ms (default). */
const RESCUE_MS = 50

/** How often a waiting slice looks whether a round started it, ms. */
const POLL_MS = 1

/** Runs `fn` in a later macrotask: after every microtask of the current task. */
const nextTask: (fn: () => void) => void = typeof setImmediate === 'function' ? fn => void setImmediate(fn) : fn => void setTimeout(fn, 0)

export interface FairShareOptions {
  /** Slices a user may start per round (default 1). */
  perRound?: number
  /** Ends a round after the current task (default setImmediate, else setTimeout 0): for tests. */
  later?: (fn: () => void) => void
  /** A waiting slice starts the next round itself after this many ms if none came (default 50). */
  rescueMs?: number
  /** Resume waiting slices from the round that starts them (Node), not from their own timers (workerd). */
  direct?: boolean
  /** Whether `user` is to be held to `perRound` now (default: always); asked once per user per round. */
  contended?: (user: string) => boolean
}

export class FairShare {
  readonly perRound: number
  private readonly later: (fn: () => void) => void
  private readonly rescueMs: number
  private readonly direct: boolean
  private readonly contended: (user: string) => boolean
  /** Slices each user started in this round. */
  private readonly started = new Map<string, number>()
  /** Slices waiting per user, oldest first. */
  private readonly waiting = new Map<string, (() => void)[]>()
  /** When each user last started a slice (a count of slices started). */
  private readonly lastSlice = new Map<string, number>()
  private slices = 0
  /** Whether each user who asked in this round is held to `perRound`. */
  private readonly held = new Map<string, boolean>()
  /** Whether the end of the round is scheduled. */
  private ending = false

  constructor(options: number | FairShareOptions = {}) {
    const {
      perRound = DEFAULT_SCAN_CONCURRENCY,
      later = nextTask,
      rescueMs = RESCUE_MS,
      direct = false,
      contended = () => true,
    } = typeof options === 'number' ? { perRound: options } : options
    if (!Number.isSafeInteger(perRound) || perRound < 1) throw new Error(`slices per round must be a positive integer, got ${perRound}`)
    this.perRound = perRound
    this.later = later
    this.rescueMs = rescueMs
    this.direct = direct
    this.contended = contended
  }

  /** Resolves when `user` may start a slice of work: at once if it has one left in this round, else in a later round. */
  turn(user: string): Promise<void> {
    this.endRoundLater()
    if ((this.started.get(user) ?? 0) < this.perRound || !this.isHeld(user)) {
      this.start(user)
      return Promise.resolve()
    }
    if (this.direct) return new Promise<void>(resolve => this.wait(user, resolve))
    // A round that starts this slice may run in another request: it only marks it started, and the
    // slice's own timer goes on (resolving it from another request's code left requests hung in workerd).
    let started = false
    const grant = () => void (started = true)
    this.wait(user, grant)
    return new Promise<void>(resolve => {
      let waited = 0
      const poll = () => {
        if (!started && (waited += POLL_MS) >= this.rescueMs) {
          // No round came (the request that scheduled it ended, dropping its timer): this slice ends one, and starts.
          this.endRound()
          this.startWaiting(user, grant)
        }
        if (started) resolve()
        else setTimeout(poll, POLL_MS)
      }
      setTimeout(poll, POLL_MS)
    })
  }

  /** Runs `step` as a slice of `user`'s: once it may start (the slice lasts until the step first waits). */
  async run<T>(user: string, step: () => Promise<T>): Promise<T> {
    await this.turn(user)
    return step()
  }

  /** Slices started in this round, and waiting, for `user` (all users without one). */
  load(user?: string): { started: number; waiting: number } {
    if (user !== undefined) return { started: this.started.get(user) ?? 0, waiting: this.waiting.get(user)?.length ?? 0 }
    let started = 0
    let waiting = 0
    for (const n of this.started.values()) started += n
    for (const q of this.waiting.values()) waiting += q.length
    return { started, waiting }
  }

  private isHeld(user: string): boolean {
    let held = this.held.get(user)
    if (held === undefined) this.held.set(user, (held = this.contended(user)))
    return held
  }

  private wait(user: string, slice: () => void): void {
    const queue = this.waiting.get(user)
    if (queue) queue.push(slice)
    else this.waiting.set(user, [slice])
  }

  /** Starts `slice` of `user` at once if it is still waiting. */
  private startWaiting(user: string, slice: () => void): void {
    const queue = this.waiting.get(user)
    const at = queue?.indexOf(slice) ?? -1
    if (at < 0) return
    queue!.splice(at, 1)
    if (queue!.length === 0) this.waiting.delete(user)
    this.start(user)
    slice()
  }

  private start(user: string): void {
    this.started.set(user, (this.started.get(user) ?? 0) + 1)
    this.lastSlice.set(user, ++this.slices)
  }

  private endRoundLater(): void {
    if (this.ending) return
    this.ending = true
    this.later(() => this.endRound())
  }

  /**
   * Starts a round: `perRound` waiting slices of each user (all of a user nobody contends any
   * more) are started, or on workerd marked started (each goes on from its own timer).
   */
  private endRound(): void {
    this.ending = false
    this.started.clear()
    this.held.clear()
    const users = [...this.waiting.keys()].sort((a, b) => this.lastSlice.get(a)! - this.lastSlice.get(b)!)
    for (const user of users) {
      const queue = this.waiting.get(user)!
      const go = queue.splice(0, this.isHeld(user) ? this.perRound : queue.length)
      if (queue.length === 0) this.waiting.delete(user)
      for (const resolve of go) {
        this.start(user)
        resolve()
      }
    }
    if (this.started.size > 0) this.endRoundLater()
    else this.lastSlice.clear()
  }
}

/**
 * `store` for one request of `user`: each read, once storage has answered (or failed),
 * waits for a slice before its caller goes on, so the CPU work that follows a read is one
 * of the user's slices and the wait for storage is nobody's. Writes pass through.
 */
export function fairStore(store: ObjectStore, share: FairShare, user: string): ObjectStore {
  return wrapReads(store, async read => {
    try {
      return await read
    } finally {
      await share.turn(user)
    }
  })
}

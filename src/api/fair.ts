/**
 * Fair shares of the server's CPU between users. Per-user limits bound what one user may
 * run (8 streams), but eight exports of one user beside one request of another still leave
 * the other a ninth of the CPU: its latency grows with the abuser's allowance. Here every
 * step of a data response (planning with the first batch, then each batch read and encoded)
 * takes a turn: at most `concurrency` steps run at once, and when more wait, the next turn
 * goes to the waiting user who runs the fewest steps now, and among equals to the one whose
 * last turn is the oldest. So a user's work queues behind its own, and a user with one
 * request waits behind at most one step per other busy user, whatever their number of streams.
 *
 * Counted per process (Node), or per isolate on a Worker with SCAN_CONCURRENCY set.
 */

/** The defaults (README "Limits"). */
export const DEFAULT_SCAN_CONCURRENCY = 2

export class FairShare {
  readonly concurrency: number
  private active = 0
  /** Steps running per user. */
  private readonly running = new Map<string, number>()
  /** Steps waiting per user, oldest first, users in the order they began to wait. */
  private readonly waiting = new Map<string, (() => void)[]>()
  /** When each user with work last got a turn (a count of turns given). */
  private readonly lastTurn = new Map<string, number>()
  private turns = 0

  constructor(concurrency: number = DEFAULT_SCAN_CONCURRENCY) {
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new Error(`concurrency must be a positive integer, got ${concurrency}`)
    this.concurrency = concurrency
  }

  /** Runs `step` as one of `user`'s turns: now when a turn is free, else when fairness gives `user` the next one. */
  async run<T>(user: string, step: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency || this.waiting.size > 0)
      await new Promise<void>(resolve => {
        const queue = this.waiting.get(user)
        if (queue) queue.push(resolve)
        else this.waiting.set(user, [resolve])
      })
    else this.start(user)
    try {
      return await step()
    } finally {
      this.finish(user)
    }
  }

  /** Steps running now, and waiting, for `user` (all users without one). */
  load(user?: string): { running: number; waiting: number } {
    if (user !== undefined) return { running: this.running.get(user) ?? 0, waiting: this.waiting.get(user)?.length ?? 0 }
    let waiting = 0
    for (const q of this.waiting.values()) waiting += q.length
    return { running: this.active, waiting }
  }

  private start(user: string): void {
    this.active++
    this.running.set(user, (this.running.get(user) ?? 0) + 1)
    this.lastTurn.set(user, ++this.turns)
  }

  private finish(user: string): void {
    this.active--
    const left = (this.running.get(user) ?? 1) - 1
    if (left > 0) this.running.set(user, left)
    else {
      this.running.delete(user)
      if (!this.waiting.has(user)) this.lastTurn.delete(user)
    }
    while (this.active < this.concurrency && this.waiting.size > 0) this.next()
  }

  /** Gives a turn to the waiting user running the fewest steps; among equals, the one whose last turn is oldest. */
  private next(): void {
    let chosen = ''
    let best = [Infinity, Infinity]
    for (const user of this.waiting.keys()) {
      const rank = [this.running.get(user) ?? 0, this.lastTurn.get(user) ?? 0]
      if (rank[0] < best[0] || (rank[0] === best[0] && rank[1] < best[1])) [best, chosen] = [rank, user]
    }
    const queue = this.waiting.get(chosen)!
    const resolve = queue.shift()!
    if (queue.length === 0) this.waiting.delete(chosen)
    this.start(chosen)
    resolve()
  }
}

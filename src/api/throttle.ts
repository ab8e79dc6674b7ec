/**
 * Throttling of failed logins per client address. Every check of a password costs
 * ~13 ms of PBKDF2, so a client guessing passwords (or just sending bad ones) would
 * spend the service's CPU and slow everyone else down: after `max` failures within
 * `windowMs` its requests are refused with 429 before any password is checked, until
 * the oldest failure leaves the window. Counts are kept in memory (per process, per
 * Worker isolate), which bounds the work one client can cause there.
 */

/** The header that carries the client's address: Cloudflare sets it; the Node server sets it from the socket. */
export const CLIENT_ADDRESS_HEADER = 'cf-connecting-ip'

export interface ThrottleOptions {
  /** Failures allowed within the window (default 20). */
  max?: number
  /** The window, ms (default 60,000). */
  windowMs?: number
  /** Addresses tracked at most; the oldest are forgotten first (default 10,000). */
  maxKeys?: number
  now?: () => number
}

export class FailedLogins {
  private readonly max: number
  private readonly windowMs: number
  private readonly maxKeys: number
  private readonly now: () => number
  /** Failure times per address, oldest first. */
  private readonly failures = new Map<string, number[]>()

  constructor(options: ThrottleOptions = {}) {
    this.max = options.max ?? 20
    this.windowMs = options.windowMs ?? 60_000
    this.maxKeys = options.maxKeys ?? 10_000
    this.now = options.now ?? Date.now
  }

  /** Seconds until `key` may try again, or 0 when it may now. */
  retryAfter(key: string): number {
    const times = this.recent(key)
    if (times.length < this.max) return 0
    return Math.max(1, Math.ceil((times[times.length - this.max] + this.windowMs - this.now()) / 1000))
  }

  /** Records a failed login of `key`. */
  fail(key: string): void {
    const times = this.recent(key)
    times.push(this.now())
    this.failures.delete(key)
    this.failures.set(key, times.slice(-this.max))
    if (this.failures.size > this.maxKeys) this.failures.delete(this.failures.keys().next().value!)
  }

  private recent(key: string): number[] {
    const since = this.now() - this.windowMs
    return (this.failures.get(key) ?? []).filter(t => t > since)
  }
}

/**
 * Per-user limits: a request rate, a number of concurrent data streams and an allowance of
 * storage bytes read. One user hammering the API (a loop, a misconfigured client, a leaked
 * password) would otherwise take the CPU, the storage requests and the sockets everyone else
 * shares. All are answered with 429 and `Retry-After`; a WebSocket that authenticates by
 * message is closed with 4429 (the status, as every close code derives from it).
 *
 * The request rate is counted by a `RateLimiter`: on Cloudflare the platform's
 * rate-limiting binding (per key across an isolate's location, see wrangler.toml), on
 * the Node server `WindowLimiter`, in process. Concurrent streams are counted where they
 * run (`StreamSlots`): per process, or per Worker isolate, so on Workers a user's
 * streams spread over several isolates may exceed the cap in total.
 */
import { ApiError } from './errors.ts'
import { DEFAULT_SCAN_CONCURRENCY, FairShare } from './fair.ts'
import type { ObjectStore } from '../store/types.ts'
import { wrapReads } from '../store/wrap-reads.ts'

/** The defaults (README "Limits"). */
export const DEFAULT_USER_LIMITS = {
  /** Requests per user per period. */
  requests: 50,
  /** The period, seconds (Cloudflare's binding accepts 10 or 60). */
  periodSeconds: 10,
  /** Data streams (HTTP data responses) a user may have running at once. */
  streams: 8,
  /** A stream slot whose stream shows no progress for this long while it works is reclaimed. */
  streamLeaseSeconds: 30,
  /** Bytes of object storage a user's data responses may read per period (512 MiB: about 50 MiB/s). */
  readBytes: 512 * 2 ** 20,
  /** Users tracked at most by the in-process counters; the oldest are forgotten first. */
  maxKeys: 10_000,
}

/** Counts one request of `key`: 0 when it is admitted, else the seconds to wait. */
export interface RateLimiter {
  limit(key: string): Promise<number>
}

export interface WindowLimiterOptions {
  /** Requests per window (default 50). */
  limit?: number
  /** The window, seconds (default 10). */
  periodSeconds?: number
  maxKeys?: number
  now?: () => number
}

/**
 * Fixed windows per key, in memory: `limit` requests from the key's first request on,
 * then refusals until the window ends (the same rule as Cloudflare's binding, so both
 * runtimes answer alike).
 */
export class WindowLimiter implements RateLimiter {
  readonly max: number
  readonly periodMs: number
  private readonly maxKeys: number
  private readonly now: () => number
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(options: WindowLimiterOptions = {}) {
    this.max = options.limit ?? DEFAULT_USER_LIMITS.requests
    this.periodMs = (options.periodSeconds ?? DEFAULT_USER_LIMITS.periodSeconds) * 1000
    this.maxKeys = options.maxKeys ?? DEFAULT_USER_LIMITS.maxKeys
    this.now = options.now ?? Date.now
  }

  async limit(key: string): Promise<number> {
    const now = this.now()
    let w = this.windows.get(key)
    if (!w || now - w.start >= this.periodMs) {
      w = { start: now, count: 0 }
      this.windows.delete(key)
      this.windows.set(key, w)
      if (this.windows.size > this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
    }
    if (w.count >= this.max) return Math.max(1, Math.ceil((w.start + this.periodMs - now) / 1000))
    w.count++
    return 0
  }
}

export interface ReadAllowanceOptions {
  /** Storage bytes per period (default 512 MiB). */
  bytes?: number
  /** The period, seconds (default 10). */
  periodSeconds?: number
  maxKeys?: number
  now?: () => number
}

/**
 * What a user's data responses cost, beside how many there are: the object-storage bytes they
 * read, charged when each response ends (its access-log `bytes_fetched`). The charge drains at
 * `bytes` per period (a leaky bucket), and while a user's charge is above `bytes` its data
 * requests are refused until enough has drained. So a user whose requests are few but heavy
 * (full exports) is held to about `bytes` per period like any other, and one export larger than
 * the allowance is served, then paid for by a wait in proportion. Counted in process (per
 * isolate on a Worker).
 */
export class ReadAllowance {
  readonly bytes: number
  readonly periodMs: number
  private readonly maxKeys: number
  private readonly now: () => number
  /** Per user: the charge not drained yet, bytes, as of `at`. */
  private readonly charges = new Map<string, { level: number; at: number }>()

  constructor(options: ReadAllowanceOptions = {}) {
    this.bytes = options.bytes ?? DEFAULT_USER_LIMITS.readBytes
    this.periodMs = (options.periodSeconds ?? DEFAULT_USER_LIMITS.periodSeconds) * 1000
    this.maxKeys = options.maxKeys ?? DEFAULT_USER_LIMITS.maxKeys
    this.now = options.now ?? Date.now
  }

  /** Seconds `user` must wait before its next data request: 0 while its charge is within the allowance. */
  wait(user: string): number {
    const over = this.level(user) - this.bytes
    return over <= 0 ? 0 : Math.max(1, Math.ceil((over * this.periodMs) / this.bytes / 1000))
  }

  /** Adds what one of `user`'s responses read. */
  charge(user: string, bytes: number): void {
    const level = this.level(user) + bytes
    this.charges.delete(user)
    if (level > 0) this.charges.set(user, { level, at: this.now() })
    if (this.charges.size > this.maxKeys) this.charges.delete(this.charges.keys().next().value!)
  }

  /** `user`'s charge now, drained since it was last changed. */
  private level(user: string): number {
    const c = this.charges.get(user)
    return c ? Math.max(0, c.level - ((this.now() - c.at) * this.bytes) / this.periodMs) : 0
  }
}

/** 429 for a user whose data responses read more than its allowance. */
export const tooMuchRead = (user: string, retryAfter: number, allowance: ReadAllowance): ApiError =>
  new ApiError(
    429,
    'too_much_read',
    `user ${user} read more than ${allowance.bytes} bytes of storage per ${allowance.periodMs / 1000} s; retry in ${retryAfter} s`,
    { headers: { 'Retry-After': String(retryAfter) } },
  )

/** Cloudflare's rate-limiting binding (`[[ratelimits]]` in wrangler.toml). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>
}

/**
 * The platform's limiter. It answers only yes or no, so a refusal asks the client to
 * wait one whole period: the longest the current window can still last.
 */
export function bindingLimiter(binding: RateLimitBinding, periodSeconds: number = DEFAULT_USER_LIMITS.periodSeconds): RateLimiter {
  return { limit: async key => ((await binding.limit({ key })).success ? 0 : periodSeconds) }
}

/**
 * A stream's hold on one of its user's slots. A request that dies without reaching the end of
 * its body (workerd cancels it as hung, or its client goes before the body starts) may never call
 * `release`, so a slot is a lease: one whose stream shows no progress for `leaseMs` while it works
 * (it is not waiting for its client to read) is reclaimed by the user's next `acquire`.
 */
export interface StreamLease {
  /** Gives the slot back, once; nothing when the lease was reclaimed (the slot is someone else's by then). */
  release(): void
  /** The stream made progress; `waiting`: it now waits for its client to read (never reclaimed meanwhile) or works again (unchanged when absent). */
  renew(waiting?: boolean): void
}

export interface StreamSlotsOptions {
  /** A working stream without progress for this long loses its slot (default 30 s). */
  leaseMs?: number
  now?: () => number
}

interface Held {
  /** When the stream last made progress. */
  at: number
  /** Whether it waits for its client to read. */
  waiting: boolean
}

/** Concurrent streams per user, counted in this process or isolate, as leases. */
export class StreamSlots {
  readonly max: number
  readonly leaseMs: number
  private readonly now: () => number
  private readonly held = new Map<string, Set<Held>>()

  constructor(max: number = DEFAULT_USER_LIMITS.streams, options: StreamSlotsOptions = {}) {
    this.max = max
    this.leaseMs = options.leaseMs ?? DEFAULT_USER_LIMITS.streamLeaseSeconds * 1000
    this.now = options.now ?? Date.now
  }

  /** Takes a slot for `user`, or returns null at the cap (once its stale leases are reclaimed). */
  acquire(user: string): StreamLease | null {
    if (this.count(user) >= this.max) return null
    const lease: Held = { at: this.now(), waiting: false }
    const mine = this.held.get(user)
    if (mine) mine.add(lease)
    else this.held.set(user, new Set([lease]))
    return {
      release: () => {
        const set = this.held.get(user)
        if (set?.delete(lease) && set.size === 0) this.held.delete(user)
      },
      renew: waiting => {
        lease.at = this.now()
        if (waiting !== undefined) lease.waiting = waiting
      },
    }
  }

  /**
   * Whether `user` runs at least twice the streams of another user with one running: what makes
   * the fair shares bind it (src/api/fair.ts). Users running alike get alike CPU without them, so
   * they are not held; stale leases count until reclaimed.
   */
  outweighs(user: string): boolean {
    const mine = this.held.get(user)?.size ?? 0
    for (const [other, theirs] of this.held) if (other !== user && 2 * theirs.size <= mine) return true
    return false
  }

  /** Streams `user` has running (stale leases reclaimed first). */
  count(user: string): number {
    const mine = this.held.get(user)
    if (!mine) return 0
    const stale = this.now() - this.leaseMs
    for (const lease of mine) if (!lease.waiting && lease.at <= stale) mine.delete(lease)
    if (mine.size === 0) this.held.delete(user)
    return mine.size
  }
}

/** `store` for one stream: every read that answers renews its lease (a scan that reads without yet producing a chunk is progress). */
export function renewingStore(store: ObjectStore, lease: StreamLease): ObjectStore {
  return wrapReads(store, read => read.finally(() => lease.renew()))
}

/**
 * How long a refusal for the request rate is held before it is sent (at most its Retry-After):
 * a client that retries in a loop then costs a timer, not a request's CPU, so it cannot crowd
 * out other users with cheap 429s (BENCHMARKS.md, run Q: ~1,300 refusals a second otherwise).
 */
export const REFUSAL_HOLD_MS = 1000

/** Waits before a refusal that asks the client to wait `retryAfter` seconds is sent (REFUSAL_HOLD_MS at most). */
export const holdRefusal = (retryAfter: number): Promise<void> =>
  new Promise(resolve => setTimeout(resolve, Math.min(retryAfter * 1000, REFUSAL_HOLD_MS)))

/** 429 for a user over the request rate. */
export const tooManyRequests = (user: string, retryAfter: number): ApiError =>
  new ApiError(429, 'too_many_requests', `user ${user} is over the request rate; retry in ${retryAfter} s`, {
    headers: { 'Retry-After': String(retryAfter) },
  })

/** Seconds a client is asked to wait when its streams are at the cap: streams usually end within that. */
export const STREAM_RETRY_AFTER_SECONDS = 1

/** 429 for a user with `max` streams running already. */
export const tooManyStreams = (user: string, max: number): ApiError =>
  new ApiError(429, 'too_many_streams', `user ${user} has ${max} data streams running already; wait for one to end`, {
    headers: { 'Retry-After': String(STREAM_RETRY_AFTER_SECONDS) },
  })

/** A positive integer from configuration text (an environment variable, a Worker var), else `fallback`. */
export function limitSetting(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === '') return fallback
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(text)}`)
  return n
}

/** The SCAN_CONCURRENCY that turns the fair shares off. */
export const FAIR_SHARES_OFF = 'off'

/** The settings both runtimes read (environment variables on the Node server, vars on a Worker). */
export interface LimitSettings {
  /** Requests per user per period (default 50; on Cloudflare the binding's `simple.limit` applies instead). */
  RATE_LIMIT_REQUESTS?: string
  /** The period, seconds (default 10; on Cloudflare keep it equal to the binding's `simple.period`). */
  RATE_LIMIT_PERIOD?: string
  /** Concurrent data streams per user (default 8). */
  MAX_STREAMS_PER_USER?: string
  /** Storage bytes a user's data responses may read per period (default 512 MiB), counted in process or isolate. */
  READ_LIMIT_BYTES?: string
  /** Slices of CPU work a user may start per round, shared out fairly by user (default 1; `off`: no fair shares; see fair.ts). */
  SCAN_CONCURRENCY?: string
}

/** The per-user limits from settings; `binding` (Cloudflare's) counts requests instead of the process when given. */
export function userLimits(
  settings: LimitSettings,
  binding?: RateLimitBinding,
  runtime: { direct?: boolean } = {},
): { requests: RateLimiter; streams: StreamSlots; reads: ReadAllowance; turns?: FairShare } {
  const periodSeconds = limitSetting('RATE_LIMIT_PERIOD', settings.RATE_LIMIT_PERIOD, DEFAULT_USER_LIMITS.periodSeconds)
  const streams = new StreamSlots(limitSetting('MAX_STREAMS_PER_USER', settings.MAX_STREAMS_PER_USER, DEFAULT_USER_LIMITS.streams))
  return {
    requests: binding
      ? bindingLimiter(binding, periodSeconds)
      : new WindowLimiter({
          limit: limitSetting('RATE_LIMIT_REQUESTS', settings.RATE_LIMIT_REQUESTS, DEFAULT_USER_LIMITS.requests),
          periodSeconds,
        }),
    streams,
    reads: new ReadAllowance({
      bytes: limitSetting('READ_LIMIT_BYTES', settings.READ_LIMIT_BYTES, DEFAULT_USER_LIMITS.readBytes),
      periodSeconds,
    }),
    // On unless turned off: bound to users who outweigh another, they keep others' p99 beside a heavy user at no cost to users alike (BENCHMARKS.md runs AB, AC).
    ...(settings.SCAN_CONCURRENCY?.trim() !== FAIR_SHARES_OFF
      ? {
          turns: new FairShare({
            perRound: limitSetting('SCAN_CONCURRENCY', settings.SCAN_CONCURRENCY, DEFAULT_SCAN_CONCURRENCY),
            direct: runtime.direct,
            contended: user => streams.outweighs(user),
          }),
        }
      : {}),
  }
}

/**
 * Per-user limits: a request rate and a number of concurrent data streams. One user
 * hammering the API (a loop, a misconfigured client, a leaked password) would otherwise
 * take the CPU, the storage requests and the sockets everyone else shares. Both are
 * answered with 429 and `Retry-After`; a WebSocket that authenticates by message is
 * closed with 4429 (the status, as every close code derives from it).
 *
 * The request rate is counted by a `RateLimiter`: on Cloudflare the platform's
 * rate-limiting binding (per key across an isolate's location, see wrangler.toml), on
 * the Node server `WindowLimiter`, in process. Concurrent streams are counted where they
 * run (`StreamSlots`): per process, or per Worker isolate, so on Workers a user's
 * streams spread over several isolates may exceed the cap in total.
 */
import { ApiError } from './errors.ts'
import { DEFAULT_SCAN_CONCURRENCY, FairShare } from './fair.ts'

/** The defaults (README "Limits"). */
export const DEFAULT_USER_LIMITS = {
  /** Requests per user per period. */
  requests: 200,
  /** The period, seconds (Cloudflare's binding accepts 10 or 60). */
  periodSeconds: 10,
  /** Data streams (HTTP data responses) a user may have running at once. */
  streams: 8,
  /** Users tracked at most by the in-process counters; the oldest are forgotten first. */
  maxKeys: 10_000,
}

/** Counts one request of `key`: 0 when it is admitted, else the seconds to wait. */
export interface RateLimiter {
  limit(key: string): Promise<number>
}

export interface WindowLimiterOptions {
  /** Requests per window (default 200). */
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

/** Concurrent streams per user, counted in this process or isolate. */
export class StreamSlots {
  readonly max: number
  private readonly counts = new Map<string, number>()

  constructor(max: number = DEFAULT_USER_LIMITS.streams) {
    this.max = max
  }

  /** Takes a slot for `user`, or returns null at the cap; the function returned gives it back (once). */
  acquire(user: string): (() => void) | null {
    const n = this.counts.get(user) ?? 0
    if (n >= this.max) return null
    this.counts.set(user, n + 1)
    let held = true
    return () => {
      if (!held) return
      held = false
      const left = (this.counts.get(user) ?? 1) - 1
      if (left > 0) this.counts.set(user, left)
      else this.counts.delete(user)
    }
  }

  /** Streams `user` has running. */
  count(user: string): number {
    return this.counts.get(user) ?? 0
  }
}

/**
 * How long a refusal for the request rate is held before it is sent (at most its Retry-After):
 * a client that retries in a loop then costs a timer, not a request's CPU, so it cannot crowd
 * out other users with cheap 429s (BENCHMARKS.md, run Q: ~1,300 refusals a second otherwise).
 */
export const REFUSAL_HOLD_MS = 1000

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

/** The settings both runtimes read (environment variables on the Node server, vars on a Worker). */
export interface LimitSettings {
  /** Requests per user per period (default 200; on Cloudflare the binding's `simple.limit` applies instead). */
  RATE_LIMIT_REQUESTS?: string
  /** The period, seconds (default 10; on Cloudflare keep it equal to the binding's `simple.period`). */
  RATE_LIMIT_PERIOD?: string
  /** Concurrent data streams per user (default 8). */
  MAX_STREAMS_PER_USER?: string
  /** Steps of data responses running at once, shared out fairly by user (unset: no fair shares; see fair.ts). */
  SCAN_CONCURRENCY?: string
}

/** The per-user limits from settings; `binding` (Cloudflare's) counts requests instead of the process when given. */
export function userLimits(
  settings: LimitSettings,
  binding?: RateLimitBinding,
): { requests: RateLimiter; streams: StreamSlots; turns?: FairShare } {
  const periodSeconds = limitSetting('RATE_LIMIT_PERIOD', settings.RATE_LIMIT_PERIOD, DEFAULT_USER_LIMITS.periodSeconds)
  return {
    requests: binding
      ? bindingLimiter(binding, periodSeconds)
      : new WindowLimiter({
          limit: limitSetting('RATE_LIMIT_REQUESTS', settings.RATE_LIMIT_REQUESTS, DEFAULT_USER_LIMITS.requests),
          periodSeconds,
        }),
    streams: new StreamSlots(limitSetting('MAX_STREAMS_PER_USER', settings.MAX_STREAMS_PER_USER, DEFAULT_USER_LIMITS.streams)),
    // Opt-in: a turn is held through storage reads, so it caps throughput, and no benefit was measured yet (BENCHMARKS.md).
    ...(settings.SCAN_CONCURRENCY?.trim()
      ? { turns: new FairShare(limitSetting('SCAN_CONCURRENCY', settings.SCAN_CONCURRENCY, DEFAULT_SCAN_CONCURRENCY)) }
      : {}),
  }
}

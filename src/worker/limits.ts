/**
 * The per-user limits of a Worker: requests counted by Cloudflare's rate-limiting
 * binding (USER_REQUESTS, wrangler.toml), streams per isolate. A var that does not
 * parse is logged and its default used, so a typo never takes the service down.
 */
import type { FairShare } from '../api/fair.ts'
import { userLimits, type LimitSettings, type RateLimitBinding, type RateLimiter, type StreamSlots } from '../api/limits.ts'

export interface LimitsEnv extends LimitSettings {
  /** `[[ratelimits]]` in wrangler.toml; without it the isolate counts requests itself. */
  USER_REQUESTS?: RateLimitBinding
}

/**
 * Fair shares (src/api/fair.ts) only when SCAN_CONCURRENCY is set: a step's turn is held
 * through its R2 reads too, which would cap an isolate's throughput, and Cloudflare spreads
 * requests over isolates and bills each its own CPU.
 */
export function workerLimits(env: LimitsEnv): { requests: RateLimiter; streams: StreamSlots; turns?: FairShare } {
  const fair = env.SCAN_CONCURRENCY !== undefined && env.SCAN_CONCURRENCY.trim() !== ''
  try {
    const { turns, ...limits } = userLimits(env, env.USER_REQUESTS)
    return fair ? { ...limits, turns } : limits
  } catch (err) {
    console.error(`limits: ${(err as Error).message}; using the defaults`)
    const { requests, streams } = userLimits({}, env.USER_REQUESTS)
    return { requests, streams }
  }
}

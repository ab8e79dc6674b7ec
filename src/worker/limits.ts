/**
 * The per-user limits of a Worker: requests counted by Cloudflare's rate-limiting
 * binding (USER_REQUESTS, wrangler.toml), streams and storage bytes read per isolate. A var that does not
 * parse is logged and its default used, so a typo never takes the service down.
 */
import { userLimits, type LimitSettings, type RateLimitBinding } from '../api/limits.ts'

export interface LimitsEnv extends LimitSettings {
  /** `[[ratelimits]]` in wrangler.toml; without it the isolate counts requests itself. */
  USER_REQUESTS?: RateLimitBinding
}

/** Fair shares (src/api/fair.ts) unless SCAN_CONCURRENCY is `off`, as on the Node server. */
export function workerLimits(env: LimitsEnv): ReturnType<typeof userLimits> {
  try {
    return userLimits(env, env.USER_REQUESTS)
  } catch (err) {
    console.error(`limits: ${(err as Error).message}; using the defaults`)
    return userLimits({}, env.USER_REQUESTS)
  }
}

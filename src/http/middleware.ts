/**
 * The request pipeline's steps as Hono middleware factories (the way hono writes
 * `bearerAuth()` and `compress()`), used by the GET route and by the WebSocket upgrade
 * on both runtimes, so a request is authenticated and parsed one way whichever it is:
 * `preflight()` answers CORS preflights and refuses other methods, `authenticate()`
 * says who is asking, `parseQuery()` what they ask for.
 */
import type { MiddlewareHandler } from 'hono'
import type { Chain } from '../chains/registry.ts'
import { authenticate as authenticateBasic, knownCredentials, notConfigured, unauthorized, type Users } from '../api/auth.ts'
import { findDataset } from '../api/datasets.ts'
import { holdRefusal, tooManyRequests, type RateLimiter } from '../api/limits.ts'
import { CLIENT_ADDRESS_HEADER, type FailedLogins } from '../api/throttle.ts'
import { ApiError } from '../api/errors.ts'
import { routeHost } from '../api/hosts.ts'
import { parseDataQuery } from '../api/params.ts'
import { ALLOWED_METHODS, API_PREFIX, MAX_URL_BYTES } from '../api/paths.ts'
import { authenticateUpgrade, isWebSocketUpgrade, parseUpgrade, type AcceptedUpgrade } from '../api/upgrade.ts'
import type { QuerySpec } from '../query/types.ts'
import { takeFinalizedParam } from './fresh.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { StreamObserver } from './access-log.ts'
import { PREFLIGHT_HEADERS } from './headers.ts'

/** What the pipeline leaves for the route: the user, the query and, for an upgrade, the subscription. */
export interface PipelineEnv {
  Variables: {
    /** Null only for an upgrade whose credentials come later, in an `auth` message. */
    user: string | null
    query: QuerySpec
    /** `finalized=true`: final blocks only (fresh.ts). */
    finalOnly: boolean
    upgrade: Omit<AcceptedUpgrade, 'user'> | null
    /** Where the data route reports how its stream ended (the access log). */
    observe: StreamObserver
    /** Tells the access log the answer is a stream whose end it will hear of. */
    streaming: () => void
    /** The error code of an error answer, for the access log. */
    errorCode: string
  }
}

/**
 * CORS preflights get 204 without credentials (any origin; credentials only ever travel
 * in Authorization). A HEAD runs as the GET it stands for (Hono drops the body): the
 * body is cancelled here, so the scan behind it stops at once.
 */
export function preflight(): MiddlewareHandler<PipelineEnv> {
  return async function preflight(c, next) {
    if (c.req.method === 'OPTIONS') return c.body(null, 204, { ...PREFLIGHT_HEADERS, Allow: ALLOWED_METHODS })
    const length = new TextEncoder().encode(c.req.url).length
    if (length > MAX_URL_BYTES) {
      throw new ApiError(
        414,
        'uri_too_long',
        `the URL has ${length} bytes; at most ${MAX_URL_BYTES} are served: split a long __in list over several requests (about 370 addresses or 240 hashes fit in one)`,
      )
    }
    await next()
    if (c.req.method === 'HEAD') await c.res.body?.cancel()
  }
}

export interface AuthenticateOptions {
  /** Who may call the API; null when no users are configured (every request gets a 503). */
  users: Users | null
  /** Take WebSocket upgrades (credentials as a subprotocol, or later in an `auth` message). */
  upgrades: boolean
  /** Failed logins per client address; a client over its limit is refused before any password is checked. */
  failures: FailedLogins
}

/**
 * Basic authentication: 401 on missing or wrong credentials (an upgrade may bring
 * them later); then every method but GET is a 405, so a probe learns nothing unsigned.
 */
export function authenticate(options: AuthenticateOptions): MiddlewareHandler<PipelineEnv> {
  return async function authenticate(c, next) {
    if (!options.users) throw notConfigured()
    const headers = c.req.raw.headers
    const client = headers.get(CLIENT_ADDRESS_HEADER) ?? ''
    const wait = options.failures.retryAfter(client)
    if (wait > 0 && (await knownCredentials(c.req.header('authorization'), options.users)) === null) {
      throw new ApiError(429, 'too_many_failures', `too many failed logins from your address; retry in ${wait} s`, {
        headers: { 'Retry-After': String(wait) },
      })
    }
    try {
      if (options.upgrades && isWebSocketUpgrade(headers)) c.set('user', await authenticateUpgrade(headers, options.users))
      else {
        const user = await authenticateBasic(c.req.header('authorization'), options.users)
        if (user === null) throw unauthorized()
        c.set('user', user)
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) options.failures.fail(client)
      throw err
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      throw new ApiError(405, 'method_not_allowed', `${c.req.method} is not allowed; every endpoint is GET (or HEAD)`, {
        headers: { Allow: ALLOWED_METHODS },
      })
    }
    await next()
  }
}

/**
 * The request rate per user, once the user is known (an upgrade that authenticates by
 * message is counted when its `auth` message comes, by the live service). A refusal is held
 * for up to `REFUSAL_HOLD_MS` before it is sent (`holdRefusal`).
 */
export function limitRate(limiter: RateLimiter): MiddlewareHandler<PipelineEnv> {
  return async function limitRate(c, next) {
    const user = c.get('user')
    if (user !== null) {
      const wait = await limiter.limit(user)
      if (wait > 0) {
        await holdRefusal(wait)
        throw tooManyRequests(user, wait)
      }
    }
    await next()
  }
}

export interface ParseQueryOptions {
  chains: readonly Chain[]
  datasets: readonly DatasetDecl[]
  upgrades: boolean
}

/** Host → chain family, path → dataset, parameters → a validated query (an upgrade's as a subscription). */
export function parseQuery(options: ParseQueryOptions): MiddlewareHandler<PipelineEnv> {
  return async function parseQuery(c, next) {
    const url = new URL(c.req.url)
    if (options.upgrades && isWebSocketUpgrade(c.req.raw.headers)) {
      const upgrade = parseUpgrade(url, c.req.raw.headers, options)
      c.set('upgrade', upgrade)
      c.set('query', upgrade.spec)
    } else {
      const host = routeHost(url.host, options.chains)
      const dataset = findDataset(c.req.path.slice(API_PREFIX.length), host.family, options.datasets)
      c.set('upgrade', null)
      const params = new URLSearchParams(url.searchParams)
      c.set('finalOnly', takeFinalizedParam(params))
      c.set('query', parseDataQuery(params, { dataset, chains: host.chains, allChains: options.chains }))
    }
    await next()
  }
}

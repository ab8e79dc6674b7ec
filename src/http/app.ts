/**
 * The HTTP API as one Hono app, the same for the Worker and the Node server (only
 * the store, the upgrade hook and where large answers are encoded differ). Request path:
 * CORS preflight → authenticate → GET only → route by host to a chain family → parse and
 * validate → engine → encoder → gzip; a WebSocket upgrade takes the same path up to the parsed query and
 * is then handed to the runtime's real-time service. Routes only wire; every step
 * lives in its own module.
 */
import { Hono, type Context } from 'hono'
import { CHAINS, type Chain } from '../chains/registry.ts'
import type { Users } from '../api/auth.ts'
import { DATASETS } from '../api/datasets.ts'
import { ApiError, errorResponse, isUnexpected, needsOperator, quote, toApiError } from '../api/errors.ts'
import { routeHost } from '../api/hosts.ts'
import { API_PREFIX } from '../api/paths.ts'
import { FailedLogins, type ThrottleOptions } from '../api/throttle.ts'
import {
  holdRefusal,
  ReadAllowance,
  renewingStore,
  StreamSlots,
  tooManyStreams,
  tooMuchRead,
  WindowLimiter,
  type RateLimiter,
} from '../api/limits.ts'
import { fairStore, type FairShare } from '../api/fair.ts'
import { isWebSocketUpgrade, type AcceptedUpgrade } from '../api/upgrade.ts'
import type { ManifestReader } from '../manifest/read.ts'
import { IndexCache } from '../index/read.ts'
import { TailCache } from '../query/io.ts'
import type { ScanOptions } from '../query/scan.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { accessLog, type StreamObserver } from './access-log.ts'
import { CORS_HEADERS } from './headers.ts'
import { openApiDocument } from './openapi.ts'
import { authenticate, limitRate, parseQuery, preflight, type PipelineEnv } from './middleware.ts'
import { acceptsGzip, DEFAULT_DATA_FORMAT, DEFAULT_STATUS_FORMAT, negotiateFormat } from './negotiate.ts'
import { queryResponse, statusResponse } from './respond.ts'
import type { UnfinalizedSource } from './fresh.ts'
import { parseStatusQuery, type LiveLag } from './status.ts'
import type { EncoderFactory } from '../format/encode.ts'

/** Answers an authenticated, validated WebSocket upgrade (the runtime's real-time service). */
export type UpgradeHook = (request: Request, accepted: AcceptedUpgrade) => Response | Promise<Response>

export interface AppOptions {
  store: ObjectStore
  manifest: ManifestReader
  /** Who may call the API; null when no users are configured (every request gets a 503). */
  users: Users | null
  /** Chain registry (default: src/chains/chains.json). */
  chains?: readonly Chain[]
  /** Datasets served (default: every EVM and Move dataset). */
  datasets?: readonly DatasetDecl[]
  /**
   * Scanner options: the Worker and the Node server pass the wasm snappy decompressor
   * (src/parquet/snappy.ts). Partition tails are cached per app (one per
   * isolate) unless `tails` is given.
   */
  scan?: ScanOptions
  /** Where unexpected errors go (default console.error); never given credentials. */
  log?: (message: string, error?: unknown) => void
  /** One JSON line per request (src/http/access-log.ts); none when absent. */
  accessLog?: (line: string) => void
  /** Failed-login throttling per client address (default 20 per minute; see src/api/throttle.ts). */
  failedLogins?: ThrottleOptions
  /**
   * Per-user limits (src/api/limits.ts): the request rate (default an in-process
   * WindowLimiter, 50 per 10 s; the Worker passes Cloudflare's binding) and the data
   * streams running at once (default 8, counted in this process or isolate), the storage
   * bytes a user's data responses may read (default 512 MiB per 10 s, counted alike), and the
   * fair shares of the CPU between users' streams (src/api/fair.ts; none when absent).
   */
  limits?: { requests?: RateLimiter; streams?: StreamSlots; reads?: ReadAllowance; turns?: FairShare }
  /**
   * Takes WebSocket upgrades of data endpoints once authenticated and validated.
   * Without it the Upgrade header is ignored and the request is served over plain HTTP.
   */
  upgrade?: UpgradeHook
  /** How far a live-followed chain is behind its node (status `Syncing` and `lag`); null for a chain not followed. */
  liveLag?: (chain: Chain) => LiveLag | null | Promise<LiveLag | null>
  /** The unfinalized windows of followed chains, served over HTTP above the partitions (fresh.ts). */
  unfinalized?: UnfinalizedSource
  /** Where responses are encoded (default in place; the Node server sends large text streams to a thread of their own). */
  encoders?: EncoderFactory
}

/** The encodings a client accepts: workerd keeps the client's own header in `cf.clientAcceptEncoding`. */
function clientAcceptEncoding(request: Request): string | null {
  const cf = (request as { cf?: { clientAcceptEncoding?: string } }).cf
  return cf?.clientAcceptEncoding ?? request.headers.get('accept-encoding')
}

/** Builds the app. Nothing here does I/O until a request comes. */
export function createApp(options: AppOptions): Hono<PipelineEnv> {
  const chains = options.chains ?? CHAINS
  const datasets = options.datasets ?? DATASETS
  const upgrades = options.upgrade !== undefined
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error))
  const deps = {
    store: options.store,
    manifest: options.manifest,
    scan: { tails: new TailCache(), ...options.scan },
    index: new IndexCache(),
    ...(options.unfinalized ? { unfinalized: options.unfinalized } : {}),
    ...(options.encoders ? { encoders: options.encoders } : {}),
  }
  const app = new Hono<PipelineEnv>({ strict: false })

  app.onError((err, c) => {
    c.set('errorCode', toApiError(err).code)
    if (needsOperator(err))
      log(`${c.req.method} ${new URL(c.req.url).pathname}: ${isUnexpected(err) ? 'unexpected error' : 'damaged storage'}`, err)
    return errorResponse(err, CORS_HEADERS)
  })
  app.notFound(c => errorResponse(new ApiError(404, 'not_found', `no endpoint at ${quote(new URL(c.req.url).pathname)}`), CORS_HEADERS))

  if (options.accessLog) app.use('*', accessLog(options.accessLog))
  // The one document served without credentials: it describes the API, never its data.
  const documents = new Map<string, object>()
  app.get(`${API_PREFIX}openapi.json`, c => {
    const host = routeHost(new URL(c.req.url).host, chains)
    // Built once per host's chains: the declarations do not change while the app runs.
    const key = host.chains.map(ch => ch.code).join(',')
    if (!documents.has(key)) documents.set(key, openApiDocument(host.chains, datasets, host.family))
    return c.json(documents.get(key)!, 200, CORS_HEADERS)
  })
  const streams = options.limits?.streams ?? new StreamSlots()
  const reads = options.limits?.reads ?? new ReadAllowance()
  const turns = options.limits?.turns
  app.use(
    '*',
    preflight(),
    authenticate({ users: options.users, upgrades, failures: new FailedLogins(options.failedLogins) }),
    limitRate(options.limits?.requests ?? new WindowLimiter()),
  )

  app.get(`${API_PREFIX}status`, async (c, next) => {
    // Status is not a subscription: an upgrade goes on to the data route, which refuses it.
    if (upgrades && isWebSocketUpgrade(c.req.raw.headers)) return next()
    const host = routeHost(new URL(c.req.url).host, chains)
    const params = new URL(c.req.url).searchParams
    const only = parseStatusQuery(params, { chains: host.chains, allChains: chains })
    const format = negotiateFormat(params.get('format'), c.req.header('accept') ?? null, DEFAULT_STATUS_FORMAT)
    const served = datasets.filter(d => d.family === host.family)
    return statusResponse(
      options.manifest,
      only ? [only] : host.chains,
      served,
      format,
      acceptsGzip(clientAcceptEncoding(c.req.raw)),
      err => log(`status: damaged storage`, err),
      options.liveLag,
      options.unfinalized,
    )
  })

  app.get(`${API_PREFIX}*`, parseQuery({ chains, datasets, upgrades }), async (c: Context<PipelineEnv>) => {
    const upgrade = c.get('upgrade')
    if (upgrade && options.upgrade) return options.upgrade(c.req.raw, { ...upgrade, user: c.get('user') })
    const params = new URL(c.req.url).searchParams
    const format = negotiateFormat(params.get('format'), c.req.header('accept') ?? null, DEFAULT_DATA_FORMAT)
    const streamed = options.accessLog !== undefined && c.req.method === 'GET'
    const user = c.get('user')!
    const readWait = reads.wait(user)
    if (readWait > 0) {
      await holdRefusal(readWait)
      throw tooMuchRead(user, readWait, reads)
    }
    const lease = streams.acquire(user)
    if (!lease) throw tooManyStreams(user, streams.max)
    // A request whose client goes before its body ends gives its slot back even if the body never starts
    // (workerd: the enable_request_signal flag); one cancelled without a word is reclaimed as a stale lease.
    c.req.raw.signal?.addEventListener('abort', () => lease.release(), { once: true })
    // A stream that fails part-way on damaged storage or a bug is told to the operator, naming the object, like one that fails before its first byte.
    const observe: StreamObserver = end => {
      reads.charge(user, end.stats.bytesFetched)
      if (end.error !== undefined && needsOperator(end.error))
        log(
          `${c.req.method} ${new URL(c.req.url).pathname}: stream aborted on ${isUnexpected(end.error) ? 'an unexpected error' : 'damaged storage'}`,
          end.error,
        )
      if (streamed) c.get('observe')(end)
    }
    try {
      const gzip = acceptsGzip(clientAcceptEncoding(c.req.raw))
      // Planning, each read of the body and the work after each storage read take turns of this user (CPU only, src/api/fair.ts).
      const turn = turns ? <T>(step: () => Promise<T>) => turns.run(user, step) : <T>(step: () => Promise<T>) => step()
      const store = renewingStore(turns ? fairStore(deps.store, turns, user) : deps.store, lease)
      const res = await turn(() =>
        queryResponse({ ...deps, store }, c.get('query'), format, gzip, observe, lease, c.get('finalOnly'), turns && turn),
      )
      if (streamed) c.get('streaming')()
      return res
    } catch (err) {
      lease.release()
      throw err
    }
  })

  return app
}

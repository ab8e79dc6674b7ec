/**
 * The HTTP API as one Hono app, the same for the Worker and the Node server (only
 * the store differs). Request path: CORS preflight → authenticate → GET only →
 * route by host to a chain family → parse and validate → engine → encoder → gzip.
 * Routes only wire; every step lives in its own module.
 */
import { Hono, type Context } from 'hono'
import { CHAINS, type Chain } from '../chains/registry.ts'
import type { ManifestReader } from '../manifest/read.ts'
import type { QuerySpec } from '../query/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { authenticate, notConfigured, unauthorized, type Users } from './auth.ts'
import { DATASETS, findDataset } from './datasets.ts'
import { ApiError, errorResponse, isUnexpected, quote } from './errors.ts'
import { CORS_HEADERS, PREFLIGHT_HEADERS } from './headers.ts'
import { routeHost } from './hosts.ts'
import { acceptsGzip, DEFAULT_DATA_FORMAT, DEFAULT_STATUS_FORMAT, negotiateFormat } from './negotiate.ts'
import { parseDataQuery } from './params.ts'
import { queryResponse, statusResponse } from './respond.ts'
import { parseStatusQuery } from './status.ts'
import type { ScanOptions } from '../query/scan.ts'
import { TailCache } from '../query/io.ts'

/** Path prefix of every endpoint. */
export const API_PREFIX = '/v1/api/'
/** Methods the API answers (OPTIONS only as a CORS preflight). */
export const ALLOWED_METHODS = 'GET, OPTIONS'

export interface AppOptions {
  store: ObjectStore
  manifest: ManifestReader
  /** Who may call the API; null when no users are configured (every request gets a 503). */
  users: Users | null
  /** Chain registry (default: src/chains/chains.json). */
  chains?: readonly Chain[]
  /** Datasets served (default: every EVM and Move dataset). */
  datasets?: readonly DatasetDecl[]
  /** Basic-auth realm (default "edge-chain-data"). */
  realm?: string
  /**
   * Scanner options: the Worker and the Node server pass the wasm snappy decompressor
   * (src/lake/snappy.ts). Partition tails are cached per app (one per
   * isolate) unless `tails` is given.
   */
  scan?: ScanOptions
  /** Where unexpected errors go (default console.error); never given credentials. */
  log?: (message: string, error?: unknown) => void
  /**
   * Answers a WebSocket upgrade of a data endpoint with the validated query, after
   * authentication (the real-time API plugs in here). Without it the Upgrade header
   * is ignored and the request is served over plain HTTP.
   */
  upgrade?: (request: Request, query: QuerySpec) => Response | Promise<Response>
}

/** The encodings a client accepts: workerd keeps the client's own header in `cf.clientAcceptEncoding`. */
function clientAcceptEncoding(request: Request): string | null {
  const cf = (request as { cf?: { clientAcceptEncoding?: string } }).cf
  return cf?.clientAcceptEncoding ?? request.headers.get('accept-encoding')
}

/** Builds the app. Nothing here does I/O until a request comes. */
export function createApp(options: AppOptions): Hono {
  const chains = options.chains ?? CHAINS
  const datasets = options.datasets ?? DATASETS
  const realm = options.realm ?? 'edge-chain-data'
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error))
  const deps = { store: options.store, manifest: options.manifest, scan: { tails: new TailCache(), ...options.scan } }
  const app = new Hono({ strict: false })

  app.onError((err, c) => {
    if (isUnexpected(err)) log(`${c.req.method} ${new URL(c.req.url).pathname}: unexpected error`, err)
    return errorResponse(err, CORS_HEADERS)
  })
  app.notFound(c => errorResponse(new ApiError(404, 'not_found', `no endpoint at ${quote(new URL(c.req.url).pathname)}`), CORS_HEADERS))

  app.use('*', async (c, next) => {
    if (c.req.method === 'OPTIONS') return c.body(null, 204, { ...PREFLIGHT_HEADERS, Allow: ALLOWED_METHODS })
    if (!options.users) throw notConfigured()
    if ((await authenticate(c.req.header('authorization'), options.users)) === null) throw unauthorized(realm)
    if (c.req.method !== 'GET') {
      throw new ApiError(405, 'method_not_allowed', `${c.req.method} is not allowed; every endpoint is GET`, { headers: { Allow: ALLOWED_METHODS } })
    }
    await next()
  })

  const route = (c: Context) => routeHost(new URL(c.req.url).host, chains)

  app.get(`${API_PREFIX}status`, async c => {
    const host = route(c)
    const params = new URL(c.req.url).searchParams
    const only = parseStatusQuery(params, { chains: host.chains, allChains: chains })
    const format = negotiateFormat(params.get('format'), c.req.header('accept') ?? null, DEFAULT_STATUS_FORMAT)
    const served = datasets.filter(d => d.family === host.family)
    return statusResponse(options.manifest, only ? [only] : host.chains, served, format, acceptsGzip(clientAcceptEncoding(c.req.raw)))
  })

  app.get(`${API_PREFIX}*`, async c => {
    const host = route(c)
    const dataset = findDataset(c.req.path.slice(API_PREFIX.length), host.family, datasets)
    const params = new URL(c.req.url).searchParams
    const query = parseDataQuery(params, { dataset, chains: host.chains, allChains: chains })
    if (options.upgrade && c.req.header('upgrade')?.toLowerCase() === 'websocket') return options.upgrade(c.req.raw, query)
    const format = negotiateFormat(params.get('format'), c.req.header('accept') ?? null, DEFAULT_DATA_FORMAT)
    return queryResponse(deps, query, format, acceptsGzip(clientAcceptEncoding(c.req.raw)))
  })

  return app
}

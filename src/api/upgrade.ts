/**
 * The WebSocket upgrade request, checked before anything is upgraded: the same
 * host routing, endpoint, parameter parsing and Basic authentication as the HTTP
 * API, so a bad parameter or bad credentials get the HTTP API's JSON error with
 * its status (400, 401, 404, 503) instead of a socket. A browser, which cannot set
 * an Authorization header on a WebSocket, offers its credentials as a subprotocol
 * (`basic.<base64url(user:password)>`, never echoed back) or sends an `auth`
 * message once connected; either way they stay out of URLs and access logs.
 */
import { CHAINS, type Chain } from '../chains/registry.ts'
import { authenticate, unauthorized, type Users } from './auth.ts'
import { DATASETS, findDataset } from './datasets.ts'
import { ApiError, invalidParameter } from './errors.ts'
import { routeHost } from './hosts.ts'
import { API_PREFIX } from './paths.ts'
import { parseDataQuery } from './params.ts'
import type { QuerySpec } from '../query/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import { basicFromProtocols, offeredProtocols, PROTOCOL } from './websocket.ts'

/** What parsing an upgrade needs besides the request: the registries (defaults: every chain and dataset). */
export interface UpgradeContext {
  chains?: readonly Chain[]
  datasets?: readonly DatasetDecl[]
}

/** A request that may be upgraded. */
export interface AcceptedUpgrade {
  spec: QuerySpec
  /** The authenticated user, or null when the credentials come later in an `auth` message. */
  user: string | null
  /** The subprotocol to answer with (`Sec-WebSocket-Protocol`), when the client offered ours. */
  protocol: string | null
  /** `cursor_hash`: the hash of block from_block - 1 as a resuming client holds it. */
  cursorHash?: string
}

/** The resume parameter: not a filter, so it is taken out before the HTTP parser sees the query. */
export const CURSOR_HASH_PARAM = 'cursor_hash'

/** True when a request asks for a WebSocket. */
export const isWebSocketUpgrade = (headers: { get(name: string): string | null }): boolean =>
  (headers.get('upgrade') ?? '').toLowerCase() === 'websocket'

/**
 * The user of an upgrade's credentials (Authorization header, else a credential
 * subprotocol); null when it carries none. Wrong credentials throw the 401.
 */
export async function authenticateUpgrade(headers: { get(name: string): string | null }, users: Users): Promise<string | null> {
  const header = headers.get('authorization')
  const fromProtocol = basicFromProtocols(offeredProtocols(headers.get('sec-websocket-protocol')))
  if (header === null && fromProtocol === undefined) return null
  const user = header !== null ? await authenticate(header, users) : fromProtocol === null ? null : await authenticate(fromProtocol, users)
  if (user === null) throw unauthorized()
  return user
}

/** The subscription an upgrade asks for, and the subprotocol to answer with; no authentication. */
export function parseUpgrade(
  url: URL,
  headers: { get(name: string): string | null },
  ctx: UpgradeContext = {},
): Omit<AcceptedUpgrade, 'user'> {
  const offered = offeredProtocols(headers.get('sec-websocket-protocol'))
  const protocol = offered.includes(PROTOCOL) ? PROTOCOL : null
  if (offered.length > 0 && protocol === null) {
    throw new ApiError(
      400,
      'invalid_protocol',
      `offer the subprotocol ${PROTOCOL} (Sec-WebSocket-Protocol), next to the credentials if you send them that way`,
    )
  }
  if (!url.pathname.startsWith(API_PREFIX)) throw new ApiError(404, 'not_found', `no endpoint at ${url.pathname}`)
  const chains = ctx.chains ?? CHAINS
  const host = routeHost(url.host, chains)
  const path = url.pathname.slice(API_PREFIX.length)
  if (path.replace(/\/+$/, '') === 'status')
    throw new ApiError(404, 'not_found', '/v1/api/status is not served over WebSocket; use HTTP GET')
  const dataset = findDataset(path, host.family, ctx.datasets ?? DATASETS)
  const params = url.searchParams
  const format = params.get('format')
  if (format !== null && format !== 'json' && format !== 'json_stream') {
    throw invalidParameter('format', `WebSocket messages are JSON: format must be json or json_stream when given, got "${format}"`)
  }
  if (params.has('limit'))
    throw invalidParameter('limit', 'limit is not used over WebSocket: the stream is paced by the client; bound it with to_block')
  const rest = new URLSearchParams(params)
  const cursorHash = rest.get(CURSOR_HASH_PARAM) ?? undefined
  rest.delete(CURSOR_HASH_PARAM)
  const spec = parseDataQuery(rest, { dataset, chains: host.chains, allChains: chains })
  if (cursorHash !== undefined) {
    if (params.getAll(CURSOR_HASH_PARAM).length > 1)
      throw invalidParameter(CURSOR_HASH_PARAM, `${CURSOR_HASH_PARAM} is given more than once`, 'duplicate_parameter')
    if (!/^0x[0-9a-fA-F]{64}$/.test(cursorHash))
      throw invalidParameter(CURSOR_HASH_PARAM, `${CURSOR_HASH_PARAM}: expected a 0x-prefixed 32-byte block hash, got "${cursorHash}"`)
    if (typeof spec.from !== 'number' || spec.from < 1)
      throw invalidParameter(
        CURSOR_HASH_PARAM,
        `${CURSOR_HASH_PARAM} is the hash of block from_block - 1: give a numeric from_block above 0`,
      )
  }
  return { spec, protocol, ...(cursorHash === undefined ? {} : { cursorHash: cursorHash.toLowerCase() }) }
}

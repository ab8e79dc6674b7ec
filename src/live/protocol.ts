/**
 * The WebSocket protocol, as data: what a client may send, the close codes the
 * server ends a subscription with, and the limits it enforces. Documented for
 * users in docs/websocket.md; the server messages are built in messages.ts.
 *
 * One WebSocket is one subscription: the endpoint and query parameters of the
 * upgrade request are those of the HTTP API.
 */

/** Close codes, documented in docs/websocket.md. 1000 is the normal end after `to_block`. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  invalid: 4400,
  unauthorized: 4401,
  noData: 4404,
  reorgTooDeep: 4409,
  slowConsumer: 4413,
  tooManySubscriptions: 4429,
  /** The same code: a user over the request rate (`too_many_requests`), after an `auth` message. */
  tooManyRequests: 4429,
  internal: 4500,
  unavailable: 4503,
} as const

export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE]

/** Limits of one server instance (a Node process, or one chain's Durable Object). Defaults shown. */
export interface LiveLimits {
  /** Open subscriptions per user (default 16). */
  maxSubscriptionsPerUser: number
  /** Sockets waiting for their `auth` message (default 256). */
  maxPendingAuth: number
  /** Of those, from one client address (default 8), so one client cannot lock the others out. */
  maxPendingAuthPerClient: number
  /** Time allowed for the `auth` message, ms (default 10,000). */
  authTimeoutMs: number
  /** Bytes a subscriber may leave unsent before a live block closes it with 4413 (default 8 MiB). */
  maxBufferedBytes: number
  /** History is sent while fewer bytes than this are unsent (default 1 MiB). */
  lowWaterBytes: number
  /** A subscriber that takes nothing for this long while history waits is closed with 4413, ms (default 30,000). */
  stallTimeoutMs: number
  /** Rows per `rows` message at most (default 1,000). */
  maxRowsPerMessage: number
  /** Largest client message accepted, bytes (default 4,096). */
  maxClientMessageBytes: number
}

export const DEFAULT_LIMITS: LiveLimits = {
  maxSubscriptionsPerUser: 16,
  maxPendingAuth: 256,
  maxPendingAuthPerClient: 8,
  authTimeoutMs: 10_000,
  maxBufferedBytes: 8 * 1024 * 1024,
  lowWaterBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
  maxRowsPerMessage: 1_000,
  maxClientMessageBytes: 4_096,
}

/** What a client may send. */
export type ClientMessage =
  | { type: 'auth'; user: string; password: string }
  | { type: 'ping'; id?: string | number }
  /** Everything up to progress `cursor` was received: flow control where the runtime cannot see the socket's buffer. */
  | { type: 'ack'; cursor: number }

/** A client message that is not one of ours: answered with an error and a 4400 close. */
export class InvalidMessageError extends Error {}

/** Parses one client text frame; throws InvalidMessageError saying what is wrong. */
export function parseClientMessage(
  data: string | ArrayBuffer | Uint8Array,
  maxBytes = DEFAULT_LIMITS.maxClientMessageBytes,
): ClientMessage {
  if (typeof data !== 'string') throw new InvalidMessageError('binary frames are not accepted: send JSON text')
  if (data.length > maxBytes) throw new InvalidMessageError(`message longer than ${maxBytes} bytes`)
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    throw new InvalidMessageError('message is not JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidMessageError('message must be a JSON object with a "type"')
  const m = value as Record<string, unknown>
  if (m.type === 'auth') {
    if (typeof m.user !== 'string' || typeof m.password !== 'string')
      throw new InvalidMessageError('auth needs "user" and "password" strings')
    return { type: 'auth', user: m.user, password: m.password }
  }
  if (m.type === 'ping') {
    if (m.id !== undefined && typeof m.id !== 'string' && typeof m.id !== 'number')
      throw new InvalidMessageError('ping "id" must be a string or a number')
    return m.id === undefined ? { type: 'ping' } : { type: 'ping', id: m.id }
  }
  if (m.type === 'ack') {
    if (typeof m.cursor !== 'number' || !Number.isSafeInteger(m.cursor) || m.cursor < -1)
      throw new InvalidMessageError('ack needs "cursor", a block number from a progress message')
    return { type: 'ack', cursor: m.cursor }
  }
  throw new InvalidMessageError(`unknown message type ${JSON.stringify(m.type)}: clients send "auth", "ack" or "ping"`)
}

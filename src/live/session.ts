/**
 * One accepted WebSocket from the upgrade to its subscription: waits for the
 * `auth` message when the upgrade carried no credentials, answers `ping`, refuses
 * anything else, and enforces the per-user subscription limit. Runtime-neutral:
 * Node's `ws` and a Durable Object drive it with the same calls.
 */
import { authenticate, type Users } from '../api/auth.ts'
import type { RateLimiter } from '../api/limits.ts'
import type { QuerySpec } from '../query/types.ts'
import type { LiveChain } from './hub.ts'
import { errorMessage, pongMessage } from './messages.ts'
import { CLOSE, InvalidMessageError, parseClientMessage } from './protocol.ts'
import type { Connection, Subscription } from './subscription.ts'

/** The Basic Authorization value of a user and password (UTF-8, as browsers send it). */
export const basicHeader = (user: string, password: string): string =>
  'Basic ' + btoa(String.fromCharCode(...new TextEncoder().encode(`${user}:${password}`)))

export type SessionState = 'pending' | 'authenticating' | 'subscribed' | 'closed'

export interface SessionOptions {
  chain: LiveChain
  spec: QuerySpec
  /** The user authenticated at the upgrade, or null to wait for an `auth` message. */
  user: string | null
  users: Users | null
  /** The per-user request rate, counted at an `auth` message (an upgrade with credentials was counted by the app). */
  requests?: RateLimiter
  /** Subscription id to use (a Durable Object names it before accepting the socket). */
  id?: string
  /** `cursor_hash` of the upgrade: the hash of block from_block - 1 the client holds. */
  cursorHash?: string
  /** A subscription restored after the runtime restarted: its user and position. */
  resume?: { user: string; cursor: number; to: number | null }
  /** When an unauthenticated session gives up, ms since epoch (default: now + the auth timeout). */
  deadline?: number
  /** Called once the session is subscribed or closed, so a runtime can record it. */
  onChange?: (session: LiveSession) => void
}

export class LiveSession {
  readonly conn: Connection
  readonly spec: QuerySpec
  readonly chain: LiveChain
  /** When an unauthenticated session gives up (ms since epoch). */
  readonly deadline: number
  state: SessionState
  user: string | null
  subscription: Subscription | null = null
  private readonly opts: SessionOptions

  constructor(conn: Connection, opts: SessionOptions) {
    this.conn = conn
    this.opts = opts
    this.spec = opts.spec
    this.chain = opts.chain
    this.user = opts.user
    this.state = 'pending'
    this.deadline = opts.deadline ?? Date.now() + opts.chain.limits.authTimeoutMs
  }

  /** Subscribes at once when the upgrade was authenticated (or continues a restored subscription). */
  open(): void {
    const r = this.opts.resume
    if (r) {
      this.user = r.user
      this.subscription = this.chain.resume(r.user, this.spec, this.conn, this.opts.id ?? '', r.cursor, r.to)
      this.state = 'subscribed'
      return
    }
    if (this.user !== null) this.subscribe(this.user)
  }

  /** Handles one client frame. */
  async message(data: string | ArrayBuffer | Uint8Array): Promise<void> {
    if (this.state === 'closed') return
    let msg
    try {
      msg = parseClientMessage(data, this.chain.limits.maxClientMessageBytes)
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err
      return this.fail('invalid_message', err.message, CLOSE.invalid)
    }
    if (msg.type === 'ping') {
      this.conn.send(pongMessage(msg.id))
      return
    }
    if (msg.type === 'ack') {
      if (this.state !== 'subscribed') return this.fail('invalid_message', 'ack before the subscription started', CLOSE.invalid)
      this.conn.ack?.(msg.cursor)
      return
    }
    if (this.state !== 'pending') return this.fail('invalid_message', 'auth is sent once, before anything else', CLOSE.invalid)
    this.state = 'authenticating'
    const user = this.opts.users ? await authenticate(basicHeader(msg.user, msg.password), this.opts.users) : null
    if (this.state !== 'authenticating') return
    if (user === null) return this.fail('unauthorized', 'invalid credentials', CLOSE.unauthorized)
    const wait = (await this.opts.requests?.limit(user)) ?? 0
    if (this.state !== 'authenticating') return
    if (wait > 0) return this.fail('too_many_requests', `user ${user} is over the request rate; retry in ${wait} s`, CLOSE.tooManyRequests)
    this.subscribe(user)
  }

  /**
   * Closes a session still waiting for `auth` past its deadline; true when it did. One whose
   * `auth` arrived in time is left to its verification (a PBKDF2 on a busy machine, the rate
   * binding), which ends it either way.
   */
  expire(now = Date.now()): boolean {
    if (this.state !== 'pending' || now < this.deadline) return false
    this.fail('unauthorized', `no auth message within ${this.chain.limits.authTimeoutMs} ms`, CLOSE.unauthorized)
    return true
  }

  /** The client went away. */
  closed(): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    this.subscription?.drop()
    this.opts.onChange?.(this)
  }

  private subscribe(user: string): void {
    this.user = user
    const sub = this.chain.subscribe(user, this.spec, this.conn, { id: this.opts.id, cursorHash: this.opts.cursorHash })
    if (!sub) {
      return this.fail(
        'too_many_subscriptions',
        `user ${user} has ${this.chain.users.max} subscriptions open already`,
        CLOSE.tooManySubscriptions,
      )
    }
    this.subscription = sub
    this.state = 'subscribed'
    this.opts.onChange?.(this)
  }

  private fail(code: string, message: string, close: number): void {
    this.conn.send(errorMessage(code, message))
    this.conn.close(close, code)
    this.subscription?.drop()
    this.state = 'closed'
    this.opts.onChange?.(this)
  }
}

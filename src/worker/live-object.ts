/**
 * The WebSocket API on Cloudflare: one Durable Object per chain (named by the
 * chain's storage key) holds that chain's LiveChain: the window, kept in the
 * object's storage so it survives eviction, the head follower, run by alarms, and
 * the subscribers' sockets, accepted with the hibernation API so idle sockets cost
 * no memory. A subscriber's query URL, user and cursor live in its socket's
 * attachment, so after hibernation the object rebuilds every subscription and
 * continues from its cursor.
 *
 * The Worker's app authenticates and validates the upgrade, then `forwardUpgrade` hands
 * it to the chain's object with the user in an internal header; the object is
 * reachable only through the Worker, so it trusts that header.
 */
import { chainKey, CHAINS, type Chain } from '../chains/registry.ts'
import type { Users } from '../api/auth.ts'
import type { RateLimiter } from '../api/limits.ts'
import { workerLimits, type LimitsEnv } from './limits.ts'
import { CLIENT_ADDRESS_HEADER } from '../api/throttle.ts'
import { usersOf } from './users.ts'
import { ApiError, errorResponse, toApiError } from '../api/errors.ts'
import { r2Store } from '../store/r2.ts'
import { parseLiveChains, type FollowedChain } from '../live/config.ts'
import { PacedWindow } from '../live/pacing.ts'
import { decodeSlice, encodeSlice, type SliceRequest } from '../live/slice.ts'
import type { UnfinalizedSource } from '../http/fresh.ts'
import { LiveChain, type WindowPersistence } from '../live/hub.ts'
import { type LiveLimits } from '../live/protocol.ts'
import { LiveSession } from '../live/session.ts'
import { evmFollowed, followedSource, lazySource, type SourceFactory } from '../live/source.ts'
import { moveTransactions } from '../datasets/move.ts'
import type { Connection } from '../live/subscription.ts'
import { isWebSocketUpgrade, parseUpgrade } from '../api/upgrade.ts'
import type { UpgradeHook } from '../http/app.ts'
import type { LiveLag } from '../http/status.ts'
import type { Anchor, WindowBlock } from '../live/window.ts'
import { workerScan } from './scan.ts'
import { CREDENTIAL_PROTOCOL_PREFIX, offeredProtocols } from '../api/websocket.ts'

export interface LiveEnv extends LimitsEnv {
  LAKE: R2Bucket
  API_USERS?: string
  /** The LiveChainObject namespace. */
  LIVE: DurableObjectNamespace
  /** Chains followed live (see config.ts); a secret, since node URLs carry keys. */
  LIVE_CHAINS?: string
}

/** Internal headers from the Worker to the object. */
const USER_HEADER = 'x-edge-live-user'
const CHAIN_HEADER = 'x-edge-live-chain'
/** The client's address (Cloudflare's CF-Connecting-IP), for the per-client cap on sockets waiting to authenticate. */
const CLIENT_HEADER = 'x-edge-live-client'
const DEFAULT_POLL_MS = 1_000
/**
 * Unsent bytes are estimated here (see pacing.ts), so the limits are wider than
 * Node's: history flows while fewer than 4 MiB are estimated unsent; a live block
 * finding more than 32 MiB closes the subscriber with 4413, and so do 30 s without an
 * ack for a client that acks.
 */
const DO_LIMITS: Partial<LiveLimits> = { lowWaterBytes: 4 * 1024 * 1024, maxBufferedBytes: 32 * 1024 * 1024 }
/** How fast the estimate of a client that never acks drains: history reaches it at this rate. */
export const PACED_BYTES_PER_SECOND = 4 * 1024 * 1024
/** Attachments are limited to 2 KiB: longer query URLs are kept in storage. */
const MAX_INLINE_URL = 1_500

/**
 * Move-VM chains: the follower (the Move ingester, and the Aptos SDK it rebuilds BCS with) is
 * imported at its first use, so an isolate that follows no Move chain never evaluates it. The
 * dynamic import is also what makes the SDK work in the bundle: the package declares its modules
 * free of side effects while importing some of them dynamically, and esbuild then drops their
 * initializers from static imports (`Ed25519PublicKey is not a constructor`, every user
 * transaction unverified); imported dynamically, they run.
 */
const moveFollowed: SourceFactory = (f, store, client) =>
  lazySource([moveTransactions], true, async () => (await import('../live/move-source.ts')).moveFollowed(f, store, client))

/** What a socket carries through hibernation. */
interface Attachment {
  id: string
  /** The upgrade URL, or null when it is in storage under `url:<id>`. */
  url: string | null
  user: string | null
  /** The client's address, for the per-client cap on sockets waiting to authenticate. */
  client?: string
  cursorHash?: string
  deadline: number
  cursor: number | null
  to: number | null
}

/**
 * The Worker's upgrade hook: the app has authenticated and validated the upgrade
 * exactly as an HTTP request (same JSON errors); it goes to the chain's object
 * without the credentials.
 */
export function forwardUpgrade(live: DurableObjectNamespace): UpgradeHook {
  return (request, accepted) => {
    const headers = new Headers(request.headers)
    headers.delete('authorization')
    const offered = offeredProtocols(request.headers.get('sec-websocket-protocol')).filter(p => !p.startsWith(CREDENTIAL_PROTOCOL_PREFIX))
    if (offered.length) headers.set('sec-websocket-protocol', offered.join(', '))
    else headers.delete('sec-websocket-protocol')
    headers.set(USER_HEADER, accepted.user ?? '')
    headers.set(CHAIN_HEADER, chainKey(accepted.spec.chain))
    headers.set(CLIENT_HEADER, request.headers.get(CLIENT_ADDRESS_HEADER) ?? '')
    const stub = live.get(live.idFromName(chainKey(accepted.spec.chain)))
    return stub.fetch(new Request(request.url, { method: 'GET', headers }))
  }
}

/** The path of the object's internal lag request (never a client's: the Worker alone calls it). */
const LAG_PATH = '/__live/lag'

/**
 * The status endpoint's `lag` on Cloudflare: asks the chain's object, for the chains
 * LIVE_CHAINS follows (others have none, and no object is woken for them).
 */
export function liveLagOf(live: DurableObjectNamespace, followed: readonly Chain[]): (chain: Chain) => Promise<LiveLag | null> {
  return async chain => {
    if (!followed.some(c => chainKey(c) === chainKey(chain))) return null
    const stub = live.get(live.idFromName(chainKey(chain)))
    const res = await stub.fetch(new Request(`https://live${LAG_PATH}`, { headers: { [CHAIN_HEADER]: chainKey(chain) } }))
    return res.ok ? ((await res.json()) as LiveLag | null) : null
  }
}

/** A request to the object that only wakes it: it starts following (if its chain is followed) and keeps its alarm set. */
const WAKE_HEADER = 'x-edge-live-wake'

/**
 * Wakes the object of every chain in LIVE_CHAINS, so each follows its node whether or
 * not anyone subscribes: finalized blocks reach partitions and the manifest on their
 * own. Run by the Cron Trigger (wrangler.toml) and on an isolate's first request; once
 * awake, an object keeps itself following with its alarm.
 */
export async function wakeFollowers(env: Pick<LiveEnv, 'LIVE' | 'LIVE_CHAINS'>): Promise<void> {
  let chains: FollowedChain[]
  try {
    chains = parseLiveChains(env.LIVE_CHAINS)
  } catch (err) {
    return console.error((err as Error).message)
  }
  await Promise.all(
    chains.map(async ({ chain }) => {
      const key = chainKey(chain)
      try {
        const res = await env.LIVE.get(env.LIVE.idFromName(key)).fetch('https://live.internal/wake', {
          method: 'POST',
          headers: { [WAKE_HEADER]: '1', [CHAIN_HEADER]: key },
        })
        if (res.status !== 204) console.error(`${chain.code}: cannot wake its follower: HTTP ${res.status}`)
      } catch (err) {
        console.error(`${chain.code}: cannot wake its follower: ${(err as Error).message}`)
      }
    }),
  )
}

/** A request for the window's blocks HTTP serves (slice.ts), answered with encodeSlice's bytes or 204 when not following. */
const SLICE_HEADER = 'x-edge-live-slice'

/**
 * The Worker's source of unfinalized rows for HTTP (src/http/fresh.ts): the chain's
 * object answers with the window's blocks a request asks for. Only chains in
 * LIVE_CHAINS are asked; the others have no window.
 */
export function windowSource(env: Pick<LiveEnv, 'LIVE' | 'LIVE_CHAINS'>): UnfinalizedSource {
  let followed: Set<string>
  try {
    followed = new Set(parseLiveChains(env.LIVE_CHAINS).map(f => chainKey(f.chain)))
  } catch {
    followed = new Set()
  }
  return {
    async slice(chain, req) {
      const key = chainKey(chain)
      if (!followed.has(key)) return null
      const res = await env.LIVE.get(env.LIVE.idFromName(key)).fetch('https://live.internal/slice', {
        method: 'POST',
        headers: { [SLICE_HEADER]: '1', [CHAIN_HEADER]: key },
        body: JSON.stringify(req),
      })
      if (res.status === 204) return null
      if (res.status !== 200)
        throw new ApiError(503, 'live_unavailable', `chain ${chain.code}: its unfinalized blocks cannot be read now; retry`)
      return decodeSlice(new Uint8Array(await res.arrayBuffer()))
    },
  }
}

/** The window kept in the object's storage: the anchor, and one entry per block. */
export function storagePersistence(storage: DurableObjectStorage): WindowPersistence {
  const key = (n: number) => `b:${String(n).padStart(16, '0')}`
  const removeAll = async (keys: string[]) => {
    for (let i = 0; i < keys.length; i += 128) await storage.delete(keys.slice(i, i + 128))
  }
  return {
    async load() {
      const anchor = await storage.get<Anchor>('anchor')
      if (!anchor) return null
      const blocks = [...(await storage.list<WindowBlock>({ prefix: 'b:' })).values()].sort((a, b) => a.number - b.number)
      return { anchor, blocks }
    },
    async reset(anchor) {
      await removeAll([...(await storage.list({ prefix: 'b:' })).keys()])
      await storage.put('anchor', anchor)
    },
    append: block => storage.put(key(block.number), block),
    rollback: (_fork, dropped) => removeAll(dropped.map(b => key(b.number))),
    async finalize(anchor, done) {
      await storage.put('anchor', anchor)
      await removeAll(done.map(b => key(b.number)))
    },
  }
}

/**
 * A hibernatable socket as a Connection; the cursor goes into its attachment, unsent bytes are
 * estimated by pacing.ts. A message given as bytes is sent as text: workerd sends bytes only
 * as a binary frame.
 */
function connectionOf(ws: WebSocket, att: Attachment): Connection {
  const window = new PacedWindow(PACED_BYTES_PER_SECOND)
  const decoder = new TextDecoder()
  return {
    send: message => {
      const text = typeof message === 'string' ? message : decoder.decode(message)
      window.sending(text)
      try {
        ws.send(text)
      } catch {
        // closed meanwhile: the close event ends the session
      }
    },
    close: (code, reason) => {
      try {
        ws.close(code, reason)
      } catch {
        // already closed
      }
    },
    buffered: () => window.unsent,
    ack: cursor => window.ack(cursor),
    checkpoint: ({ cursor, to }) => {
      window.mark(cursor)
      att.cursor = cursor
      att.to = to
      ws.serializeAttachment(att)
    },
  }
}

/** One chain's live side on Cloudflare. */
export class LiveChainObject implements DurableObject {
  private readonly ctx: DurableObjectState
  private readonly env: LiveEnv
  private live: LiveChain | null = null
  private opening: Promise<LiveChain> | null = null
  private followed: FollowedChain | undefined
  private users: Users | null = null
  private readonly sessions = new Map<WebSocket, LiveSession>()
  private nextId = 1
  /** The per-user request rate, counted at an `auth` message (the same binding as the Worker's). */
  private readonly requests: RateLimiter

  constructor(ctx: DurableObjectState, env: LiveEnv) {
    this.ctx = ctx
    this.env = env
    this.requests = workerLimits(env).requests
    void ctx.blockConcurrencyWhile(() => this.boot())
  }

  /** After a restart: the chain this object serves, and every socket's subscription. */
  private async boot(): Promise<void> {
    this.users = await usersOf(this.env.API_USERS)
    const key = await this.ctx.storage.get<string>('chain')
    if (!key) return
    await this.open(key)
    for (const ws of this.ctx.getWebSockets()) await this.restore(ws)
  }

  /** The chain's LiveChain, opened once: concurrent callers (a wake, a subscriber) share the opening, start included. */
  private open(key: string): Promise<LiveChain> {
    this.opening ??= this.openChain(key).catch(err => {
      this.opening = null
      throw err
    })
    return this.opening
  }

  private async openChain(key: string): Promise<LiveChain> {
    const chain = CHAINS.find(c => chainKey(c) === key)
    if (!chain) throw new ApiError(404, 'not_found', `no chain ${key}`)
    await this.ctx.storage.put('chain', key)
    let followed: FollowedChain | undefined
    try {
      followed = parseLiveChains(this.env.LIVE_CHAINS).find(f => f.chain === chain)
    } catch (err) {
      console.error((err as Error).message)
    }
    this.followed = followed
    const live = new LiveChain({
      chain,
      store: r2Store(this.env.LAKE),
      source: followed
        ? followedSource(followed, r2Store(this.env.LAKE), { retries: 1, timeoutMs: 5_000 }, { evm: evmFollowed, move: moveFollowed })
        : undefined,
      finalityDepth: followed?.finality,
      compactBlocks: followed?.compactBlocks,
      syncingBlocks: followed?.syncingBlocks,
      persistence: storagePersistence(this.ctx.storage),
      limits: DO_LIMITS,
      scan: workerScan(),
      log: line => console.log(line),
    })
    this.live = live
    if (followed) {
      try {
        await live.start()
      } catch (err) {
        console.error(`${chain.code}: cannot start following yet: ${(err as Error).message}`)
      }
      await this.schedule(0)
    }
    return live
  }

  private async restore(ws: WebSocket): Promise<void> {
    const att = ws.deserializeAttachment() as Attachment | null
    if (!att || !this.live) return ws.close(1011, 'lost state')
    const url = att.url ?? (await this.ctx.storage.get<string>(`url:${att.id}`))
    if (!url) return ws.close(1011, 'lost state')
    const { spec } = parseUpgrade(new URL(url), new Headers())
    const session = new LiveSession(connectionOf(ws, att), {
      chain: this.live,
      spec,
      user: att.user,
      users: this.users,
      requests: this.requests,
      id: att.id,
      cursorHash: att.cursorHash,
      deadline: att.deadline,
      ...(att.user !== null && att.cursor !== null ? { resume: { user: att.user, cursor: att.cursor, to: att.to } } : {}),
    })
    this.sessions.set(ws, session)
    session.open()
  }

  async fetch(request: Request): Promise<Response> {
    try {
      if (new URL(request.url).pathname === LAG_PATH) {
        const key = request.headers.get(CHAIN_HEADER)
        if (!key) throw new ApiError(400, 'bad_request', 'missing chain')
        return Response.json((await this.open(key)).lag())
      }
      if (request.headers.get(WAKE_HEADER)) {
        const key = request.headers.get(CHAIN_HEADER)
        if (!key) throw new ApiError(400, 'bad_request', 'missing chain')
        const live = await this.open(key)
        if (this.followed && !live.halted) await this.schedule(this.followed.pollMs ?? DEFAULT_POLL_MS)
        return new Response(null, { status: 204 })
      }
      if (request.headers.get(SLICE_HEADER)) {
        const key = request.headers.get(CHAIN_HEADER)
        if (!key) throw new ApiError(400, 'bad_request', 'missing chain')
        const slice = (await this.open(key)).slice((await request.json()) as SliceRequest)
        return slice ? new Response(encodeSlice(slice)) : new Response(null, { status: 204 })
      }
      if (!isWebSocketUpgrade(request.headers)) throw new ApiError(426, 'upgrade_required', 'open a WebSocket')
      const key = request.headers.get(CHAIN_HEADER)
      if (!key) throw new ApiError(400, 'bad_request', 'missing chain')
      const live = await this.open(key)
      const url = new URL(request.url)
      const { spec, protocol, cursorHash } = parseUpgrade(url, request.headers)
      const user = request.headers.get(USER_HEADER) || null
      live.assertStreamed(spec.dataset)
      if (spec.to === 'latest' && !live.live) {
        if (live.halted) throw new ApiError(503, live.halted.code, live.halted.message)
        if (live.followed)
          throw new ApiError(503, 'live_unavailable', `chain ${live.chain.code} is not following its node yet; retry later`, {
            headers: { 'Retry-After': '5' },
          })
        throw new ApiError(400, 'live_unavailable', `chain ${live.chain.code} is not followed live: give a numeric to_block for history`, {
          parameter: 'to_block',
        })
      }
      if (user !== null && live.users.count(user) >= live.users.max) {
        throw new ApiError(429, 'too_many_subscriptions', `user ${user} has ${live.users.max} subscriptions open already`)
      }
      const address = request.headers.get(CLIENT_HEADER) ?? ''
      const waiting = [...this.sessions].filter(([, s]) => s.state === 'pending')
      const mine = waiting.filter(([ws]) => (ws.deserializeAttachment() as Attachment).client === address).length
      if (user === null && mine >= live.limits.maxPendingAuthPerClient) {
        throw new ApiError(
          429,
          'too_many_pending',
          `${live.limits.maxPendingAuthPerClient} of your connections are waiting to authenticate already; authenticate them first`,
          { headers: { 'Retry-After': '5' } },
        )
      }
      if (user === null && waiting.length >= live.limits.maxPendingAuth) {
        throw new ApiError(503, 'too_many_pending', 'too many connections are waiting to authenticate; retry later', {
          headers: { 'Retry-After': '5' },
        })
      }
      const id = `${live.chain.code.toLowerCase()}-${Date.now().toString(36)}-${(this.nextId++).toString(36)}`
      const inline = url.href.length <= MAX_INLINE_URL
      if (!inline) await this.ctx.storage.put(`url:${id}`, url.href)
      const att: Attachment = {
        id,
        url: inline ? url.href : null,
        user,
        client: address,
        ...(cursorHash ? { cursorHash } : {}),
        deadline: Date.now() + live.limits.authTimeoutMs,
        cursor: null,
        to: null,
      }
      const [client, server] = Object.values(new WebSocketPair())
      this.ctx.acceptWebSocket(server)
      server.serializeAttachment(att)
      const session = new LiveSession(connectionOf(server, att), {
        chain: live,
        spec,
        user,
        users: this.users,
        requests: this.requests,
        id,
        cursorHash,
        deadline: att.deadline,
      })
      this.sessions.set(server, session)
      session.open()
      if (user === null) await this.schedule(live.limits.authTimeoutMs)
      return new Response(null, { status: 101, webSocket: client, headers: protocol ? { 'Sec-WebSocket-Protocol': protocol } : {} })
    } catch (err) {
      if (toApiError(err).status === 500) console.error('live object: unexpected error', err)
      return errorResponse(err)
    }
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const session = this.sessions.get(ws)
    if (!session) return ws.close(1011, 'lost state')
    await session.message(typeof message === 'string' ? message : new Uint8Array(message))
  }

  async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    // Completes the closing handshake when the client started it, and ends the connection when we did.
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason)
    } catch {
      // already closed
    }
    await this.forget(ws)
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    await this.forget(ws)
  }

  private async forget(ws: WebSocket): Promise<void> {
    const session = this.sessions.get(ws)
    this.sessions.delete(ws)
    session?.closed()
    const att = ws.deserializeAttachment() as Attachment | null
    if (att && att.url === null) await this.ctx.storage.delete(`url:${att.id}`)
  }

  /** Polls the node, expires sessions that never authenticated, and sets the next alarm. */
  async alarm(): Promise<void> {
    const live = this.live
    if (!live) return
    const now = Date.now()
    for (const s of this.sessions.values()) s.expire(now)
    let added = 0
    if (this.followed && !live.halted) {
      try {
        if (!live.live) await live.start()
        added = await live.tick()
      } catch (err) {
        console.error(`${live.chain.code}: poll failed: ${(err as Error).message}`)
      }
    }
    const pending = [...this.sessions.values()].filter(s => s.state === 'pending').map(s => s.deadline)
    if (this.followed && !live.halted) await this.schedule(added > 0 ? 0 : (this.followed.pollMs ?? DEFAULT_POLL_MS))
    else if (pending.length) await this.schedule(Math.max(0, Math.min(...pending) - Date.now()))
  }

  private async schedule(inMs: number): Promise<void> {
    const at = Date.now() + inMs
    const current = await this.ctx.storage.getAlarm()
    if (current === null || current > at) await this.ctx.storage.setAlarm(at)
  }
}

/**
 * The WebSocket API on the Node server: the same LiveChain, sessions and upgrade
 * checks as the Durable Object, over the `ws` package on the node:http server's
 * `upgrade` event. One LiveChain per chain; a followed chain polls its node on a
 * timer (immediately again while it is catching up).
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import { chainKey, type Chain } from '../chains/registry.ts'
import type { Users } from '../api/auth.ts'
import type { RateLimiter } from '../api/limits.ts'
import { ApiError } from '../api/errors.ts'
import type { RpcOptions } from '../ingest/rpc.ts'
import type { ObjectStore } from '../store/types.ts'
import type { FollowedChain } from '../live/config.ts'
import { LiveChain, UserLimiter, type LiveChainOptions } from '../live/hub.ts'
import { CLOSE, DEFAULT_LIMITS, type LiveLimits } from '../live/protocol.ts'
import { LiveSession } from '../live/session.ts'
import { evmFollowed, followedSource, type LiveSource } from '../live/source.ts'
import { moveFollowed } from '../live/move-source.ts'
import type { Connection } from '../live/subscription.ts'
import { CLIENT_ADDRESS_HEADER } from '../api/throttle.ts'
import type { AcceptedUpgrade } from '../api/upgrade.ts'
import type { UpgradeHook } from '../http/app.ts'
import { toRequest, type FetchHandler } from './serve.ts'
import type { ScanOptions } from '../query/scan.ts'
import type { HexKernel } from '../format/hex-kernel.ts'
import { PROTOCOL } from '../api/websocket.ts'

/** A chain to follow: its node, and options of its LiveChain. */
export interface FollowSpec {
  chain: Chain
  /** JSON-RPC URL of an EVM node; ignored when `source` is given. */
  rpcUrl?: string
  /** Fullnode REST URL of a Move-VM node; ignored when `source` is given. */
  restUrl?: string
  source?: LiveSource
  rpc?: RpcOptions
  /** Time between polls of this chain's node, ms (default: the service's). */
  pollIntervalMs?: number
  options?: Omit<LiveChainOptions, 'chain' | 'store' | 'source' | 'users' | 'limits'>
}

/** The chains of LIVE_CHAINS (config.ts) as follow specs for the service. */
export const followSpecs = (chains: readonly FollowedChain[]): FollowSpec[] =>
  chains.map(f => ({
    chain: f.chain,
    rpcUrl: f.rpc,
    restUrl: f.rest,
    pollIntervalMs: f.pollMs,
    options: { finalityDepth: f.finality, compactBlocks: f.compactBlocks, syncingBlocks: f.syncingBlocks },
  }))

export interface LiveServiceOptions {
  /** The per-user request rate, counted at an `auth` message (the app counts upgrades with credentials). */
  requests?: RateLimiter
  store: ObjectStore
  users: Users | null
  follow?: FollowSpec[]
  limits?: Partial<LiveLimits>
  /** Time between polls of a node, ms (default 1,000). */
  pollIntervalMs?: number
  /** Grace before a closed slow consumer's socket is destroyed, ms (default 5,000). */
  closeGraceMs?: number
  /** Scanner options for replays (the server's decompressors and tail cache). */
  scan?: ScanOptions
  /** Writes rows messages' hex values in WebAssembly (the server's kernel). */
  hex?: HexKernel
  log?: (line: string) => void
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

/** Writes the app's answer on a socket that was not upgraded, then ends it. */
async function refuse(socket: Duplex, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer())
  const headers: Record<string, string> = { 'Cache-Control': 'no-store' }
  response.headers.forEach((value, name) => (headers[name] = value))
  headers['content-length'] = String(body.length)
  headers.connection = 'close'
  const head = `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`
  socket.end(Buffer.concat([Buffer.from(head), body]))
}

export class LiveService {
  readonly chains = new Map<string, LiveChain>()
  readonly users: UserLimiter
  readonly limits: LiveLimits
  private readonly opts: LiveServiceOptions
  private readonly wss: WebSocketServer
  private readonly sockets = new Set<WebSocket>()
  private pending = 0
  private running = true
  private loops: Promise<void>[] = []
  private readonly pollMs = new Map<LiveChain, number>()
  private readonly admitted = new WeakMap<Request, [LiveChain, AcceptedUpgrade, string]>()
  /** Sockets waiting for their `auth` message, per client address. */
  private readonly pendingByClient = new Map<string, number>()

  constructor(options: LiveServiceOptions) {
    this.opts = options
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.users = new UserLimiter(this.limits.maxSubscriptionsPerUser)
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.limits.maxClientMessageBytes,
      handleProtocols: protocols => (protocols.has(PROTOCOL) ? PROTOCOL : false),
    })
    for (const f of options.follow ?? []) {
      const source =
        f.source ??
        followedSource(
          { chain: f.chain, rpc: f.rpcUrl, rest: f.restUrl },
          options.store,
          { retries: 3, timeoutMs: 10_000, rpc: f.rpc },
          { evm: evmFollowed, move: moveFollowed },
        )
      const live = new LiveChain({
        ...f.options,
        chain: f.chain,
        store: options.store,
        source,
        users: this.users,
        limits: this.limits,
        scan: options.scan,
        hex: options.hex,
        log: options.log,
      })
      this.chains.set(chainKey(f.chain), live)
      if (f.pollIntervalMs !== undefined) this.pollMs.set(live, f.pollIntervalMs)
    }
  }

  /** The LiveChain of a chain: followed, or history-only when no node is configured. */
  chain(chain: Chain): LiveChain {
    const key = chainKey(chain)
    let live = this.chains.get(key)
    if (!live) {
      live = new LiveChain({
        chain,
        store: this.opts.store,
        users: this.users,
        limits: this.limits,
        scan: this.opts.scan,
        hex: this.opts.hex,
        log: this.opts.log,
      })
      this.chains.set(key, live)
    }
    return live
  }

  /** Starts every followed chain (retrying until its node answers) and their polling loops. */
  start(): Promise<void> {
    const started: Promise<void>[] = []
    for (const live of this.chains.values()) {
      if (!live.followed) continue
      const pollMs = this.pollMs.get(live) ?? this.opts.pollIntervalMs ?? 1_000
      let ready!: () => void
      started.push(new Promise<void>(r => (ready = r)))
      this.loops.push(
        (async () => {
          while (this.running) {
            try {
              await live.start()
              break
            } catch (err) {
              this.opts.log?.(`${live.chain.code}: cannot start following: ${(err as Error).message}`)
              await sleep(pollMs)
            }
          }
          ready()
          while (this.running && !live.halted) {
            let added = 0
            try {
              added = await live.tick()
            } catch (err) {
              this.opts.log?.(`${live.chain.code}: poll failed: ${(err as Error).message}`)
            }
            if (added === 0) await sleep(pollMs)
          }
        })(),
      )
    }
    return Promise.all(started).then(() => {})
  }

  /**
   * The app's upgrade hook: admits a validated subscription (or throws the error to
   * answer) and marks its request, so the `upgrade` event that ran the app upgrades it.
   */
  readonly upgradeHook: UpgradeHook = (request, accepted) => {
    const client = request.headers.get(CLIENT_ADDRESS_HEADER) ?? ''
    this.admitted.set(request, [this.admit(accepted, client), accepted, client])
    return new Response(null, { status: 204 })
  }

  /**
   * The `upgrade` handler of a node:http server: the request goes through the app (the
   * same authentication and parsing as a GET), and is upgraded only if the app admitted it.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, fetch: FetchHandler): void {
    socket.on('error', () => socket.destroy())
    let request: Request
    try {
      request = toRequest(req, new AbortController().signal)
    } catch {
      socket.destroy()
      return
    }
    Promise.resolve(fetch(request)).then(
      response => {
        const admitted = this.admitted.get(request)
        if (admitted) this.wss.handleUpgrade(req, socket, head, ws => this.connect(ws, ...admitted))
        else return refuse(socket, response)
      },
      err => {
        this.opts.log?.(`websocket upgrade: unexpected error: ${(err as Error)?.stack ?? err}`)
        socket.destroy()
      },
    )
  }

  /** The live-specific checks of a subscription: its chain live when asked for, the user's and pending limits. */
  private admit(accepted: AcceptedUpgrade, client: string): LiveChain {
    const live = this.chain(accepted.spec.chain)
    live.assertStreamed(accepted.spec.dataset)
    if (accepted.spec.to === 'latest' && !live.live) {
      if (live.halted) throw new ApiError(503, live.halted.code, live.halted.message)
      if (live.followed)
        throw new ApiError(503, 'live_unavailable', `chain ${live.chain.code} is not following its node yet; retry later`, {
          headers: { 'Retry-After': '5' },
        })
      throw new ApiError(
        400,
        'live_unavailable',
        `chain ${live.chain.code} is not followed live on this server: give a numeric to_block for history`,
        { parameter: 'to_block' },
      )
    }
    if (accepted.user !== null && this.users.count(accepted.user) >= this.users.max) {
      throw new ApiError(429, 'too_many_subscriptions', `user ${accepted.user} has ${this.users.max} subscriptions open already`)
    }
    if (accepted.user === null && (this.pendingByClient.get(client) ?? 0) >= this.limits.maxPendingAuthPerClient) {
      throw new ApiError(
        429,
        'too_many_pending',
        `${this.limits.maxPendingAuthPerClient} of your connections are waiting to authenticate already; authenticate them first`,
        {
          headers: { 'Retry-After': '5' },
        },
      )
    }
    if (accepted.user === null && this.pending >= this.limits.maxPendingAuth) {
      throw new ApiError(503, 'too_many_pending', 'too many connections are waiting to authenticate; retry later', {
        headers: { 'Retry-After': '5' },
      })
    }
    return live
  }

  private connect(ws: WebSocket, live: LiveChain, accepted: AcceptedUpgrade, client: string): void {
    this.sockets.add(ws)
    const grace = this.opts.closeGraceMs ?? 5_000
    const conn: Connection = {
      // Bytes go out as they are, in a text frame (messages.ts).
      send: message => {
        if (ws.readyState === ws.OPEN) ws.send(message, { binary: false })
      },
      close: (code, reason) => {
        ws.close(code, reason)
        // A consumer that reads nothing would hold its unsent bytes until the close handshake times out.
        if (code === CLOSE.slowConsumer) setTimeout(() => ws.terminate(), grace).unref()
      },
      buffered: () => ws.bufferedAmount,
    }
    let waiting = accepted.user === null
    const byClient = (d: number) => {
      const n = (this.pendingByClient.get(client) ?? 0) + d
      if (n > 0) this.pendingByClient.set(client, n)
      else this.pendingByClient.delete(client)
    }
    if (waiting) {
      this.pending++
      byClient(1)
    }
    const settle = () => {
      if (waiting) {
        waiting = false
        this.pending--
        byClient(-1)
      }
    }
    const session = new LiveSession(conn, {
      chain: live,
      spec: accepted.spec,
      user: accepted.user,
      users: this.opts.users,
      requests: this.opts.requests,
      cursorHash: accepted.cursorHash,
      onChange: settle,
    })
    const timer = waiting ? setTimeout(() => session.expire(), this.limits.authTimeoutMs + 1) : undefined
    ws.on('message', (data, isBinary) => {
      const frame = isBinary ? new Uint8Array(data as Buffer) : (data as Buffer).toString('utf8')
      session.message(frame).catch(err => this.opts.log?.(`websocket message: ${(err as Error).message}`))
    })
    ws.on('close', () => {
      clearTimeout(timer)
      this.sockets.delete(ws)
      settle()
      session.closed()
    })
    ws.on('error', () => ws.terminate())
    session.open()
  }

  /** Connections open now. */
  get connections(): number {
    return this.sockets.size
  }

  /** Stops polling, closes every socket with 1001 and waits for compactions in flight. */
  async close(): Promise<void> {
    this.running = false
    for (const ws of this.sockets) ws.close(CLOSE.goingAway, 'server shutting down')
    await Promise.all(this.loops)
    await Promise.all([...this.chains.values()].map(c => c.settled()))
    for (const ws of this.sockets) ws.terminate()
    this.wss.close()
  }
}

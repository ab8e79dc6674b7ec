/**
 * The WebSocket API on the Node server: the same LiveChain, sessions and upgrade
 * checks as the Durable Object, over the `ws` package on the node:http server's
 * `upgrade` event. One LiveChain per chain; a followed chain polls its node on a
 * timer (immediately again while it is catching up).
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import { CHAINS, chainKey, type Chain } from '../chains/registry.ts'
import type { Users } from '../http/auth.ts'
import { ApiError, errorBody, toApiError } from '../http/errors.ts'
import type { RpcOptions } from '../ingest/rpc.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import type { FollowedChain } from './config.ts'
import { LiveChain, UserLimiter, type LiveChainOptions } from './hub.ts'
import { CLOSE, DEFAULT_LIMITS, PROTOCOL, type LiveLimits } from './protocol.ts'
import { LiveSession } from './session.ts'
import { evmFollowed, followedSource, type LiveSource } from './source.ts'
import { moveFollowed } from './move-source.ts'
import type { Connection } from './subscription.ts'
import { checkUpgrade, type AcceptedUpgrade } from './upgrade.ts'
import type { ScanOptions } from '../query/scan.ts'

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
  chains.map(f => ({ chain: f.chain, rpcUrl: f.rpc, restUrl: f.rest, pollIntervalMs: f.pollMs, options: { finalityDepth: f.finality, compactBlocks: f.compactBlocks } }))

export interface LiveServiceOptions {
  store: ObjectStore
  users: Users | null
  follow?: FollowSpec[]
  chains?: readonly Chain[]
  datasets?: readonly DatasetDecl[]
  limits?: Partial<LiveLimits>
  /** Time between polls of a node, ms (default 1,000). */
  pollIntervalMs?: number
  /** Grace before a closed slow consumer's socket is destroyed, ms (default 5,000). */
  closeGraceMs?: number
  /** Scanner options for replays (the server's decompressors and tail cache). */
  scan?: ScanOptions
  log?: (line: string) => void
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

/** Writes an HTTP error response on a socket that was not upgraded, then ends it. */
function refuse(socket: Duplex, err: ApiError): void {
  const body = errorBody(err)
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    Connection: 'close',
    ...err.headers,
  }
  const head = `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`
  socket.end(head + body)
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
      const source = f.source ?? followedSource({ chain: f.chain, rpc: f.rpcUrl, rest: f.restUrl }, options.store, { retries: 3, timeoutMs: 10_000, rpc: f.rpc }, { evm: evmFollowed, move: moveFollowed })
      const live = new LiveChain({ ...f.options, chain: f.chain, store: options.store, source, users: this.users, limits: this.limits, scan: options.scan, log: options.log })
      this.chains.set(chainKey(f.chain), live)
      if (f.pollIntervalMs !== undefined) this.pollMs.set(live, f.pollIntervalMs)
    }
  }

  /** The LiveChain of a chain: followed, or history-only when no node is configured. */
  chain(chain: Chain): LiveChain {
    const key = chainKey(chain)
    let live = this.chains.get(key)
    if (!live) {
      live = new LiveChain({ chain, store: this.opts.store, users: this.users, limits: this.limits, scan: this.opts.scan, log: this.opts.log })
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
      this.loops.push((async () => {
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
      })())
    }
    return Promise.all(started).then(() => {})
  }

  /** The `upgrade` handler of a node:http server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy())
    this.accept(req).then(
      ([live, accepted]) => {
        this.wss.handleUpgrade(req, socket, head, ws => this.connect(ws, live, accepted))
      },
      err => {
        const api = toApiError(err)
        if (api.status === 500) this.opts.log?.(`websocket upgrade: unexpected error: ${(err as Error)?.stack ?? err}`)
        refuse(socket, api)
      },
    )
  }

  private async accept(req: IncomingMessage): Promise<[LiveChain, AcceptedUpgrade]> {
    const headers = new Headers()
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1])
    let url: URL
    try {
      url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`)
    } catch {
      throw new ApiError(400, 'bad_request', 'malformed request')
    }
    const accepted = await checkUpgrade(url, headers, { users: this.opts.users, chains: this.opts.chains ?? CHAINS, datasets: this.opts.datasets })
    const live = this.chain(accepted.spec.chain)
    if (accepted.spec.to === 'latest' && !live.live) {
      if (live.halted) throw new ApiError(503, live.halted.code, live.halted.message)
      if (live.followed) throw new ApiError(503, 'live_unavailable', `chain ${live.chain.code} is not following its node yet; retry later`, { headers: { 'Retry-After': '5' } })
      throw new ApiError(400, 'live_unavailable', `chain ${live.chain.code} is not followed live on this server: give a numeric to_block for history`, { parameter: 'to_block' })
    }
    if (accepted.user !== null && this.users.count(accepted.user) >= this.users.max) {
      throw new ApiError(429, 'too_many_subscriptions', `user ${accepted.user} has ${this.users.max} subscriptions open already`)
    }
    if (accepted.user === null && this.pending >= this.limits.maxPendingAuth) {
      throw new ApiError(503, 'too_many_pending', 'too many connections are waiting to authenticate; retry later', { headers: { 'Retry-After': '5' } })
    }
    return [live, accepted]
  }

  private connect(ws: WebSocket, live: LiveChain, accepted: AcceptedUpgrade): void {
    this.sockets.add(ws)
    const grace = this.opts.closeGraceMs ?? 5_000
    const conn: Connection = {
      send: text => {
        if (ws.readyState === ws.OPEN) ws.send(text)
      },
      close: (code, reason) => {
        ws.close(code, reason)
        // A consumer that reads nothing would hold its unsent bytes until the close handshake times out.
        if (code === CLOSE.slowConsumer) setTimeout(() => ws.terminate(), grace).unref()
      },
      buffered: () => ws.bufferedAmount,
    }
    let waiting = accepted.user === null
    if (waiting) this.pending++
    const settle = () => {
      if (waiting) {
        waiting = false
        this.pending--
      }
    }
    const session = new LiveSession(conn, { chain: live, spec: accepted.spec, user: accepted.user, users: this.opts.users, cursorHash: accepted.cursorHash, onChange: settle })
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

/**
 * Serves the WebSocket API on an HTTP server's upgrades. With `waitForNodes`
 * (default true) it resolves once every followed chain is anchored (retrying a
 * node that does not answer); without, at once, following as nodes come up.
 */
export async function attachLive(server: Server, options: LiveServiceOptions & { waitForNodes?: boolean }): Promise<LiveService> {
  const service = new LiveService(options)
  server.on('upgrade', (req, socket, head) => service.handleUpgrade(req, socket, head))
  const started = service.start()
  if (options.waitForNodes ?? true) await started
  return service
}

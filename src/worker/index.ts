/**
 * Worker entry, the Cloudflare runtime assembled in one place: the HTTP app over the
 * R2 bucket bound as LAKE, with WebSocket upgrades handed to the chain's Durable
 * Object (LIVE) once the app has authenticated and validated them. The store, the
 * manifest reader (with its shard cache) and the parsed users live at module scope,
 * so they are built once per isolate and shared by its requests. Without the
 * API_USERS secret every request is refused with a 503: a deployment never serves
 * data unauthenticated.
 */
import type { Hono } from 'hono'
import { hexEncoders } from '../format/encode.ts'
import { HexKernel } from '../format/hex-kernel.ts'
import hexModule from '../format/hex.wasm'
import { createApp } from '../http/app.ts'
import type { PipelineEnv } from '../http/middleware.ts'
import { ManifestReader } from '../manifest/read.ts'
import { r2Store } from '../store/r2.ts'
import { parseLiveChains } from '../live/config.ts'
import { forwardUpgrade, liveLagOf, wakeFollowers, windowSource } from './live-object.ts'
import { workerScan } from './scan.ts'
import { usersOf } from './users.ts'
import { workerLimits, type LimitsEnv } from './limits.ts'

/** The WebSocket API's Durable Object class: one per chain (live-object.ts, bound as LIVE). */
export { LiveChainObject } from './live-object.ts'

export interface Env extends LimitsEnv {
  LAKE: R2Bucket
  /** Comma-separated `user:secret` (a secret: `wrangler secret put API_USERS`). */
  API_USERS?: string
  /** The WebSocket API's Durable Objects (wrangler.toml); without the binding an upgrade is answered as a plain GET. */
  LIVE?: DurableObjectNamespace
  /** Chains followed live, JSON (a secret: node URLs carry keys; see docs/websocket.md). */
  LIVE_CHAINS?: string
}

let cached: { bucket: R2Bucket; live: DurableObjectNamespace | undefined; settings: string; app: Promise<Hono<PipelineEnv>> } | undefined

/** What the app is built from besides the bucket and the namespace: users, limits and the chains followed live. */
const settingsOf = (env: Env): string =>
  JSON.stringify([
    env.API_USERS,
    env.RATE_LIMIT_REQUESTS,
    env.RATE_LIMIT_PERIOD,
    env.MAX_STREAMS_PER_USER,
    env.READ_LIMIT_BYTES,
    env.SCAN_CONCURRENCY,
    env.USER_REQUESTS !== undefined,
    env.LIVE_CHAINS,
  ])

async function build(env: Env): Promise<Hono<PipelineEnv>> {
  const store = r2Store(env.LAKE)
  return createApp({
    store,
    manifest: new ManifestReader(store),
    users: await usersOf(env.API_USERS),
    scan: workerScan(),
    // Hex through the module wrangler compiled at deploy time (src/format/hex-kernel.ts).
    encoders: hexEncoders(new HexKernel(hexModule)),
    limits: workerLimits(env),
    // Workers Logs keeps what the Worker prints: one line per request.
    accessLog: line => console.log(line),
    ...(env.LIVE ? { upgrade: forwardUpgrade(env.LIVE), liveLag: liveLagOf(env.LIVE, followedChains(env.LIVE_CHAINS)) } : {}),
    ...(env.LIVE && env.LIVE_CHAINS ? { unfinalized: windowSource({ LIVE: env.LIVE, LIVE_CHAINS: env.LIVE_CHAINS }) } : {}),
  })
}

/** The chains LIVE_CHAINS follows; none when it is unset or unreadable (the object logs why). */
function followedChains(text: string | undefined) {
  try {
    return parseLiveChains(text).map(f => f.chain)
  } catch {
    return []
  }
}

/** The app for this isolate's bindings, rebuilt only when they change. */
function appFor(env: Env): Promise<Hono<PipelineEnv>> {
  const settings = settingsOf(env)
  if (!cached || cached.bucket !== env.LAKE || cached.live !== env.LIVE || cached.settings !== settings) {
    cached = { bucket: env.LAKE, live: env.LIVE, settings, app: build(env) }
  }
  return cached.app
}

/** The LIVE namespace this isolate has woken the followers of (once per isolate; the objects' alarms do the rest). */
let woken: DurableObjectNamespace | undefined

export default {
  async fetch(request, env, ctx): Promise<Response> {
    if (env.LIVE && env.LIVE_CHAINS && woken !== env.LIVE) {
      woken = env.LIVE
      ctx.waitUntil(wakeFollowers({ LIVE: env.LIVE, LIVE_CHAINS: env.LIVE_CHAINS }))
    }
    return (await appFor(env)).fetch(request, env, ctx)
  },
  /** The Cron Trigger (wrangler.toml): every chain in LIVE_CHAINS is followed even with no request and no subscriber. */
  async scheduled(_controller, env, ctx): Promise<void> {
    if (env.LIVE && env.LIVE_CHAINS) ctx.waitUntil(wakeFollowers({ LIVE: env.LIVE, LIVE_CHAINS: env.LIVE_CHAINS }))
  },
} satisfies ExportedHandler<Env>

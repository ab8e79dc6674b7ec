/**
 * Worker entry: the HTTP app over the R2 bucket bound as LAKE. The store, the
 * manifest reader (with its shard cache) and the parsed users live at module scope,
 * so they are built once per isolate and shared by its requests. Without the
 * API_USERS secret every request is refused with a 503: a deployment never serves
 * data unauthenticated.
 */
import type { Hono } from 'hono'
import { createApp } from '../http/app.ts'
import { parseUsers, type Users } from '../http/auth.ts'
import { ManifestReader } from '../manifest/read.ts'
import { r2Store } from '../store/r2.ts'
import { forwardUpgrade } from '../live/durable.ts'
import { isWebSocketUpgrade } from '../live/upgrade.ts'
import { workerScan } from './scan.ts'

/** The WebSocket API's Durable Object class: one per chain (src/live/durable.ts, bound as LIVE). */
export { LiveChainObject } from '../live/durable.ts'

export interface Env {
  LAKE: R2Bucket
  /** Comma-separated `user:secret` (a secret: `wrangler secret put API_USERS`). */
  API_USERS?: string
  /** The WebSocket API's Durable Objects (wrangler.toml); without the binding an upgrade is answered as a plain GET. */
  LIVE?: DurableObjectNamespace
  /** Chains followed live, JSON (a secret: node URLs carry keys; see docs/websocket.md). */
  LIVE_CHAINS?: string
}

let cached: { bucket: R2Bucket; usersText: string | undefined; app: Promise<Hono> } | undefined

async function build(env: Env): Promise<Hono> {
  let users: Users | null = null
  if (env.API_USERS !== undefined && env.API_USERS.trim() !== '') {
    try {
      users = await parseUsers(env.API_USERS)
    } catch (err) {
      console.error(`API_USERS is unusable: ${(err as Error).message}`)
    }
  }
  const store = r2Store(env.LAKE)
  return createApp({ store, manifest: new ManifestReader(store), users, scan: workerScan() })
}

/** The app for this isolate's bindings, rebuilt only when they change. */
function appFor(env: Env): Promise<Hono> {
  if (!cached || cached.bucket !== env.LAKE || cached.usersText !== env.API_USERS) {
    cached = { bucket: env.LAKE, usersText: env.API_USERS, app: build(env) }
  }
  return cached.app
}

export default {
  async fetch(request, env, ctx): Promise<Response> {
    // WebSocket subscriptions (src/live): authenticated and validated here, served by the chain's Durable Object.
    if (env.LIVE && isWebSocketUpgrade(request.headers)) return forwardUpgrade(request, { LAKE: env.LAKE, API_USERS: env.API_USERS, LIVE: env.LIVE, LIVE_CHAINS: env.LIVE_CHAINS })
    return (await appFor(env)).fetch(request, env, ctx)
  },
} satisfies ExportedHandler<Env>

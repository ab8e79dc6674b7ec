/**
 * `npm run serve -- --data <store-url> [--port <n>] [--host <addr>]`
 *
 * The Node server: the same app as the Worker over a local directory or S3
 * (`file://…`, a path, or `s3://bucket/prefix`). Port 0 picks a free port; the first
 * line printed is `listening http://<host>:<port>`. Binds 127.0.0.1 unless --host
 * says otherwise. Users come from API_USERS; without it the development user
 * dev:dev is used, and the server says so, but only on a loopback address: a
 * server reachable from other machines refuses to start without API_USERS.
 * WebSocket subscriptions (docs/websocket.md) are served on the same port; chains in
 * LIVE_CHAINS (JSON, see src/live/config.ts) are followed live.
 */
import { cliArgs } from './args.ts'
import { CHAINS } from '../src/chains/registry.ts'
import { DEV_API_USERS, parseUsers } from '../src/api/auth.ts'
import { userLimits } from '../src/api/limits.ts'
import { openStore } from '../src/store/open.ts'
import { parseLiveChains } from '../src/live/config.ts'
import { followSpecs } from '../src/node/live.ts'
import { startNodeServer } from '../src/node/server.ts'

const USAGE = 'usage: npm run serve -- --data <store-url> [--port <n>] [--host <addr>]'
const values = cliArgs(
  {
    data: { type: 'string' },
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
  },
  USAGE,
)

if (!values.data) {
  console.error(USAGE)
  process.exit(2)
}
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be 0..65535, got ${values.port}`)
  process.exit(2)
}

const fromEnv = process.env.API_USERS !== undefined && process.env.API_USERS.trim() !== ''
const loopback = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i.test(values.host)
if (!fromEnv && !loopback) {
  console.error(`refusing to serve on ${values.host} with the development user: set API_USERS (see npm run hash-password)`)
  process.exit(2)
}
const users = await parseUsers(fromEnv ? process.env.API_USERS! : DEV_API_USERS)
const store = openStore(values.data)
let limits
try {
  limits = userLimits(process.env, undefined, { direct: true })
} catch (err) {
  console.error((err as Error).message)
  process.exit(2)
}
const server = await startNodeServer({
  ...limits,
  store,
  users,
  port,
  host: values.host,
  follow: followSpecs(parseLiveChains(process.env.LIVE_CHAINS)),
  waitForNodes: false,
  // ENCODE_THREAD=off encodes every response in the main thread (src/node/encode-threads.ts).
  ...(process.env.ENCODE_THREAD === 'off' ? { encodeThread: false as const } : {}),
  accessLog: line => console.log(line),
  log: line => console.error(`[live] ${line}`),
})

console.log(`listening ${server.url}`)
console.log(`data: ${values.data}`)
for (const chain of CHAINS.filter(c => !c.hosts.includes('*'))) {
  const local = chain.hosts.find(h => h.endsWith('.localhost'))
  if (local) console.log(`${chain.code}: http://${local}:${server.port} (or send Host: ${local})`)
}
console.log(fromEnv ? 'users: from API_USERS' : 'users: API_USERS is not set, using the development user dev:dev (curl -u dev:dev …)')

const stop = () => {
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)

/**
 * `npm start [-- --data <lake dir>] [--persist-to <dir>]`: the Worker under
 * `wrangler dev` on the bundled sample lake.
 *
 * 1. Seeds wrangler dev's local R2 (the LAKE bucket under .wrangler/state) from
 *    partitions-manifest/sample, written by `npm run devnet`, through Miniflare with
 *    the same persistence path wrangler dev uses.
 * 2. Runs `wrangler dev` on 127.0.0.1:$PORT (default 8787), keeping the request's own
 *    host so the Move hosts (aptos.localhost, …) route as in production.
 *
 * 3. With the bundled sample (or --live): the live demo. anvil continues the sample's
 *    devnet chain (the workload replayed up to its last block) and mines a round of
 *    Uniswap swaps and liquidity changes every 3 s; the Worker's Durable Object follows
 *    it (LIVE_CHAINS) and a WebSocket subscriber prints each new block's events.
 *    Durable Object state starts afresh each time, like the seeded bucket. LIVE_CHAINS in
 *    the environment adds chains to follow (a Move-VM fullnode: `{"APTOS": {"rest": …}}`).
 *
 * --data picks another lake directory (no live demo unless --live) and --persist-to
 * another local state directory (default .wrangler/state, which wrangler dev uses).
 *
 * Users: API_USERS from the environment when set, else the development user dev:dev.
 * wrangler reads API_USERS from the environment (wrangler.toml declares it a
 * required secret), so it never appears on a command line.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { cliArgs } from './args.ts'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { CHAINS } from '../src/chains/registry.ts'
import { DEV_API_USERS } from '../src/api/auth.ts'
import { seedBucket } from './dev/seed-r2.ts'
import { demoSubscriber, startLiveDevnet, type LiveDevnet } from './dev/live-demo.ts'
import { openStore } from '../src/store/open.ts'

const root = resolve(import.meta.dirname, '..')
const values = cliArgs(
  { data: { type: 'string' }, 'persist-to': { type: 'string' }, live: { type: 'boolean' } },
  'usage: npm start [-- --data <sample dir>] [--persist-to <dir>] [--no-live]   (PORT sets the port, default 8787)',
  process.argv.slice(2),
  true,
)
const sample = resolve(values.data ?? join(root, 'partitions-manifest', 'sample'))
const persist = resolve(values['persist-to'] ?? join(root, '.wrangler', 'state'))
const port = Number(process.env.PORT ?? 8787)
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be 1..65535, got ${process.env.PORT}`)
  process.exit(2)
}

/** The LAKE bucket's name in wrangler.toml: local R2 state is kept per bucket name. */
function lakeBucketName(): string {
  const toml = readFileSync(join(root, 'wrangler.toml'), 'utf8')
  const m = /\[\[r2_buckets\]\][^[]*?binding\s*=\s*"LAKE"[^[]*?bucket_name\s*=\s*"([^"]+)"/.exec(toml)
  if (!m) throw new Error('wrangler.toml has no r2_buckets entry with binding "LAKE"')
  return m[1]
}

if (existsSync(sample)) {
  // The options `wrangler r2 object put --local` uses, so wrangler dev finds the objects.
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
      resourcePersistencePath: join(persist, 'v3'),
      r2Buckets: { LAKE: lakeBucketName() },
    }),
  )
  try {
    const bucket = await mf.getR2Bucket('LAKE')
    const seeded = await seedBucket(bucket as never, openStore(sample))
    console.log(`seeded local R2 from ${sample}: ${seeded.objects} objects, ${seeded.bytes} bytes (${seeded.deleted} stale removed)`)
  } finally {
    await mf.dispose()
  }
} else {
  console.warn(`no sample lake at ${sample}: run \`npm run devnet\` to build it (starts anvil and ingests a few hundred blocks).`)
  console.warn('starting anyway: /v1/api/status works, data endpoints answer 404 no_data.')
}

let devnet: LiveDevnet | undefined
const vars: string[] = []
if ((values.live ?? values.data === undefined) && existsSync(sample)) {
  rmSync(join(persist, 'v3', 'do'), { recursive: true, force: true })
  devnet = await startLiveDevnet({ lake: openStore(sample), log: line => console.log(`[devnet] ${line}`) })
}
// More chains to follow (a Move-VM fullnode, say): LIVE_CHAINS from the environment, the Worker's JSON, over the devnet's.
const liveChains = { ...(devnet ? JSON.parse(devnet.liveChains) : {}), ...liveChainsOfEnv() }
if (Object.keys(liveChains).length) vars.push('--var', `LIVE_CHAINS:${JSON.stringify(liveChains)}`)

function liveChainsOfEnv(): Record<string, unknown> {
  const text = process.env.LIVE_CHAINS?.trim()
  if (!text) return {}
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch (err) {
    throw new Error(`LIVE_CHAINS is not JSON: ${(err as Error).message}`)
  }
}

const fromEnv = process.env.API_USERS !== undefined && process.env.API_USERS.trim() !== ''
const wrangler = join(dirname(createRequire(import.meta.url).resolve('wrangler/package.json')), 'bin', 'wrangler.js')
const child = spawn(
  process.execPath,
  [
    wrangler,
    'dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--persist-to',
    persist,
    '--infer-origin-from-routes=false',
    '--show-interactive-dev-session=false',
    ...vars,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      // Local only: no fetch of the Request.cf template or metrics from Cloudflare's servers.
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
      WRANGLER_SEND_METRICS: 'false',
      ...process.env,
      API_USERS: fromEnv ? process.env.API_USERS : DEV_API_USERS,
    },
  },
)

console.log(`EVM host: http://127.0.0.1:${port}`)
for (const chain of CHAINS.filter(c => !c.hosts.includes('*'))) {
  const local = chain.hosts.find(h => h.endsWith('.localhost'))
  if (local) console.log(`${chain.code}: http://${local}:${port}`)
}
console.log(fromEnv ? 'users: from API_USERS' : 'users: API_USERS is not set, using the development user dev:dev (curl -u dev:dev …)')

const subscriber = devnet ? await startSubscriber() : undefined

/**
 * Waits for wrangler dev to answer. Any request wakes the followers of LIVE_CHAINS (a
 * deployment's Cron Trigger does it there; wrangler dev runs no crons), so the lake
 * follows the devnet with or without a subscriber.
 */
async function workerUp(): Promise<boolean> {
  for (let i = 0; i < 120; i++) {
    const answered = await fetch(`http://127.0.0.1:${port}/v1/api/status`)
      .then(r => (r.body?.cancel(), true))
      .catch(() => false)
    if (answered) return true
    await new Promise(r => setTimeout(r, 500))
  }
  return false
}

/** Waits for wrangler dev to answer, then subscribes to the devnet's logs over a WebSocket. */
async function startSubscriber() {
  if (!(await workerUp())) return undefined
  if (fromEnv) {
    console.log('[subscriber] not started: it signs in as the development user, and API_USERS is set')
    return undefined
  }
  const [user, password] = DEV_API_USERS.split(':')
  for (let i = 0; i < 120; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/v1/api/status`, { headers: { authorization: `Basic ${btoa(`${user}:${password}`)}` } })
      .then(r => r.ok)
      .catch(() => false)
    if (ok) return demoSubscriber(`http://127.0.0.1:${port}`, { user, password }, line => console.log(`[subscriber] ${line}`))
    await new Promise(r => setTimeout(r, 500))
  }
  return undefined
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal))
child.on('exit', async code => {
  subscriber?.close()
  await devnet?.stop()
  process.exit(code ?? 0)
})

/**
 * `npm run bench -- load`: many clients at once, for a fixed time, against the
 * production bundle in Miniflare (workerd) and the Node server (`scripts/serve.ts` in its
 * own process), both over the bundled sample. Each client runs requests back to back,
 * mixing the query classes (status, one block, an address filter over the whole range,
 * a full export as Arrow and CSV), each client as one of 16 users. Reported per server
 * and client count: throughput, p50/p99 latency (to the last byte), errors, and the
 * server's peak RSS (sampled from /proc). The per-user limits are raised for these
 * points, so they measure capacity; then an abuse run: 8 paced clients (1 request/s,
 * each its own user) with the default limits, alone and beside one user hammering with
 * 32 connections, to show the abuser throttled (429) while the others keep their p99.
 *
 * The abuse run is repeated with the fair shares between users off (SCAN_CONCURRENCY so
 * high that no slice ever waits) and on (SCAN_CONCURRENCY=1), interleaved, LOAD_ROUNDS times.
 *
 * LOAD_SECONDS sets the time per point (default 10); LOAD_SERVERS the servers (default
 * `workerd,node`); LOAD_CAPACITY=0 skips the capacity points; LOAD_ROUNDS the rounds of the
 * abuse run (default 1); LOAD_ABUSER_CONNECTIONS the abuser's connections (default 32), and
 * LOAD_ABUSER_RATE=open lifts the request rate on both servers, so an abuser with 8
 * connections (its stream cap) keeps 8 requests running all the time; LOAD_RATE_LIMIT sets it
 * (requests per user per 10 s) instead;
 * LOAD_FAIR_CONCURRENCY the SCAN_CONCURRENCY of the fair variant (default 1); LOAD_READ_LIMIT the
 * READ_LIMIT_BYTES of the abuse run's servers (default: theirs, 512 MiB per 10 s). The clients run
 * in this process, the abuser's in a process of its own (bench/lib/load-clients.ts), all on
 * the machine's cores with the servers.
 */
import { spawn, execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { Miniflare } from 'miniflare'
import { buildBundle, bundleMiniflare, type RateLimitConfig } from '../scripts/dev/bundle.ts'
import { seedBucket, type SeedableBucket } from '../scripts/dev/seed-r2.ts'
import { fsStore } from '../src/store/fs.ts'
import { abuserProcess, auth, drive, mix, sleepUntil, summary } from './lib/load-clients.ts'
import { int, ms, table, target } from './report.ts'
import type { BenchContext, Section } from './section.ts'

const USERS = Array.from({ length: 16 }, (_, i) => `load${i}`)
const ABUSER = 'abuser'
const API_USERS = [...USERS, ABUSER].map(u => `${u}:${u}`).join(',')
const CLIENTS = [1, 16, 64, 256]
/** The well-behaved users of the abuse run, and the time between their requests. */
const PACED = 8
const PACE_MS = 1000
/** Limits high enough not to bind in the capacity points. */
const OPEN_LIMITS = { RATE_LIMIT_REQUESTS: '1000000', MAX_STREAMS_PER_USER: '100000', READ_LIMIT_BYTES: String(2 ** 50) }
/** The fair shares between users on (one slice per user per round), and off: more slices per round than ever start. */
const FAIR = { SCAN_CONCURRENCY: process.env.LOAD_FAIR_CONCURRENCY ?? '1' }
const UNFAIR = { SCAN_CONCURRENCY: '1000000' }
const OPEN_RATELIMIT: Record<string, RateLimitConfig> = {
  USER_REQUESTS: { namespace_id: '1001', simple: { limit: 1_000_000, period: 10 } },
}
/** Requests per user per 10 s in the abuse rounds (LOAD_RATE_LIMIT; default the deployment's 200): sized to what one server serves. */
const RATE_LIMIT = process.env.LOAD_RATE_LIMIT === undefined ? undefined : Number(process.env.LOAD_RATE_LIMIT)

interface Server {
  name: 'workerd' | 'node'
  url: string
  /** Resident set size of the serving process now, bytes. */
  rss(): number
  stop(): Promise<void>
}

/** VmRSS of a process, bytes (0 when it is gone). */
function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/** The workerd processes below this one (Miniflare's). */
function workerdPids(): number[] {
  const out = execFileSync('ps', ['-eo', 'pid,ppid,comm'], { encoding: 'utf8' })
  const rows = out
    .trim()
    .split('\n')
    .slice(1)
    .map(l => l.trim().split(/\s+/))
  const mine = new Set([process.pid])
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, ppid] of rows)
      if (mine.has(Number(ppid)) && !mine.has(Number(pid))) {
        mine.add(Number(pid))
        grew = true
      }
  }
  return rows.filter(([pid, , comm]) => mine.has(Number(pid)) && comm.startsWith('workerd')).map(([pid]) => Number(pid))
}

/** The Worker's rate-limit binding at `limit` requests per 10 s (wrangler.toml's, sized by LOAD_RATE_LIMIT). */
const ratelimitOf = (limit: number): Record<string, RateLimitConfig> => ({
  USER_REQUESTS: { namespace_id: '1001', simple: { limit, period: 10 } },
})

async function startWorkerd(
  root: string,
  outdir: string,
  sample: string,
  open: boolean,
  vars: Record<string, string>,
  rateLimit?: number,
): Promise<Server> {
  const ratelimits = open ? OPEN_RATELIMIT : rateLimit !== undefined ? ratelimitOf(rateLimit) : undefined
  const mf: Miniflare = await bundleMiniflare(
    root,
    outdir,
    { API_USERS, ...(open ? OPEN_LIMITS : {}), ...vars },
    { ...(ratelimits ? { ratelimits } : {}), quiet: true },
  )
  await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, fsStore(sample))
  const url = (await mf.ready).toString().replace(/\/$/, '')
  const pids = workerdPids()
  return { name: 'workerd', url, rss: () => pids.reduce((n, p) => n + rssOf(p), 0), stop: () => mf.dispose() }
}

async function startNode(root: string, sample: string, open: boolean, vars: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'serve.ts'), '--data', sample, '--port', '0'], {
    env: { ...process.env, API_USERS, ...(open ? OPEN_LIMITS : {}), ...vars },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve)
    child.once('exit', code => reject(new Error(`scripts/serve.ts exited with ${code} before listening`)))
  })
  lines.on('line', () => {}) // the access log, drained
  return {
    name: 'node',
    url: first.slice('listening '.length),
    rss: () => rssOf(child.pid!),
    stop: () =>
      new Promise<void>(resolve => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill()
      }),
  }
}

/** An address with logs in the sample (the busiest one), for the filter class. */
async function busyAddress(server: Server): Promise<string> {
  const res = await fetch(`${server.url}/v1/api/logs?chains=DEVNET&from_block=0&fields=address&format=json_stream`, {
    headers: { authorization: auth(USERS[0]) },
  })
  const counts = new Map<string, number>()
  for (const line of (await res.text()).trim().split('\n')) {
    const a = (JSON.parse(line) as { address: string }).address
    counts.set(a, (counts.get(a) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0][0]
}

export const load: Section = {
  name: 'load',
  title: 'concurrent clients (1-256) mixing query classes against workerd and the Node server; an abusive user throttled',
  slow: true,
  async run(ctx: BenchContext): Promise<string> {
    const seconds = Number(process.env.LOAD_SECONDS ?? 10)
    const servers = (process.env.LOAD_SERVERS ?? 'workerd,node').split(',') as ('workerd' | 'node')[]
    const capacityPoints = process.env.LOAD_CAPACITY !== '0'
    const rounds = Number(process.env.LOAD_ROUNDS ?? 1)
    const abusers = Number(process.env.LOAD_ABUSER_CONNECTIONS ?? 32)
    const openRate = process.env.LOAD_ABUSER_RATE === 'open'
    /** The per-user rate of the abuse rounds on both servers (unset: the deployment's); the capacity rounds lift it. */
    const rate = openRate ? 1_000_000 : RATE_LIMIT
    const readLimit = process.env.LOAD_READ_LIMIT
    const sample = join(ctx.root, 'partitions-manifest', 'sample')
    ctx.log('building the bundle')
    const { outdir } = await buildBundle(ctx.root)
    const capacity: (string | number)[][] = []
    const abuse: (string | number)[][] = []
    const notes: string[] = []
    try {
      for (const name of servers) {
        const start = (open: boolean, vars: Record<string, string> = {}) =>
          name === 'workerd'
            ? startWorkerd(ctx.root, outdir, sample, open, vars, rate)
            : startNode(ctx.root, sample, open, { ...(!open && rate !== undefined ? { RATE_LIMIT_REQUESTS: String(rate) } : {}), ...vars })
        if (capacityPoints) {
          const server = await start(true)
          try {
            const classes = mix(server.url, await busyAddress(server))
            await drive(classes, 4, 2, i => USERS[i % USERS.length]) // warm
            for (const clients of CLIENTS) {
              ctx.log(`${name}: ${clients} clients for ${seconds} s`)
              const s = summary(await drive(classes, clients, seconds, i => USERS[i % USERS.length], 0, server.rss))
              capacity.push([name, clients, int(s.requests), int(s.perSecond), ms(s.p50), ms(s.p99), s.errors, int(s.peakMb)])
              if (clients === 256) notes.push(target(s.errors === 0, `${name}: zero errors at 256 clients (${s.errors})`))
            }
          } finally {
            await server.stop()
          }
        }
        // Default limits: 200 requests per 10 s and 8 streams per user; the fair shares off, then on, in turn.
        for (let round = 1; round <= rounds; round++)
          for (const fair of [false, true]) {
            const server = await start(false, {
              ...(fair ? FAIR : UNFAIR),
              ...(readLimit ? { READ_LIMIT_BYTES: readLimit } : {}),
            })
            const label = `${name}, fair shares ${fair ? 'on' : 'off'}${rounds > 1 ? ` (round ${round})` : ''}`
            try {
              const address = await busyAddress(server)
              const classes = mix(server.url, address)
              await drive(classes, 4, 2, i => USERS[i % USERS.length], PACE_MS)
              ctx.log(`${label}: ${PACED} paced users alone`)
              const alone = summary(await drive(classes, PACED, seconds, i => USERS[i], PACE_MS))
              ctx.log(`${label}: ${PACED} paced users beside an abuser with ${abusers} connections`)
              const startAt = Date.now() + 3000
              const agentRuns = await Promise.all([
                sleepUntil(startAt).then(() => drive(classes, PACED, seconds, i => USERS[i], PACE_MS)),
                abuserProcess({ url: server.url, address, user: ABUSER, connections: abusers, seconds, startAt }),
              ])
              const others = summary(agentRuns[0])
              const abuser = summary(agentRuns[1], s => s === 200 || s === 429)
              abuse.push([label, `${PACED} users alone`, int(alone.requests), ms(alone.p50), ms(alone.p99), alone.errors, '-'])
              abuse.push([
                label,
                `${PACED} users beside the abuser`,
                int(others.requests),
                ms(others.p50),
                ms(others.p99),
                others.errors,
                '-',
              ])
              abuse.push([
                label,
                `abuser (${abusers} connections)`,
                int(abuser.requests),
                ms(abuser.p50),
                ms(abuser.p99),
                abuser.errors,
                `${int(abuser.throttled)} (${((100 * abuser.throttled) / Math.max(1, abuser.requests)).toFixed(0)} %)`,
              ])
              notes.push(
                target(
                  others.errors === 0 && abuser.throttled > 0 && others.p99 <= alone.p99 * 2,
                  `${label}: the abuser is throttled (${int(abuser.throttled)} × 429) while the others keep their p99 within 2× (${ms(alone.p99)} → ${ms(others.p99)} ms), without errors`,
                ),
              )
            } finally {
              await server.stop()
            }
          }
      }
    } finally {
      await rm(outdir, { recursive: true, force: true })
    }
    return [
      `Closed-loop clients for ${seconds} s per point over the bundled sample (220 blocks, 3,720 logs); each client one of 16 users, limits raised; mix by weight: status 1, one block 4, address filter (whole range, csv) 3, logs export arrow 1, transactions export csv 1. Latency to the last byte; errors = anything but a complete 200; peak RSS of the serving process (workerd: every workerd process of Miniflare).`,
      '',
      ...(capacity.length
        ? [table(['server', 'clients', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'peak RSS MB'], capacity), '']
        : []),
      `Abuse, default limits (${openRate ? 'the request rate lifted, ' : `${RATE_LIMIT ?? 200} requests per 10 s and `}8 streams per user${readLimit ? `, storage read ${readLimit} bytes per 10 s` : ''}), the fair shares between users off (SCAN_CONCURRENCY=1000000) and on (SCAN_CONCURRENCY=${FAIR.SCAN_CONCURRENCY}), in turn: ${PACED} users each pacing ${1000 / PACE_MS} request/s, alone and beside one user running ${abusers} connections back to back. For the abuser, errors exclude its 429s.`,
      '',
      table(['server', 'clients', 'requests', 'p50 ms', 'p99 ms', 'errors', '429s'], abuse),
      '',
      ...notes,
    ].join('\n')
  },
}

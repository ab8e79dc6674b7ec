/**
 * `npm run bench -- load`: many clients at once, for a fixed time, against the
 * production bundle in Miniflare (workerd) and the Node server (`scripts/serve.ts` in its
 * own process), both over the bundled sample. Each client runs requests back to back,
 * mixing the query classes (status, one block, an address filter over the whole range,
 * a full export as Arrow and CSV), each client as one of 16 users. Reported per server
 * and client count: throughput, p50/p99 latency (to the last byte), errors, and the
 * server's peak RSS (sampled from /proc). The per-user limits are raised for these
 * points, so they measure capacity; then the abuse run: 16 paced clients (1 request/s, each its
 * own user), alone and beside one user hammering with 32 connections (in a process of its own,
 * bench/lib/load-clients.ts), to show the abuser throttled (429) while the others keep their p99.
 * One window decides little (a p99 over 160 requests is their second slowest, and one stall on
 * a shared machine moved it 2x), so the abuse run alternates windows alone and beside the abuser
 * LOAD_REPEATS times on the same server (alone first, then beside first, in turn) and pools each
 * side's requests: 16 users x 16 s x 4 = 1,024 requests a side, a p99 over their 11 slowest; each
 * repetition's p99 is reported too, for the spread. Over the same windows: the server's CPU time
 * (from /proc) and, on the Node server, its event-loop delay (bench/lib/loop-delay.ts, preloaded).
 *
 * The abuse run is done with the fair shares between users off (SCAN_CONCURRENCY=off; runs up to
 * S set it to 1000000, which still wraps every read) and on (SCAN_CONCURRENCY=1, the default since
 * run AC), each on a server of its own, LOAD_ROUNDS times.
 *
 * LOAD_SECONDS sets the time per capacity point (default 10); LOAD_SERVERS the servers (default
 * `workerd,node`); LOAD_CAPACITY=0 skips the capacity points; LOAD_ABUSE_SECONDS the time of one
 * abuse window (default 16) and LOAD_REPEATS the windows a side (default 4); LOAD_ROUNDS the
 * rounds of the abuse run (default 1); LOAD_ABUSER_CONNECTIONS the abuser's connections (default
 * 32), and LOAD_ABUSER_RATE=open lifts the request rate on both servers, so an abuser with 8
 * connections (its stream cap) keeps 8 requests running all the time; LOAD_RATE_LIMIT sets it
 * (requests per user per 10 s) instead; LOAD_FAIR_CONCURRENCY the SCAN_CONCURRENCY of the fair
 * variant (default 1); LOAD_READ_LIMIT the READ_LIMIT_BYTES of the abuse run's servers (default:
 * theirs, 512 MiB per 10 s); LOAD_MAX_STREAMS the MAX_STREAMS_PER_USER of the abuse rounds (a comma-separated
 * list, each value on servers of its own; default theirs, 8); LOAD_FAIR=off or on runs only that variant;
 * LOAD_CAPACITY_FAIR=off runs the capacity points with the fair shares off, both with each in turn (default on, the servers' default). The paced clients run in this process, all on the machine's cores
 * with the servers. The defaults take about 11 minutes.
 */
import { spawn, execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { Miniflare } from 'miniflare'
import { buildBundle, bundleMiniflare, type RateLimitConfig } from '../scripts/dev/bundle.ts'
import { seedBucket, type SeedableBucket } from '../scripts/dev/seed-r2.ts'
import { FAIR_SHARES_OFF } from '../src/api/limits.ts'
import { fsStore } from '../src/store/fs.ts'
import { abuserProcess, auth, drive, mix, pooled, quantile, sleepUntil, summary, type Run } from './lib/load-clients.ts'
import { int, ms, table, target } from './report.ts'
import { serveArgs } from './lib/serve-command.ts'
import type { BenchContext, Section } from './section.ts'

const USERS = Array.from({ length: 16 }, (_, i) => `load${i}`)
const ABUSER = 'abuser'
const API_USERS = [...USERS, ABUSER].map(u => `${u}:${u}`).join(',')
const CLIENTS = [1, 16, 64, 256]
/** The well-behaved users of the abuse run (each its own user), and the time between their requests. */
const PACED = 16
const PACE_MS = 1000
/** Limits high enough not to bind in the capacity points. */
const OPEN_LIMITS = { RATE_LIMIT_REQUESTS: '1000000', MAX_STREAMS_PER_USER: '100000', READ_LIMIT_BYTES: String(2 ** 50) }
/** The fair shares between users on (one slice per user per round; SCAN_CONCURRENCY unset, the default, is 1), and off. */
const FAIR = { SCAN_CONCURRENCY: process.env.LOAD_FAIR_CONCURRENCY ?? '1' }
const UNFAIR = { SCAN_CONCURRENCY: FAIR_SHARES_OFF }
const OPEN_RATELIMIT: Record<string, RateLimitConfig> = {
  USER_REQUESTS: { namespace_id: '1001', simple: { limit: 1_000_000, period: 10 } },
}
/** Streams per user in the abuse rounds (LOAD_MAX_STREAMS, a comma-separated list: each on a server of its own; default the deployment's). */
const STREAM_CAPS: (string | undefined)[] = process.env.LOAD_MAX_STREAMS?.split(',') ?? [undefined]
/** Which fair-share variants the abuse rounds run (LOAD_FAIR: off, on or both, the default). */
const FAIR_VARIANTS = process.env.LOAD_FAIR === 'off' ? [false] : process.env.LOAD_FAIR === 'on' ? [true] : [false, true]
/** Which fair-share variants the capacity points run (LOAD_CAPACITY_FAIR: on, the default, off or both), each on a server of its own. */
const CAPACITY_FAIR =
  process.env.LOAD_CAPACITY_FAIR === 'off' ? [false] : process.env.LOAD_CAPACITY_FAIR === 'both' ? [false, true] : [true]
/** Requests per user per 10 s in the abuse rounds (LOAD_RATE_LIMIT; default the deployment's 50): sized to what one server serves. */
const RATE_LIMIT = process.env.LOAD_RATE_LIMIT === undefined ? undefined : Number(process.env.LOAD_RATE_LIMIT)

interface Server {
  name: 'workerd' | 'node'
  url: string
  /** Resident set size of the serving process now, bytes. */
  rss(): number
  /** CPU time the serving processes have used so far, seconds. */
  cpu(): number
  /** The Node server's event-loop delay since the previous call (bench/lib/loop-delay.ts); workerd has none to ask. */
  loopDelay?(): Promise<LoopDelay>
  /** The Node server's access-log lines of streams it aborted, with their cause, since it started. */
  aborted?: string[]
  stop(): Promise<void>
}

interface LoopDelay {
  p50: number
  p99: number
  max: number
}

/** One window of the paced users, with what the server spent meanwhile. */
interface Window {
  run: Run
  /** Server CPU seconds over the window. */
  cpu: number
  loop?: LoopDelay
}

/** Runs `clients` and measures the server's CPU and event-loop delay over the same time. */
async function watched(server: Server, clients: () => Promise<Run>): Promise<Window> {
  await server.loopDelay?.()
  const cpu = server.cpu()
  const run = await clients()
  return { run, cpu: server.cpu() - cpu, loop: await server.loopDelay?.() }
}

/** The server's CPU over the windows, in % of one core. */
const cpuShare = (ws: Window[]): string =>
  `${((100 * ws.reduce((n, w) => n + w.cpu, 0)) / ws.reduce((n, w) => n + w.run.seconds, 0)).toFixed(0)} %`

/** The event-loop delay's p99 per window and its largest, ms ('-' without a loop to watch). */
const loopDelays = (ws: Window[]): string =>
  ws.every(w => w.loop) ? `${ws.map(w => ms(w.loop!.p99)).join(', ')} (max ${ms(Math.max(...ws.map(w => w.loop!.max)))})` : '-'

/** p50 and p99 of one query class over the windows, and how many of its requests were slower than the windows' pooled p99. */
function classFigures(ws: Window[], cls: string): string[] {
  const all = pooled(ws.map(w => w.run)).results
  const p99 = summary({ results: all, seconds: 1, peakRss: 0 }).p99
  const times = all
    .filter(r => r.cls === cls)
    .map(r => r.ms)
    .sort((a, b) => a - b)
  return [int(times.length), ms(quantile(times, 0.5)), ms(quantile(times, 0.99)), int(times.filter(t => t > p99).length)]
}

/**
 * How the paced users' slowest requests line up with the abuser's admitted data requests: the
 * share of all paced requests, and of those slower than their pooled p99, that overlapped one.
 * The abuser's window of the rate admits its allowance in a burst (up to its 8 streams at once).
 */
function overlapShares(ws: Window[], abuserRuns: Run[]): string {
  const admitted = abuserRuns.flatMap(r => r.results.filter(x => x.status === 200 && x.cls !== 'status').map(x => [x.at, x.at + x.ms]))
  const all = pooled(ws.map(w => w.run)).results
  const p99 = summary({ results: all, seconds: 1, peakRss: 0 }).p99
  const overlaps = (r: Run['results'][number]) => admitted.some(([a, b]) => a < r.at + r.ms && r.at < b)
  const share = (rs: Run['results']) => `${((100 * rs.filter(overlaps).length) / Math.max(1, rs.length)).toFixed(0)} %`
  const tail = all.filter(r => r.ms >= p99)
  return `${share(all)} of all, ${share(tail)} of the ${tail.length} at or above the p99`
}

/** User plus system CPU time of processes, seconds (from /proc; a process gone counts 0). */
function cpuOf(pids: number[]): number {
  let ticks = 0
  for (const pid of pids)
    try {
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // gone
    }
  return ticks / CLOCK_TICKS
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

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
  return { name: 'workerd', url, rss: () => pids.reduce((n, p) => n + rssOf(p), 0), cpu: () => cpuOf(pids), stop: () => mf.dispose() }
}

async function startNode(root: string, sample: string, open: boolean, vars: Record<string, string>): Promise<Server> {
  const preload = join(root, 'bench', 'lib', 'loop-delay.ts')
  const child = spawn(process.execPath, ['--import', preload, ...serveArgs(root), '--data', sample, '--port', '0'], {
    env: { ...process.env, API_USERS, ...(open ? OPEN_LIMITS : {}), ...vars },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve)
    child.once('exit', code => reject(new Error(`scripts/serve.ts exited with ${code} before listening`)))
  })
  // The access log, drained; the preload's event-loop delay lines answer loopDelay().
  const delays: ((d: LoopDelay) => void)[] = []
  const aborted: string[] = []
  lines.on('line', line => {
    if (line.startsWith('event-loop-delay ')) delays.shift()?.(JSON.parse(line.slice('event-loop-delay '.length)) as LoopDelay)
    else if (line.includes('"end":"aborted"')) aborted.push(line)
  })
  return {
    name: 'node',
    url: first.slice('listening '.length),
    rss: () => rssOf(child.pid!),
    cpu: () => cpuOf([child.pid!]),
    aborted,
    loopDelay: () =>
      new Promise<LoopDelay>(resolve => {
        delays.push(resolve)
        child.kill('SIGUSR2')
      }),
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
    const repeats = Number(process.env.LOAD_REPEATS ?? 4)
    const abuseSeconds = Number(process.env.LOAD_ABUSE_SECONDS ?? 16)
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
    const byClass: (string | number)[][] = []
    const overlaps: string[] = []
    const notes: string[] = []
    /** Each broken request (status 0) with why, and each stream the Node server logged as aborted. */
    const broken: string[] = []
    /** Each request sent again after its reused keep-alive socket was reset before any answer. */
    const retried: string[] = []
    try {
      for (const name of servers) {
        const start = (open: boolean, vars: Record<string, string> = {}) =>
          name === 'workerd'
            ? startWorkerd(ctx.root, outdir, sample, open, vars, rate)
            : startNode(ctx.root, sample, open, { ...(!open && rate !== undefined ? { RATE_LIMIT_REQUESTS: String(rate) } : {}), ...vars })
        for (const fair of capacityPoints ? CAPACITY_FAIR : []) {
          const label = CAPACITY_FAIR.length > 1 || !fair ? `${name}, fair shares ${fair ? 'on' : 'off'}` : name
          const server = await start(true, fair ? FAIR : UNFAIR)
          try {
            const classes = mix(server.url, await busyAddress(server))
            await drive(classes, 4, 2, i => USERS[i % USERS.length]) // warm
            for (const clients of CLIENTS) {
              ctx.log(`${label}: ${clients} clients for ${seconds} s`)
              const s = summary(await drive(classes, clients, seconds, i => USERS[i % USERS.length], 0, server.rss))
              capacity.push([label, clients, int(s.requests), int(s.perSecond), ms(s.p50), ms(s.p99), s.errorText, int(s.peakMb)])
              if (clients === 256) notes.push(target(s.errors === 0, `${label}: zero errors at 256 clients (${s.errorText})`))
              broken.push(...s.broken.map(b => `- ${label}, ${clients} clients: ${b}`))
              retried.push(...s.retried.map(b => `- ${label}, ${clients} clients: ${b}`))
            }
          } finally {
            await server.stop()
          }
        }
        // The fair shares off, then on, each on a server of its own; alone and beside the abuser in turn, pooled.
        for (let round = 1; round <= rounds; round++)
          for (const cap of STREAM_CAPS)
            for (const fair of FAIR_VARIANTS) {
              const server = await start(false, {
                ...(fair ? FAIR : UNFAIR),
                ...(readLimit ? { READ_LIMIT_BYTES: readLimit } : {}),
                ...(cap ? { MAX_STREAMS_PER_USER: cap } : {}),
              })
              const label = `${name}, fair shares ${fair ? 'on' : 'off'}${cap ? `, ${cap} streams` : ''}${rounds > 1 ? ` (round ${round})` : ''}`
              try {
                const address = await busyAddress(server)
                const classes = mix(server.url, address)
                await drive(classes, 4, 2, i => USERS[i % USERS.length], PACE_MS)
                const paced = () => drive(classes, PACED, abuseSeconds, i => USERS[i], PACE_MS)
                const sides = { alone: [] as Window[], beside: [] as Window[] }
                const abuserRuns: Run[] = []
                for (let rep = 1; rep <= repeats; rep++)
                  // Alone then beside in odd repetitions, beside then alone in even ones, so neither always follows the other.
                  for (const side of rep % 2 ? (['alone', 'beside'] as const) : (['beside', 'alone'] as const)) {
                    ctx.log(
                      `${label}: repetition ${rep}/${repeats}, ${PACED} paced users ${side === 'alone' ? 'alone' : `beside an abuser with ${abusers} connections`}`,
                    )
                    if (side === 'alone') sides.alone.push(await watched(server, paced))
                    else {
                      const startAt = Date.now() + 2000
                      const [window, abuser] = await Promise.all([
                        sleepUntil(startAt).then(() => watched(server, paced)),
                        abuserProcess({ url: server.url, address, user: ABUSER, connections: abusers, seconds: abuseSeconds, startAt }),
                      ])
                      sides.beside.push(window)
                      abuserRuns.push(abuser)
                    }
                  }
                const alone = summary(pooled(sides.alone.map(w => w.run)))
                const others = summary(pooled(sides.beside.map(w => w.run)))
                const abuser = summary(pooled(abuserRuns), s => s === 200 || s === 429)
                const p99s = (ws: Window[]) => ws.map(w => ms(summary(w.run).p99)).join(', ')
                const ratios = sides.alone.map((w, i) => summary(sides.beside[i].run).p99 / summary(w.run).p99)
                const within = ratios.filter(r => r <= 2).length
                const row = (who: string, s: ReturnType<typeof summary>, ws: Window[]) => [
                  label,
                  who,
                  int(s.requests),
                  ms(s.p50),
                  ms(s.p99),
                  p99s(ws),
                  s.errorText,
                  cpuShare(ws),
                  loopDelays(ws),
                ]
                abuse.push(row(`${PACED} users alone`, alone, sides.alone))
                abuse.push(row(`${PACED} users beside the abuser`, others, sides.beside))
                abuse.push([
                  label,
                  `abuser (${abusers} connections): ${int(abuser.throttled)} × 429 (${((100 * abuser.throttled) / Math.max(1, abuser.requests)).toFixed(0)} %)`,
                  int(abuser.requests),
                  ms(abuser.p50),
                  ms(abuser.p99),
                  abuserRuns.map(r => ms(summary(r).p99)).join(', '),
                  abuser.errorText,
                  '-',
                  '-',
                ])
                for (const [who, run] of [
                  ['alone', alone],
                  ['beside', others],
                  ['abuser', abuser],
                ] as const) {
                  broken.push(...run.broken.map(b => `- ${label}, ${who}: ${b}`))
                  retried.push(...run.retried.map(b => `- ${label}, ${who}: ${b}`))
                }
                broken.push(...(server.aborted ?? []).map(line => `- ${label}, the server's access log: ${line}`))
                for (const c of classes)
                  byClass.push([label, c.name, ...classFigures(sides.alone, c.name), ...classFigures(sides.beside, c.name)])
                overlaps.push(
                  `- ${label}: paced requests beside the abuser that overlapped one of its admitted data requests (${int(abuserRuns.reduce((n, r) => n + r.results.filter(x => x.status === 200 && x.cls !== 'status').length, 0))}): ${overlapShares(sides.beside, abuserRuns)}`,
                )
                notes.push(
                  target(
                    others.errors === 0 && abuser.throttled > 0 && others.p99 <= alone.p99 * 2,
                    `${label}: the abuser is throttled (${int(abuser.throttled)} × 429) while the others keep their p99 within 2× over ${int(alone.requests)} and ${int(others.requests)} requests (${ms(alone.p99)} → ${ms(others.p99)} ms, ${(others.p99 / alone.p99).toFixed(2)}×; per repetition ${ratios.map(r => r.toFixed(2)).join(', ')}×, ${within} of ${ratios.length} within 2×), without errors (${others.errorText})`,
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
      `Abuse (${openRate ? 'the request rate lifted, ' : `${RATE_LIMIT ?? 50} requests per 10 s and `}${STREAM_CAPS.map(c => c ?? '8').join(' or ')} streams per user${readLimit ? `, storage read ${readLimit} bytes per 10 s` : ''}), the fair shares between users off (SCAN_CONCURRENCY=off) and on (SCAN_CONCURRENCY=${FAIR.SCAN_CONCURRENCY}; 1 is the default), each on a server of its own: ${PACED} users each pacing ${1000 / PACE_MS} request/s, alone and beside one user running ${abusers} connections back to back, for ${abuseSeconds} s at a time, ${repeats} times each, alternating (alone first in odd repetitions, beside first in even ones). Requests, p50 and p99 over the repetitions pooled; then the p99 of each repetition; errors (for the abuser: excluding its 429s); the server's CPU over the windows (% of one core; workerd: every workerd process of Miniflare); the Node server's event-loop delay p99 per repetition (ms) and its largest.`,
      '',
      table(
        [
          'server',
          'clients',
          'requests',
          'p50 ms',
          'p99 ms',
          'p99 per repetition',
          'errors',
          'server CPU',
          'event-loop delay p99 (max) ms',
        ],
        abuse,
      ),
      '',
      `By query class: requests, p50 and p99 (ms), and how many were slower than the side's pooled p99 (the tail).`,
      '',
      table(['server', 'class', 'alone: requests', 'p50', 'p99', 'in tail', 'beside: requests', 'p50', 'p99', 'in tail'], byClass),
      '',
      ...overlaps,
      '',
      ...(broken.length ? ['Broken requests (status 0) and aborted streams:', '', ...broken, ''] : []),
      ...(retried.length
        ? [
            'Requests sent again once, their reused keep-alive socket reset before any answer (the server had closed it idle):',
            '',
            ...retried,
            '',
          ]
        : []),
      ...notes,
    ].join('\n')
  },
}

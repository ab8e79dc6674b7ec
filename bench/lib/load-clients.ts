/**
 * The clients of `npm run bench -- load`: closed-loop HTTP clients mixing the query classes,
 * and their summary. Also the entry point of the abuser's own process (`abuserProcess`), so
 * the abusive user competes with the others for the server, not for the benchmark's event loop.
 */
import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'

export interface Result {
  status: number
  ms: number
  /** The query class asked (`Classes`' name). */
  cls: string
  /** When it was sent, epoch ms (comparable between the benchmark's processes). */
  at: number
  /** Why a status-0 request broke: the socket error, or `body cut` after the given status. */
  broke?: string
  /** Sent again once: a reused keep-alive socket was reset before any answer (the server closed it idle as it was reused). */
  retried?: string
}

export interface Run {
  results: Result[]
  seconds: number
  peakRss: number
}

export type Classes = { name: string; weight: number; path: () => string }[]

export const auth = (user: string) => 'Basic ' + Buffer.from(`${user}:${user}`).toString('base64')

/**
 * One GET, the body drained; a broken stream counts as status 0. A request on a reused
 * keep-alive socket that is reset before any answer is sent again once, as HTTP clients do
 * (Node's docs, `request.reusedSocket`): the server closed the socket idle as the client took
 * it, and the request never reached the app. It is reported as retried, its time counted whole.
 */
function get(agent: Agent, [cls, url]: [string, string], user: string): Promise<Result> {
  return new Promise(resolve => {
    const start = performance.now()
    let settled = false
    let retried: string | undefined
    const done = (status: number, broke?: string) => {
      if (settled) return
      settled = true
      resolve({
        status,
        ms: performance.now() - start,
        cls,
        at: performance.timeOrigin + start,
        ...(broke ? { broke } : {}),
        ...(retried ? { retried } : {}),
      })
    }
    const failed = (e: NodeJS.ErrnoException, phase: string) => done(0, `${phase}: ${e.code ?? e.message}`)
    const send = () => {
      let answered = false
      const req = request(url, { agent, headers: { authorization: auth(user) } }, res => {
        answered = true
        res.on('data', () => {})
        res.on('end', () => (res.complete ? done(res.statusCode ?? 0) : done(0, `body cut after ${res.statusCode}`)))
        res.on('error', e => failed(e, `body after ${res.statusCode}`))
      })
      req
        .on('error', (e: NodeJS.ErrnoException) => {
          if (!answered && !retried && req.reusedSocket && e.code === 'ECONNRESET') {
            retried = `reused socket reset (${e.code})`
            send()
          } else failed(e, 'request')
        })
        .end()
    }
    send()
  })
}

/** The query classes, weighted: a request picks one at random. */
export function mix(base: string, address: string): Classes {
  const block = () => Math.floor(Math.random() * 220)
  return [
    { name: 'status', weight: 1, path: () => `${base}/v1/api/status` },
    {
      name: 'one block',
      weight: 4,
      path: () => {
        const b = block()
        return `${base}/v1/api/logs?chains=DEVNET&from_block=${b}&to_block=${b}`
      },
    },
    { name: 'address filter', weight: 3, path: () => `${base}/v1/api/logs?chains=DEVNET&from_block=0&address=${address}&format=csv` },
    { name: 'export arrow', weight: 1, path: () => `${base}/v1/api/logs?chains=DEVNET&from_block=0&format=arrow` },
    { name: 'export csv', weight: 1, path: () => `${base}/v1/api/transactions?chains=DEVNET&from_block=0&format=csv` },
  ]
}

/** A class picked at random by weight: its name and a URL. */
function pickPath(classes: Classes): [string, string] {
  const total = classes.reduce((n, c) => n + c.weight, 0)
  let x = Math.random() * total
  for (const c of classes) if ((x -= c.weight) < 0) return [c.name, c.path()]
  return [classes[0].name, classes[0].path()]
}

/**
 * `clients` loops for `seconds`, each as `userOf(i)`; `paceMs` spaces a client's requests
 * (0: back to back). `rss` is sampled every 100 ms.
 */
export async function drive(
  classes: Classes,
  clients: number,
  seconds: number,
  userOf: (i: number) => string,
  paceMs = 0,
  rss: () => number = () => 0,
): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
  const results: Result[] = []
  let peakRss = rss()
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rss())), 100)
  const end = performance.now() + seconds * 1000
  const started = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < end) {
        const t = performance.now()
        results.push(await get(agent, pickPath(classes), userOf(i)))
        const wait = paceMs - (performance.now() - t)
        if (wait > 0) await new Promise(r => setTimeout(r, wait))
      }
    }),
  )
  clearInterval(sampler)
  agent.destroy()
  return { results, seconds: (performance.now() - started) / 1000, peakRss: Math.max(peakRss, rss()) }
}

export const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN

function errorText(statuses: number[]): string {
  const counts = new Map<number, number>()
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1)
  const by = [...counts].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${s} × ${n}`)
  return statuses.length ? `${statuses.length} (${by.join(', ')})` : '0'
}

export const summary = (run: Run, ok: (status: number) => boolean = s => s === 200) => {
  const times = run.results.map(r => r.ms).sort((a, b) => a - b)
  return {
    requests: run.results.length,
    perSecond: run.results.length / run.seconds,
    p50: quantile(times, 0.5),
    p99: quantile(times, 0.99),
    errors: run.results.filter(r => !ok(r.status)).length,
    /** The errors by status (0: a broken stream or connection), e.g. `3 (503 × 2, 0 × 1)`. */
    errorText: errorText(run.results.filter(r => !ok(r.status)).map(r => r.status)),
    /** Why status-0 requests broke, with their class, e.g. `export arrow: body after 200: ECONNRESET`. */
    broken: run.results.filter(r => r.broke).map(r => `${r.cls}: ${r.broke}`),
    /** Requests sent again after a reused keep-alive socket's reset, with their class. */
    retried: run.results.filter(r => r.retried).map(r => `${r.cls}: ${r.retried}${r.broke ? `, then ${r.broke}` : ''}`),
    throttled: run.results.filter(r => r.status === 429).length,
    peakMb: run.peakRss / 2 ** 20,
  }
}

/** Runs of the same clients taken together, so a quantile is over all their requests. */
export const pooled = (runs: Run[]): Run => ({
  results: runs.flatMap(r => r.results),
  seconds: runs.reduce((n, r) => n + r.seconds, 0),
  peakRss: Math.max(0, ...runs.map(r => r.peakRss)),
})

interface AbuserArgs {
  url: string
  address: string
  user: string
  connections: number
  seconds: number
  /** Epoch ms to start at, so the abuser's window and the others' coincide whatever the process start-up takes. */
  startAt: number
}

export const sleepUntil = (epochMs: number) => new Promise(r => setTimeout(r, Math.max(0, epochMs - Date.now())))

/** Runs `drive` for the abuser in a child process of its own and returns its run. */
export function abuserProcess(args: AbuserArgs): Promise<Run> {
  const child = spawn(process.execPath, [import.meta.filename, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const chunks: Buffer[] = []
  child.stdout!.on('data', c => chunks.push(c))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', code =>
      code === 0
        ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Run)
        : reject(new Error(`the abuser process exited with ${code}`)),
    )
  })
}

if (process.argv[1] === import.meta.filename) {
  const a = JSON.parse(process.argv[2]) as AbuserArgs
  await sleepUntil(a.startAt)
  const run = await drive(mix(a.url, a.address), a.connections, a.seconds, () => a.user)
  process.stdout.write(JSON.stringify(run))
}

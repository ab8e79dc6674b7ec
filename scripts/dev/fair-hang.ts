/**
 * Reproduces requests workerd cancels as hung with the fair shares on: the production bundle
 * in Miniflare with SCAN_CONCURRENCY=1 and the limits lifted, many clients mixing the load
 * bench's query classes over the bundled sample for a while, each answer but a complete 200
 * printed with its class and body, and what workerd logs besides the access log.
 *
 *   npx node scripts/dev/fair-hang.ts [clients=64] [seconds=20] [SCAN_CONCURRENCY=1]
 *
 * Run it under the benchmarks' lock (`flock /tmp/bench.lock …`): it loads the machine.
 */
import { readdir, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { Miniflare, convertV4MiniflareOptions } from 'miniflare'
import { buildBundle, durableObjectsOf, varsOf } from './bundle.ts'
import { seedBucket, type SeedableBucket } from './seed-r2.ts'
import { fsStore } from '../../src/store/fs.ts'
import { auth, mix } from '../../bench/lib/load-clients.ts'

const [clients = 64, seconds = 20] = process.argv.slice(2, 4).map(Number)
const concurrency = process.argv[4] ?? '1'
const root = join(import.meta.dirname, '..', '..')
const USERS = Array.from({ length: 16 }, (_, i) => `load${i}`)

const { outdir } = await buildBundle(root)
const toml = await readFile(join(root, 'wrangler.toml'), 'utf8')
const logs: string[] = []
const mf = new Miniflare(
  convertV4MiniflareOptions({
    modules: [
      { type: 'ESModule', path: join(outdir, 'index.js') },
      ...(await readdir(outdir)).filter(f => f.endsWith('.wasm')).map(f => ({ type: 'CompiledWasm' as const, path: join(outdir, f) })),
    ],
    modulesRoot: outdir,
    compatibilityDate: /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)![1],
    compatibilityFlags: JSON.parse(/^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(toml)![1]) as string[],
    r2Buckets: ['LAKE'],
    durableObjects: durableObjectsOf(toml),
    ratelimits: { USER_REQUESTS: { namespace_id: '1001', simple: { limit: 1_000_000, period: 10 } } },
    bindings: {
      ...varsOf(toml),
      API_USERS: USERS.map(u => `${u}:${u}`).join(','),
      MAX_STREAMS_PER_USER: '100000',
      READ_LIMIT_BYTES: String(2 ** 50),
      SCAN_CONCURRENCY: concurrency,
    },
    handleStructuredLogs: ({ level, message }: { level: string; message: string }) => {
      if (!message.startsWith('{"')) logs.push(`${((performance.now() - t0) / 1000).toFixed(2)} s ${level}: ${message}`)
    },
  }),
)
let t0 = performance.now()
await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, fsStore(join(root, 'partitions-manifest', 'sample')))
const base = (await mf.ready).toString().replace(/\/$/, '')
// Any address serves the filter class: the scan over the whole range is the work.
const classes = mix(base, '0x5fbdb2315678afecb367f032d93f642f64180aa3')
const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
const counts = new Map<string, number>()
const failures: string[] = []

function once(cls: string, url: string, user: string): Promise<void> {
  return new Promise(resolve => {
    const at = ((performance.now() - t0) / 1000).toFixed(2)
    request(url, { agent, headers: { authorization: auth(user) } }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => {
        counts.set(String(res.statusCode), (counts.get(String(res.statusCode)) ?? 0) + 1)
        if (res.statusCode !== 200)
          failures.push(`${at} s ${cls} ${user}: ${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 300)}`)
        resolve()
      })
      res.on('error', () => (failures.push(`${at} s ${cls} ${user}: broken body`), resolve()))
    })
      .on('error', err => (failures.push(`${at} s ${cls} ${user}: ${err.message}`), resolve()))
      .end()
  })
}

t0 = performance.now()
const end = performance.now() + seconds * 1000
await Promise.all(
  Array.from({ length: clients }, async (_, i) => {
    while (performance.now() < end) {
      const total = classes.reduce((n, c) => n + c.weight, 0)
      let x = Math.random() * total
      const c = classes.find(c => (x -= c.weight) < 0) ?? classes[0]
      await once(c.name, c.path(), USERS[i % USERS.length])
    }
  }),
)
agent.destroy()
console.log(`clients ${clients}, ${seconds} s, SCAN_CONCURRENCY ${concurrency}: statuses ${JSON.stringify(Object.fromEntries(counts))}`)
for (const f of failures) console.log(`  ${f}`)
console.log(`workerd logs besides the access log (${logs.length}):`)
for (const l of logs.slice(0, 60)) console.log(`  ${l}`)
await mf.dispose()
await rm(outdir, { recursive: true, force: true })

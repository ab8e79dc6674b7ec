/**
 * `npm run bench -- bundle`: the production Worker bundle (`wrangler deploy --dry-run`, the
 * Move follower included): its size raw and gzipped, and its startup in workerd, estimated as
 * the time Miniflare takes to be ready with the bundle minus the time it takes with a few-line
 * Worker under the same bindings (both start a workerd process with wrangler.toml's R2 bucket,
 * Durable Object and rate limits; the difference is compiling the bundle and running its global
 * scope). Runs alternate, medians are reported.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import type { Miniflare } from 'miniflare'
import { buildBundle, bundleMiniflare } from '../scripts/dev/bundle.ts'
import { bytes, median, ms, table, target } from './report.ts'
import type { Section } from './section.ts'

const RUNS = 9
/** Cloudflare's limits: 3 MB compressed on the Free plan (10 MB paid), 1 s of startup. */
const FREE_PLAN_GZIP = 3_000_000
const STARTUP_LIMIT_MS = 1_000

/** A Worker with the bundle's exports and nothing else. */
const EMPTY_WORKER = `export default { fetch() { return new Response(null) } }
export class LiveChainObject { fetch() { return new Response(null) } }
`

async function readyMs(start: () => Miniflare | Promise<Miniflare>): Promise<number> {
  const t = performance.now()
  const mf = await start()
  await mf.ready
  const elapsed = performance.now() - t
  await mf.dispose()
  return elapsed
}

export const bundle: Section = {
  name: 'bundle',
  title: 'Worker bundle: size raw and gzipped, startup in workerd',
  slow: false,
  async run(ctx) {
    ctx.log('building the bundle')
    const built = await buildBundle(ctx.root)
    const emptyDir = await mkdtemp(join(tmpdir(), 'worker-empty-'))
    await writeFile(join(emptyDir, 'index.js'), EMPTY_WORKER)
    const start = (outdir: string) => () => bundleMiniflare(ctx.root, outdir, { API_USERS: 'bench:bench' }, { quiet: true })
    try {
      const script = await readFile(built.script)
      const gzip = gzipSync(script).length
      const withBundle: number[] = []
      const empty: number[] = []
      for (let i = 0; i < RUNS; i++) {
        ctx.log(`startup run ${i + 1}/${RUNS}`)
        empty.push(await readyMs(start(emptyDir)))
        withBundle.push(await readyMs(start(built.outdir)))
      }
      const startup = median(withBundle) - median(empty)
      return [
        table(
          ['raw', 'gzipped', 'workerd ready, bundle (median ms)', 'workerd ready, few-line Worker (median ms)', 'startup estimate (ms)'],
          [[bytes(script.length), bytes(gzip), ms(median(withBundle)), ms(median(empty)), ms(startup)]],
        ),
        '',
        target(gzip < FREE_PLAN_GZIP, `gzipped under Cloudflare's Free plan limit (${bytes(FREE_PLAN_GZIP)})`),
        target(startup < STARTUP_LIMIT_MS, `startup estimate under Cloudflare's startup limit (${STARTUP_LIMIT_MS} ms)`),
      ].join('\n')
    } finally {
      await rm(built.outdir, { recursive: true, force: true })
      await rm(emptyDir, { recursive: true, force: true })
    }
  },
}

/**
 * `npm run bench [-- <section> …]`
 *
 * Measures the service and prints the figures as Markdown (what BENCHMARKS.md holds),
 * headed by the machine, the date and the commit. Sections: ingest, query, replay, formats,
 * history, integrity, manifest, layout, move, live, load, dex, bundle; `all` runs every one. Without arguments every
 * section runs except the slow ones (layout: it writes five 1M-log lakes the first
 * time; load: minutes of clients at full speed). Data is built under .data/bench (git-ignored) and reused while the code
 * that writes it is unchanged; progress goes to stderr, figures to stdout.
 */
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { bundle } from './bundle.ts'
import { dex } from './dex.ts'
import { formats } from './formats.ts'
import { ingest } from './ingest.ts'
import { history } from './history.ts'
import { integrity } from './integrity.ts'
import { layout } from './layout.ts'
import { live } from './live.ts'
import { load } from './load.ts'
import { manifest } from './manifest.ts'
import { move } from './move.ts'
import { query } from './query.ts'
import { replay } from './replay.ts'
import { machine } from './report.ts'
import type { BenchContext, Section } from './section.ts'

const SECTIONS: Section[] = [ingest, query, replay, history, formats, integrity, manifest, layout, move, live, load, dex, bundle]

// Local runs never reach Cloudflare's servers (Miniflare's Request.cf and metrics).
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'
process.env.WRANGLER_SEND_METRICS ??= 'false'

const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  console.log(`usage: npm run bench [-- <section> …]\n\nsections (* = only when named or with "all"):`)
  for (const s of SECTIONS) console.log(`  ${s.name.padEnd(9)}${s.slow ? '*' : ' '} ${s.title}`)
  process.exit(0)
}
const unknown = args.filter(a => a !== 'all' && !SECTIONS.some(s => s.name === a))
if (unknown.length) {
  console.error(`unknown section ${unknown.join(', ')}; sections: ${SECTIONS.map(s => s.name).join(', ')}, all`)
  process.exit(2)
}
const chosen =
  args.length === 0 ? SECTIONS.filter(s => !s.slow) : args.includes('all') ? SECTIONS : SECTIONS.filter(s => args.includes(s.name))

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')
const cache = `${root}/.data/bench`
await mkdir(cache, { recursive: true })
const started = performance.now()
const log = (name: string) => (line: string) =>
  console.error(`[bench ${name} +${((performance.now() - started) / 1000).toFixed(0)}s] ${line}`)

console.log(`# npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}\n\n${machine(root)}\n`)
let failed = 0
for (const section of chosen) {
  const ctx: BenchContext = { root, cache, log: log(section.name) }
  const t = performance.now()
  console.log(`## ${section.name}: ${section.title}\n\n\`npm run bench -- ${section.name}\`\n`)
  try {
    console.log(await section.run(ctx))
  } catch (err) {
    failed++
    console.log(`FAILED: ${(err as Error).stack ?? err}`)
  }
  console.log(`\n(${section.name}: ${((performance.now() - t) / 1000).toFixed(0)} s)\n`)
}
process.exit(failed ? 1 : 0)

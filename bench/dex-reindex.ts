/**
 * What `taker`'s own inline-row caps cost to build (run 6 in BENCHMARKS.md):
 * `npx node bench/dex-reindex.ts <lake dir> [reps]` reindexes dex/swaps of a lake the dex bench
 * kept (`DEX_BENCH_LAKE=<dir> npm run bench -- dex`; work on a copy: the index is replaced) into
 * one segment, alternately with the declaration as it is and with `taker` at the index's default
 * caps, and prints per run: wall ms and, per indexed column, postings and inline-row bytes.
 */
import { dexSwaps } from '../src/datasets/dex.ts'
import { reindex } from '../src/ingest/reindex.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import type { DatasetDecl } from '../src/schema/dataset.ts'
import { fsStore } from '../src/store/fs.ts'

const [dir, reps = '2'] = process.argv.slice(2)
if (!dir) throw new Error('usage: npx node bench/dex-reindex.ts <lake dir> [reps]')
const store = fsStore(dir)
const chain = { family: 'evm' as const, id: 31337, code: 'DEVNET' }
const defaults: DatasetDecl = { ...dexSwaps, fields: dexSwaps.fields.map(f => (f.name === 'taker' ? { ...f, index: true } : f)) }
for (let i = 0; i < Number(reps); i++) {
  for (const [name, dataset] of [
    ['declared', dexSwaps],
    ['taker at the defaults', defaults],
  ] as const) {
    const t = performance.now()
    await reindex({ store, chain, datasets: [dataset] })
    const ms = Math.round(performance.now() - t)
    const root = await new ManifestReader(store).root(chain)
    const d = root!.datasets[dexSwaps.storage]
    const columns = Object.fromEntries(
      Object.keys(d.index!.segments[0].columns).map(c => [
        c,
        d.index!.segments.reduce((n, s) => [n[0] + s.columns[c].bytes, n[1] + (s.columns[c].rows?.bytes ?? 0)], [0, 0]),
      ]),
    )
    console.log(JSON.stringify({ variant: name, ms, swaps: d.rows, segments: d.index!.segments.length, columns }))
  }
}

/**
 * `npm run bench -- formats`: encoder throughput alone (no storage, no HTTP): ≥200k
 * logs as the engine hands them out (read once from the bench lake and kept in
 * memory), encoded by `encodeRows` in every format; rows/s and MB/s of output.
 */
import { CHAINS } from '../src/chains/registry.ts'
import { logs } from '../src/datasets/evm.ts'
import { encodeRows, FORMATS } from '../src/format/encode.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import { benchLake } from './lib/lake.ts'
import { runQuery } from '../src/query/engine.ts'
import { fsStore } from '../src/store/fs.ts'
import { lakeDir } from './cache.ts'
import { int, median, ms, table } from './report.ts'
import type { Section } from './section.ts'
import type { RowBatch } from '../src/columns/batch.ts'

const LAKE_LOGS = 1_000_000
const ROWS = 200_000
const RUNS = 5

async function* replay(batches: readonly RowBatch[]): AsyncGenerator<RowBatch> {
  yield* batches
}

export const formats: Section = {
  name: 'formats',
  title: `encoder throughput (arrow, csv, json_stream, json) on ≥${int(ROWS)} logs in memory`,
  slow: false,
  async run(ctx) {
    const dir = lakeDir(ctx.root, ctx.cache, LAKE_LOGS)
    const lake = await benchLake({ dir, logs: LAKE_LOGS })
    const store = fsStore(dir)
    const fields = logs.fields.filter(f => !f.extra)
    const chain = CHAINS.find(c => c.code === 'ETH')!
    const blocks = Math.ceil((ROWS / lake.rows) * (lake.to - lake.from + 1) * 1.1)
    const result = await runQuery(
      { store, manifest: new ManifestReader(store) },
      { chain, dataset: logs, from: lake.from, to: lake.from + blocks, predicates: [], fields },
    )
    const batches: RowBatch[] = []
    let rows = 0
    for await (const b of result.batches) {
      batches.push(b)
      rows += b.length
    }
    if (rows < ROWS) throw new Error(`only ${rows} rows in the first ${blocks} blocks of the lake`)
    ctx.log(`${int(rows)} rows in ${batches.length} batches held in memory`)
    const figures = []
    for (const format of FORMATS) {
      const once = async () => {
        const t = performance.now()
        const reader = encodeRows(format, fields, replay(batches)).getReader()
        let out = 0
        for (let r = await reader.read(); !r.done; r = await reader.read()) out += r.value.length
        return { ms: performance.now() - t, bytes: out }
      }
      await once()
      const runs = []
      for (let i = 0; i < RUNS; i++) runs.push(await once())
      const t = median(runs.map(r => r.ms))
      figures.push([
        format,
        int(rows),
        ms(t),
        int(rows / (t / 1000)),
        (runs[0].bytes / 1e6 / (t / 1000)).toFixed(1),
        (runs[0].bytes / rows).toFixed(1),
      ])
    }
    return [
      `${int(rows)} logs (blocks ${lake.from}-${lake.from + blocks} of the query lake, every default field), median of ${RUNS} runs`,
      '',
      table(['format', 'rows', 'ms', 'rows/s', 'MB/s', 'bytes/row'], figures),
    ].join('\n')
  },
}

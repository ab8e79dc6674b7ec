/**
 * `npm run bench -- integrity`: what verifying checksums costs a full export. The 1M-log
 * query lake is exported through the engine (every default field, the Node server's wasm
 * snappy), which verifies the CRC-32 of every page it decodes and of every tail range it
 * reads; then the same page bytes are checksummed alone, with the runtime's native CRC-32
 * (Node's and workerd's `zlib.crc32`) and with the JavaScript fallback. The share of the
 * export spent verifying is that time over the export's time without it, in CPU time of
 * this process (what a loaded machine perturbs least) and in wall time.
 */
import { readFile } from 'node:fs/promises'
import { parquetMetadata } from 'hyparquet'
import { parquetHeader } from 'hyparquet/src/column.js'
import { CHAINS } from '../src/chains/registry.ts'
import { logs } from '../src/datasets/evm.ts'
import { columnOf } from '../src/schema/dataset.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import { snappyModuleFromFile, wasmSnappy } from '../src/parquet/snappy.ts'
import { runQuery } from '../src/query/engine.ts'
import { crc32, crc32Js } from '../src/store/crc32.ts'
import { fsStore } from '../src/store/fs.ts'
import { lakeDir } from './cache.ts'
import { benchLake } from './lib/lake.ts'
import { int, median, ms, table } from './report.ts'
import type { Section } from './section.ts'

const LAKE_LOGS = 1_000_000
const RUNS = 5

export const integrity: Section = {
  name: 'integrity',
  title: `the cost of checksum verification on a full export of ${int(LAKE_LOGS)} logs`,
  slow: false,
  async run(ctx) {
    const dir = lakeDir(ctx.root, ctx.cache, LAKE_LOGS)
    const lake = await benchLake({ dir, logs: LAKE_LOGS })
    const store = fsStore(dir)
    const fields = logs.fields.filter(f => !f.extra)
    const chain = CHAINS.find(c => c.code === 'ETH')!
    const scan = { compressors: { SNAPPY: wasmSnappy(await snappyModuleFromFile()) } }
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const u = process.cpuUsage(since)
      return (u.user + u.system) / 1000
    }
    const exportOnce = async () => {
      const t = performance.now()
      const cpu = process.cpuUsage()
      const result = await runQuery(
        { store, manifest: new ManifestReader(store), scan },
        { chain, dataset: logs, from: lake.from, to: lake.to, predicates: [], fields },
      )
      let rows = 0
      for await (const b of result.batches) rows += b.length
      return { ms: performance.now() - t, cpu: cpuMs(cpu), rows }
    }
    // The page bodies that export verifies: every page of the exported columns.
    const columns = new Set(fields.filter(f => !f.virtual).map(f => columnOf(f)))
    const bodies: Uint8Array[] = []
    for (const file of lake.files) {
      const bytes = new Uint8Array(await readFile(file))
      const view = new DataView(bytes.buffer)
      for (const rg of parquetMetadata(bytes.buffer).row_groups) {
        for (const chunk of rg.columns) {
          const m = chunk.meta_data!
          if (!columns.has(m.path_in_schema[0])) continue
          const reader = { view, offset: Number(m.dictionary_page_offset ?? m.data_page_offset) }
          const end = reader.offset + Number(m.total_compressed_size)
          while (reader.offset < end) {
            const header = parquetHeader(reader)
            if (header.crc === undefined) throw new Error(`${file}: a page without a checksum (a lake written before them)`)
            bodies.push(bytes.subarray(reader.offset, reader.offset + header.compressed_page_size))
            reader.offset += header.compressed_page_size
          }
        }
      }
    }
    const pageBytes = bodies.reduce((n, b) => n + b.length, 0)
    const checksumOnce = (crc: (b: Uint8Array) => number) => {
      const t = performance.now()
      const cpu = process.cpuUsage()
      let x = 0
      for (const b of bodies) x ^= crc(b)
      if (x === 0.5) throw new Error('unreachable')
      return { ms: performance.now() - t, cpu: cpuMs(cpu) }
    }
    await exportOnce()
    const exports = []
    const native = []
    const js = []
    for (let i = 0; i < RUNS; i++) {
      exports.push(await exportOnce())
      native.push(checksumOnce(crc32))
      js.push(checksumOnce(crc32Js))
    }
    const t = median(exports.map(e => e.ms))
    const tCpu = median(exports.map(e => e.cpu))
    const rows = exports[0].rows
    ctx.log(`export ${ms(t)} ms (CPU ${ms(tCpu)} ms), ${int(rows)} rows, ${int(bodies.length)} pages of ${int(pageBytes)} bytes`)
    const share = (c: number, of: number) => `${((100 * c) / (of - c)).toFixed(1)} %`
    const row = (what: string, runs: { ms: number; cpu: number }[]) => {
      const [c, cCpu] = [median(runs.map(r => r.ms)), median(runs.map(r => r.cpu))]
      return [what, int(bodies.length), (pageBytes / 1e6).toFixed(1), ms(cCpu), share(cCpu, tCpu), ms(c), share(c, t)]
    }
    const cpuShare = median(native.map(r => r.cpu)) / (tCpu - median(native.map(r => r.cpu)))
    return [
      `Full export of the query lake (${int(rows)} logs, every default field) through the engine: median ${ms(t)} ms ` +
        `(${int(rows / (t / 1000))} rows/s), ${ms(tCpu)} ms of CPU, median of ${RUNS} runs. Verifying is CRC-32 over every page body decoded ` +
        `(the tail ranges are a few KB per partition); its time alone, against the export's time without it:`,
      '',
      table(
        ['CRC-32', 'pages', 'MB', 'CPU ms', 'share of export CPU', 'wall ms', 'share of export wall'],
        [row('native zlib.crc32 (Node, workerd)', native), row('JavaScript fallback (slicing by 16)', js)],
      ),
      '',
      `Target ≤ 5 % of export throughput, on CPU time: ${cpuShare <= 0.05 ? 'met' : 'missed'} (${(100 * cpuShare).toFixed(1)} %).`,
    ].join('\n')
  },
}

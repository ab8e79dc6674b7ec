/**
 * One index build with inline rows, in a fresh process, for comparing slice codecs (run H5 in
 * BENCHMARKS.md): `npx node bench/inline-rows-build.ts <src dir> <partitions> <blocks each> [real]`
 * builds one segment of the logs dataset over partitions of the bench lake's row shape
 * (bench/lib/lake.ts: ~400 logs a block, hot and warm contracts, 20,000 wallets as topics,
 * `data` of 0–2 ABI words), or with `real` over the recorded mainnet logs of
 * ../shared/data/evm-mainnet/logs (one partition a block), with the build code of `<src dir>`
 * (`src`, or an older tree: `git archive <commit> src | tar -x -C <dir>`). Prints one JSON line:
 * build ms and s per million logs, inline rows and bucket bytes, peak RSS. `NOROWS=1`: postings only;
 * `SLICE_BYTES=n`: most bytes a slice (the spec's `maxBytes`; `Infinity`: no byte cap).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { mulberry32 } from '../scripts/dev/random.ts'
import type { ColumnBatch } from '../src/columns/batch.ts'
import { logs } from '../src/datasets/evm.ts'
import type { PartitionInput } from '../src/index/build.ts'
import type { PartitionEntry } from '../src/manifest/types.ts'
import { columnOf } from '../src/schema/dataset.ts'
import type { StoredValue } from '../src/schema/kinds.ts'
import { TRANSFER } from './lib/lake.ts'

const INDEXED = ['address', 'topic0', 'topic1', 'topic2', 'topic3']

function randomBytes(r: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i++) out[i] = (r() * 256) | 0
  return out
}

const emptyColumns = () => Object.fromEntries(logs.fields.filter(f => !f.virtual).map(f => [columnOf(f), [] as (StoredValue | null)[]]))

/** An index input of `batch` over blocks [from, to] in row groups of `group` rows (the entry holds what a build reads). */
function input(batch: ColumnBatch, from: number, to: number, group: number): PartitionInput {
  const groups: { from: number; to: number; rows: number; offset: number; length: number }[] = []
  for (let s = 0; s < batch.length; s += group) groups.push({ from, to, rows: Math.min(group, batch.length - s), offset: 0, length: 0 })
  const entry: PartitionEntry = {
    key: `evm-1/logs/${from}.parquet`,
    from,
    to,
    rows: batch.length,
    bytes: 1,
    tailOffset: 0,
    rowGroups: groups,
  }
  let start = 0
  const rowGroups = groups.map(g => {
    const [a, b] = [start, (start += g.rows)]
    return Object.fromEntries(INDEXED.map(c => [c, batch.columns[c].slice(a, b) as (Uint8Array | null)[]]))
  })
  return { entry, rowGroups, rows: batch }
}

/** Partitions of the bench lake's row shape (bench/lib/lake.ts's generator without its planted needles). */
function benchShape(partitions: number, blocksEach: number, perBlock = 400, group = 10_000): PartitionInput[] {
  const r = mulberry32(42)
  const hot = Array.from({ length: 5 }, () => randomBytes(r, 20))
  const warm = Array.from({ length: 2_000 }, () => randomBytes(r, 20))
  const sigs = [TRANSFER, ...Array.from({ length: 300 }, () => randomBytes(r, 32))]
  const holders = Array.from({ length: 20_000 }, () => {
    const t = new Uint8Array(32)
    t.set(randomBytes(r, 20), 12)
    return t
  })
  const out: PartitionInput[] = []
  let block = 19_000_000
  for (let p = 0; p < partitions; p++) {
    const cols = emptyColumns()
    const from = block
    for (let b = 0; b < blocksEach; b++, block++) {
      const n = Math.max(1, Math.round(perBlock * (0.5 + r())))
      const blockHash = randomBytes(r, 32)
      let tx = 0
      let txHash = randomBytes(r, 32)
      for (let i = 0; i < n; i++) {
        if (r() < 0.37) {
          tx++
          txHash = randomBytes(r, 32)
        }
        const x = r()
        cols.address.push(x < 0.4 ? hot[(r() * hot.length) | 0] : x < 0.85 ? warm[(r() * warm.length) | 0] : randomBytes(r, 20))
        const y = r()
        cols.topic0.push(y < 0.55 ? TRANSFER : y < 0.99 ? sigs[1 + ((r() * r() * 300) | 0)] : null)
        const word = new Uint8Array(32)
        word.set(randomBytes(r, 8), 24)
        const words = (r() * 3) | 0
        const data = new Uint8Array(32 * words)
        for (let w = 0; w < words; w++) data.set(word, 32 * w)
        cols.block_number.push(BigInt(block))
        cols.block_hash.push(blockHash)
        cols.transaction_index.push(BigInt(tx))
        cols.transaction_hash.push(txHash)
        cols.log_index.push(BigInt(i))
        cols.topic1.push(r() < 0.85 ? holders[(r() * holders.length) | 0] : null)
        cols.topic2.push(r() < 0.7 ? holders[(r() * holders.length) | 0] : null)
        cols.topic3.push(r() < 0.15 ? randomBytes(r, 32) : null)
        cols.data.push(data)
        cols.removed.push(false)
        cols.block_timestamp.push(BigInt(1_700_000_000 + 12 * (block - 19_000_000)))
      }
    }
    out.push(input({ length: cols.block_number.length, columns: cols }, from, block - 1, group))
  }
  return out
}

/** The recorded mainnet logs, one partition a block. */
function recorded(): PartitionInput[] {
  const dir = resolve(import.meta.dirname, '../../shared/data/evm-mainnet/logs')
  const bytes = (s: string) => Uint8Array.from(Buffer.from(s.slice(2), 'hex'))
  const byBlock = new Map<number, PartitionInput>()
  for (const f of readdirSync(dir).filter(f => f.endsWith('.json'))) {
    const list = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8')) as Record<string, string & string[]>[]
    const block = list.length ? Number(list[0].blockNumber) : NaN
    if (!list.length || byBlock.has(block)) continue
    const cols = emptyColumns()
    for (const l of list) {
      cols.block_number.push(BigInt(l.blockNumber))
      cols.block_hash.push(bytes(l.blockHash))
      cols.transaction_index.push(BigInt(l.transactionIndex))
      cols.transaction_hash.push(bytes(l.transactionHash))
      cols.log_index.push(BigInt(l.logIndex))
      cols.address.push(bytes(l.address))
      for (let t = 0; t < 4; t++) cols[`topic${t}`].push(l.topics[t] ? bytes(l.topics[t]) : null)
      cols.data.push(bytes(l.data))
      cols.removed.push(false)
      cols.block_timestamp.push(l.blockTimestamp ? BigInt(l.blockTimestamp) : null)
    }
    byBlock.set(block, input({ length: list.length, columns: cols }, block, block, list.length))
  }
  return [...byBlock.values()].sort((a, b) => a.entry.from - b.entry.from)
}

const [srcDir, partitions, blocks, real] = process.argv.slice(2)
const src = pathToFileURL(resolve(srcDir ?? 'src')).href
const { buildSegment } = await import(`${src}/index/build.ts`)
const { indexSpecOf } = await import(`${src}/index/publish.ts`)
const inputs = real === 'real' ? recorded() : benchShape(Number(partitions), Number(blocks))
const spec = indexSpecOf({ id: 1, code: 'ETH', family: 'evm' }, logs)
if (process.env.NOROWS) delete spec.rows
if (process.env.SLICE_BYTES && spec.rows) spec.rows.maxBytes = Number(process.env.SLICE_BYTES)
const rows = inputs.reduce((n, p) => n + p.entry.rows, 0)
const rssBefore = process.memoryUsage().rss
const t = performance.now()
const built = buildSegment(spec, inputs)
const ms = performance.now() - t
const columns = Object.values(built.descriptor.columns) as { bytes: number; rows?: { bytes: number } }[]
const rowsBytes = columns.reduce((n, c) => n + (c.rows?.bytes ?? 0), 0)
// the slices' sizes, from the bucket entries (body: the object without its 26-byte trailer)
const { bucketKey, decodeBucket } = await import(`${src}/index/format.ts`)
const objects = new Map((built.objects as { key: string; bytes: Uint8Array }[]).map(o => [o.key, o.bytes]))
const sizes: number[] = []
for (const [column, c] of Object.entries(built.descriptor.columns) as [string, { buckets: number }][])
  for (let b = 0; b < c.buckets; b++) {
    const bytes = objects.get(bucketKey(spec.prefix, built.descriptor, column, b))!
    const e = decodeBucket(bytes.subarray(0, bytes.length - 26), b, Math.log2(c.buckets)).entries
    e.rows?.length.forEach((n: number, i: number) => e.rows!.count[i] && sizes.push(n))
  }
sizes.sort((a, b) => a - b)
console.log(
  JSON.stringify({
    src: srcDir ?? 'src',
    rowsInline: !process.env.NOROWS,
    sliceBytes: String(spec.rows?.maxBytes ?? 'default'),
    slices: sizes.length,
    sliceP99: sizes[Math.floor(sizes.length * 0.99)] ?? 0,
    sliceMax: sizes.at(-1) ?? 0,
    logs: rows,
    ms: Math.round(ms),
    sPerMillion: +((ms / rows) * 1000).toFixed(2),
    inlineBytes: rowsBytes,
    inlineMB: +(rowsBytes / 1e6).toFixed(2),
    inlineBytesPerLog: +(rowsBytes / rows).toFixed(1),
    bucketMB: +(columns.reduce((n, c) => n + c.bytes, 0) / 1e6).toFixed(2),
    rssBeforeMB: Math.round(rssBefore / 1e6),
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1e3),
  }),
)

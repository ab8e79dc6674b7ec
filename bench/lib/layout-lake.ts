/**
 * The layout benchmark behind the writer's defaults (`npm run bench -- layout`): the
 * issue asks for the row-group size and the sort order inside a partition to be
 * chosen by measurement. On the same ≥1M logs (bench/lib/lake.ts's lake):
 *
 * 1. Block order with row groups of 5k/10k/50k/100k rows: file size and queries (a)
 *    rare address + topic0, (b) one block, (c) full export through the engine
 *    (`runQuery`): time, object-store requests, sequential rounds, bytes.
 * 2. Filter-first order (topic0, address, block_number, log_index — SQD's choice),
 *    where min/max statistics and page indexes prune instead of bloom filters: (a)
 *    and (b) read with hyparquet directly (`parquetScan` with a pruning filter and
 *    the page index), beside the block-ordered file read the same way, and what it
 *    costs to put a filter-first partition back into (block_number, log_index) order,
 *    the order the API streams.
 */
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { cachedAsyncBuffer, parquetReadObjects, parquetScan, type AsyncBuffer, type ParquetQueryFilter } from 'hyparquet'
import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer'
import { logs } from '../../src/datasets/evm.ts'
import { benchQueryEngine, benchLake, RARE, TRANSFER, type QueryFigures } from './lake.ts'
import { columnOf } from '../../src/schema/dataset.ts'
import { DEFAULT_LAYOUT, parquetSchemaOf, storedFields } from '../../src/parquet/write.ts'
import { compareBytes } from '../../src/columns/compare.ts'
import { median } from '../report.ts'

export interface LayoutBenchOptions {
  /** Lakes are built (once) under this directory, one sub-directory per variant. */
  cacheDir: string
  /** Logs per lake, at least (default 1,000,000). */
  logs?: number
  /** Block-order row-group sizes compared (default 5k, 10k, 50k, 100k). */
  rowGroupSizes?: number[]
  /** Timed runs per query, median reported (default 5). */
  runs?: number
  log?: (line: string) => void
}

export interface RowGroupFigures {
  rowGroupSize: number
  fileBytes: number
  queries: QueryFigures[]
}

/** I/O of one query read with hyparquet directly (no tail read, no merging: each distinct slice is a request). */
export interface DirectScan {
  rows: number
  ms: number
  requests: number
  bytes: number
  /** Candidate row ranges left after pruning, and the rows in them. */
  ranges: number
  rowsInRanges: number
}

export interface SortFigures {
  order: string
  fileBytes: number
  rowGroupSize: number
  a: DirectScan
  b: DirectScan
}

export interface LayoutBench {
  rows: number
  files: number
  rowGroups: RowGroupFigures[]
  sorts: SortFigures[]
  /** Putting one filter-first partition back into (block_number, log_index) order. */
  resort: { rows: number; ms: number; heapBytes: number }
}

const OUTPUT = logs.fields.filter(f => !f.extra && !f.virtual).map(columnOf)

/** The filter-first order: topic0 (nulls first), address, block_number, log_index. */
export function filterFirstOrder(cols: Record<string, unknown[]>): (a: number, b: number) => number {
  const t0 = cols.topic0 as (Uint8Array | null)[]
  const addr = cols.address as Uint8Array[]
  const block = cols.block_number as bigint[]
  const index = cols.log_index as (bigint | number)[]
  return (a, b) => {
    const x = t0[a]
    const y = t0[b]
    const c = x === y ? 0 : x === null ? -1 : y === null ? 1 : compareBytes(x, y)
    if (c) return c
    return compareBytes(addr[a], addr[b]) || (block[a] < block[b] ? -1 : block[a] > block[b] ? 1 : 0) || Number(index[a]) - Number(index[b])
  }
}

/** An AsyncBuffer over bytes in memory that counts every slice as one request. */
export function countingBuffer(bytes: Uint8Array): AsyncBuffer & { requests: number; bytes: number } {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer
  const counted = {
    byteLength: buffer.byteLength,
    requests: 0,
    bytes: 0,
    slice(start: number, end?: number): ArrayBuffer {
      const out = buffer.slice(start, end)
      counted.requests++
      counted.bytes += out.byteLength
      return out
    },
  }
  return counted
}

async function parquetFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.parquet')) out.push(join(e.parentPath, e.name))
  }
  return out.sort()
}

async function totalBytes(files: string[]): Promise<number> {
  let n = 0
  for (const f of files) n += (await stat(f)).size
  return n
}

/** Rewrites each block-ordered file sorted filter-first, with page indexes on the sort columns. */
async function writeFilterFirst(source: string[], dir: string, rowGroupSize: number): Promise<string[]> {
  await mkdir(dir, { recursive: true })
  const existing = await parquetFiles(dir)
  if (existing.length === source.length) return existing
  const fields = storedFields(logs)
  const out: string[] = []
  for (const [i, path] of source.entries()) {
    const cols = await readColumns(path)
    const n = cols.block_number.length
    const order = Array.from({ length: n }, (_, r) => r).sort(filterFirstOrder(cols))
    const columnData: ColumnSource[] = fields.map(f => {
      const name = columnOf(f)
      const data = cols[name]
      return {
        name,
        data: order.map(r => data[r]) as ColumnSource['data'],
        columnIndex: ['topic0', 'address', 'block_number'].includes(name),
        offsetIndex: true,
        ...(f.bloom ? { bloomFilter: { fpp: DEFAULT_LAYOUT.bloomFpp } } : {}),
      }
    })
    const bytes = parquetWriteBuffer({
      columnData,
      schema: parquetSchemaOf(logs),
      rowGroupSize,
      pageSize: DEFAULT_LAYOUT.pageSize,
      statisticsTruncateLength: Infinity,
    })
    const file = join(dir, `part-${String(i).padStart(3, '0')}.parquet`)
    await writeFile(file, new Uint8Array(bytes))
    out.push(file)
  }
  return out
}

/** Every stored column of a file, decoded (bytes as Uint8Array). */
async function readColumns(path: string): Promise<Record<string, unknown[]>> {
  const buf = await readFile(path)
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer
  const rows = await parquetReadObjects({ file, utf8: false })
  const cols: Record<string, unknown[]> = {}
  for (const f of storedFields(logs)) cols[columnOf(f)] = rows.map(r => r[columnOf(f)])
  return cols
}

const same = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i])

/** Half-open runs of consecutive rows in [0, n) for which `test` holds. */
export function matchingRuns(n: number, test: (i: number) => boolean): [number, number][] {
  const runs: [number, number][] = []
  for (let i = 0; i < n; i++) {
    if (!test(i)) continue
    const last = runs[runs.length - 1]
    if (last && last[1] === i) last[1] = i + 1
    else runs.push([i, i + 1])
  }
  return runs
}

/**
 * One query over `files` the straightforward hyparquet way: prune with `filter`
 * (statistics, and bloom filters and the page index as asked), read the filter
 * columns of each candidate range, then the output columns of each run of matching rows.
 */
export async function directScan(
  files: string[],
  filter: ParquetQueryFilter,
  matches: (cols: Record<string, ArrayLike<unknown>>, i: number) => boolean,
  filterColumns: string[],
  options: { useBloomFilters: boolean; usePageIndex: boolean },
): Promise<DirectScan> {
  const buffers = await Promise.all(files.map(f => readFile(f)))
  const result: DirectScan = { rows: 0, ms: 0, requests: 0, bytes: 0, ranges: 0, rowsInRanges: 0 }
  const t = performance.now()
  for (const bytes of buffers) {
    const counted = countingBuffer(bytes)
    // A slice asked for twice is fetched once, as a reader with a page cache would.
    const file = cachedAsyncBuffer(counted, { minSize: 0 })
    const scan = await parquetScan({ file, pruningFilter: filter, columns: OUTPUT, utf8: false, ...options })
    result.ranges += scan.ranges.length
    for (const range of scan.ranges) {
      result.rowsInRanges += range.rowEnd - range.rowStart
      const decoded = Object.fromEntries(
        await Promise.all(filterColumns.map(async c => [c, await scan.readColumn({ column: c, ...range })] as const)),
      )
      const runs = matchingRuns(range.rowEnd - range.rowStart, i => matches(decoded, i)).map(([a, b]) => [
        range.rowStart + a,
        range.rowStart + b,
      ])
      await Promise.all(runs.flatMap(([rowStart, rowEnd]) => OUTPUT.map(c => scan.readColumn({ column: c, rowStart, rowEnd }))))
      result.rows += runs.reduce((n, [a, b]) => n + b - a, 0)
    }
    result.requests += counted.requests
    result.bytes += counted.bytes
  }
  result.ms = performance.now() - t
  return result
}

/** (a) and (b) read directly, median time of `runs`. */
async function directQueries(
  files: string[],
  oneBlock: number,
  runs: number,
  options: { useBloomFilters: boolean; usePageIndex: boolean },
): Promise<{ a: DirectScan; b: DirectScan }> {
  const a = () =>
    directScan(
      files,
      { address: { $eq: RARE }, topic0: { $eq: TRANSFER } } as ParquetQueryFilter,
      (c, i) => same(c.address[i], RARE) && same(c.topic0[i], TRANSFER),
      ['address', 'topic0'],
      options,
    )
  const b = () =>
    directScan(
      files,
      { block_number: { $eq: BigInt(oneBlock) } } as ParquetQueryFilter,
      (c, i) => c.block_number[i] === BigInt(oneBlock),
      ['block_number'],
      options,
    )
  const timed = async (f: () => Promise<DirectScan>) => {
    await f()
    const all: DirectScan[] = []
    for (let i = 0; i < runs; i++) all.push(await f())
    return { ...all[0], ms: median(all.map(x => x.ms)) }
  }
  return { a: await timed(a), b: await timed(b) }
}

/** Full garbage collections (external buffers are released a turn later), so heap figures count what is retained. */
async function collectGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise(resolve => setImmediate(resolve))
  }
}

const heapNow = () => {
  const m = process.memoryUsage()
  return m.heapUsed + m.external
}

/** Reads one filter-first partition whole and sorts it back into (block_number, log_index) order; heap retained by the result. */
async function resortPartition(path: string): Promise<{ rows: number; ms: number; heapBytes: number }> {
  await collectGarbage()
  const before = heapNow()
  const t = performance.now()
  const cols = await readColumns(path)
  const block = cols.block_number as bigint[]
  const index = cols.log_index as (bigint | number)[]
  const order = Array.from({ length: block.length }, (_, r) => r).sort((a, b) =>
    block[a] < block[b] ? -1 : block[a] > block[b] ? 1 : Number(index[a]) - Number(index[b]),
  )
  const ms = performance.now() - t
  await collectGarbage()
  const heapBytes = heapNow() - before
  // Read after the measurement, so the decoded columns and the order are still held during it.
  return { rows: Math.min(order.length, cols.block_number.length), ms, heapBytes }
}

/** Builds (or reuses) the lakes and measures every variant. */
export async function benchLayout(options: LayoutBenchOptions): Promise<LayoutBench> {
  const log = options.log ?? (() => {})
  const sizes = options.rowGroupSizes ?? [5_000, 10_000, 50_000, 100_000]
  const runs = options.runs ?? 5
  const rowGroups: RowGroupFigures[] = []
  let rows = 0
  let files = 0
  for (const rowGroupSize of sizes) {
    const dir = join(options.cacheDir, `block-order-${rowGroupSize}`)
    log(`block order, ${rowGroupSize} rows per group: ${dir}`)
    const { lake, figures } = await benchQueryEngine({ dir, logs: options.logs, layout: { rowGroupSize }, runs, duckdb: false })
    rows = lake.rows
    files = lake.files.length
    rowGroups.push({ rowGroupSize, fileBytes: await totalBytes(lake.files), queries: figures })
  }
  const baseSize = DEFAULT_LAYOUT.rowGroupSize
  const baseDir = join(options.cacheDir, `block-order-${baseSize}`)
  const base = await benchLake({ dir: baseDir, logs: options.logs, layout: { rowGroupSize: baseSize } })
  const oneBlock = base.from + Math.floor((base.to - base.from) / 2)
  log('filter-first order (topic0, address, block_number, log_index)')
  const sortedFiles = await writeFilterFirst(base.files, join(options.cacheDir, `filter-first-${baseSize}`), baseSize)
  const sorts: SortFigures[] = [
    {
      order: 'block order, bloom filters + page index',
      fileBytes: await totalBytes(base.files),
      rowGroupSize: baseSize,
      ...(await directQueries(base.files, oneBlock, runs, { useBloomFilters: true, usePageIndex: true })),
    },
    {
      order: 'filter-first, statistics + page index',
      fileBytes: await totalBytes(sortedFiles),
      rowGroupSize: baseSize,
      ...(await directQueries(sortedFiles, oneBlock, runs, { useBloomFilters: false, usePageIndex: true })),
    },
    {
      order: 'filter-first, bloom filters + page index',
      fileBytes: await totalBytes(sortedFiles),
      rowGroupSize: baseSize,
      ...(await directQueries(sortedFiles, oneBlock, runs, { useBloomFilters: true, usePageIndex: true })),
    },
  ]
  const resort = await resortPartition(sortedFiles[0])
  return { rows, files, rowGroups, sorts, resort }
}

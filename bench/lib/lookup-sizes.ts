/**
 * What a lookup copy's row-group size costs: one stored partition read back, then its
 * copy written at each size (interleaved with the partition itself, `runs` times), with
 * the copy's bytes, row groups, tail (what a query fetches cold and the tail cache keeps)
 * and median group size. Not a test: it prints figures.
 * Run: `npx node bench/lib/lookup-sizes.ts <partition.parquet> <dataset> [sizes=256,512,1024] [runs=3]`
 * (dataset: a name from src/datasets/evm.ts that declares a lookup, e.g. transactions).
 */
import { readFile } from 'node:fs/promises'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { writeLookup } from '../../src/parquet/lookup.ts'
import { storedFields, writePartition } from '../../src/parquet/write.ts'
import { columnOf } from '../../src/schema/dataset.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'
import { median } from '../report.ts'

const [file, name, sizesArg = '256,512,1024', runsArg = '3'] = process.argv.slice(2)
const dataset = EVM_DATASETS.find(d => d.name === name)
if (!file || !dataset?.lookup) throw new Error('usage: lookup-sizes.ts <partition.parquet> <dataset with a lookup> [sizes] [runs]')
const lookup = dataset.lookup
const sizes = sizesArg.split(',').map(Number)
const bytes = await readFile(file)
const buffer = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer
const rows = await parquetReadObjects({ file: buffer(bytes), utf8: false })
const columns: Record<string, (StoredValue | null)[]> = {}
for (const f of storedFields(dataset)) columns[columnOf(f)] = rows.map(r => (r[columnOf(f)] ?? null) as StoredValue | null)
const batch = { length: rows.length, columns }
const range = { from: Number(columns[dataset.rangeKey][0]), to: Number(columns[dataset.rangeKey][rows.length - 1]) }

const ms: Record<string, number[]> = {}
const shape: Record<number, string> = {}
for (let run = 0; run < Number(runsArg); run++) {
  for (const size of [0, ...sizes]) {
    const t = performance.now()
    const written =
      size === 0
        ? writePartition(dataset, batch, range)
        : writeLookup({ ...dataset, lookup: { ...lookup, rowGroupSize: size } }, batch, range)
    ;(ms[size] ??= []).push(performance.now() - t)
    if (size === 0 || shape[size]) continue
    const groups = parquetMetadata(buffer(written.bytes)).row_groups.map(g => Number(g.total_byte_size))
    const tail = written.bytes.length - written.entry.tailOffset
    shape[size] = `${written.bytes.length} bytes, ${groups.length} groups, tail ${tail} bytes, group median ${median(groups)} bytes`
  }
}
console.log(`${dataset.name}: ${rows.length} rows, partition ${bytes.length} bytes, written in ${median(ms[0]).toFixed(0)} ms (median)`)
for (const size of sizes)
  console.log(
    `copy in ${size}-row groups: ${shape[size]}; written in ${median(ms[size]).toFixed(0)} ms (median; runs ${ms[size].map(x => x.toFixed(0)).join(', ')})`,
  )

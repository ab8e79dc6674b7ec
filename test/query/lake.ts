/**
 * Test lakes: synthetic rows for any dataset declaration (hot and rare binary values,
 * nulls, wide u256 magnitudes), written as partitions into a store and published,
 * plus a plain reference filter; the read-recording store comes from the benchmark.
 */
import type { Chain } from '../../src/chains/registry.ts'
import { putPartition } from '../../src/parquet/put.ts'
import { additionsOf, publishIndexed, type WrittenPartition } from '../../src/index/publish.ts'
import type { LayoutOptions } from '../../src/parquet/write.ts'
import { publish } from '../../src/manifest/publish.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { columnOf, type DatasetDecl, type FieldDecl } from '../../src/schema/dataset.ts'
import { intToBytes, type StoredValue } from '../../src/schema/kinds.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { cellOf, type RowBatch } from '../../src/columns/batch.ts'
import type { Predicate } from '../../src/query/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { DEX_DATASETS, dexTokens } from '../../src/datasets/dex.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { MOVE_DATASETS } from '../../src/datasets/move.ts'

export type Row = Record<string, StoredValue | null>

/** Deterministic PRNG (mulberry32). */
export const rng = mulberry32

export function randomBytes(r: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256)
  return out
}

/** Values shared by many rows (hot), some (warm) and fresh ones (rare), per width. */
export interface Pools {
  hot: Map<number, Uint8Array[]>
  warm: Map<number, Uint8Array[]>
}

export function makePools(r: () => number): Pools {
  const hot = new Map<number, Uint8Array[]>()
  const warm = new Map<number, Uint8Array[]>()
  for (const w of [20, 32]) {
    hot.set(
      w,
      Array.from({ length: 3 }, () => randomBytes(r, w)),
    )
    warm.set(
      w,
      Array.from({ length: 40 }, () => randomBytes(r, w)),
    )
  }
  return { hot, warm }
}

const pick = <T>(r: () => number, xs: T[]): T => xs[Math.floor(r() * xs.length)]

function valueOf(f: FieldDecl, r: () => number, pools: Pools): StoredValue | null {
  if (f.nullable && r() < 0.25) return null
  switch (f.kind) {
    case 'u64hex':
    case 'u64int':
      return r() < 0.05 ? (1n << 64n) - 1n - BigInt(Math.floor(r() * 1000)) : BigInt(Math.floor(r() * 1000))
    case 'u256hex':
    case 'u256pad': {
      const b = randomBytes(r, 32)
      b.fill(0, 0, Math.floor(r() * 33))
      return b
    }
    case 'int':
      return intToBytes(BigInt(Math.floor((r() - 0.5) * 2000)))
    case 'hash':
    case 'address':
    case 'address32': {
      const w = f.kind === 'address' ? 20 : 32
      const x = r()
      return x < 0.4 ? pick(r, pools.hot.get(w)!) : x < 0.75 ? pick(r, pools.warm.get(w)!) : randomBytes(r, w)
    }
    case 'bytes':
      return randomBytes(r, Math.floor(r() * 3) * 4)
    case 'bool':
      return r() < 0.3
    case 'string':
      return pick(r, ['', 'a', 'b', 'ab', 'z', 'é'])
    case 'json':
      return JSON.stringify({ n: Math.floor(r() * 10) })
  }
}

/** Rows for `blocks` (each gets 0..maxPerBlock rows), sorted by the dataset's order. */
export function makeRows(dataset: DatasetDecl, blocks: number[], r: () => number, pools: Pools, maxPerBlock = 12): Row[] {
  const rows: Row[] = []
  const indexColumn = dataset.orderBy[1]
  for (const block of blocks) {
    const n = Math.floor(r() * (maxPerBlock + 1))
    for (let i = 0; i < n; i++) {
      const row: Row = {}
      for (const f of dataset.fields) {
        if (f.virtual) continue
        row[columnOf(f)] = valueOf(f, r, pools)
      }
      row[dataset.rangeKey] = BigInt(block)
      if (indexColumn) row[indexColumn] = BigInt(i)
      rows.push(row)
    }
  }
  return rows
}

export function toColumns(dataset: DatasetDecl, rows: Row[]): { length: number; columns: Record<string, (StoredValue | null)[]> } {
  const columns: Record<string, (StoredValue | null)[]> = {}
  for (const f of dataset.fields) if (!f.virtual) columns[columnOf(f)] = rows.map(row => row[columnOf(f)])
  return { length: rows.length, columns }
}

/** The declared datasets `makeRows` fills: it numbers a dataset's second order column, so one whose second is bytes (dex_pools) is left out. */
export const generatedDatasets = (): DatasetDecl[] =>
  [...EVM_DATASETS, ...DEX_DATASETS, dexTokens, ...MOVE_DATASETS].filter(
    d => d.orderBy.length < 2 || /^u64/.test(d.fields.find(f => columnOf(f) === d.orderBy[1])!.kind),
  )

/** Plain rows of `dataset` over `blocks` blocks from `first`, from seed `seed`. */
export function randomBatch(dataset: DatasetDecl, first: number, blocks: number, seed: number, maxPerBlock?: number) {
  const r = rng(seed)
  return toColumns(
    dataset,
    makeRows(
      dataset,
      Array.from({ length: blocks }, (_, i) => first + i),
      r,
      makePools(r),
      maxPerBlock,
    ),
  )
}

export interface PartSpec {
  from: number
  to: number
  rows: Row[]
}

/** Parts of `dataset` over `ranges`, every block's rows drawn from `seed` (at most `maxPerBlock` a block). */
export function partsOver(dataset: DatasetDecl, ranges: readonly [number, number][], seed: number, maxPerBlock?: number): PartSpec[] {
  const r = rng(seed)
  const pools = makePools(r)
  return ranges.map(([from, to]) => ({
    from,
    to,
    rows: makeRows(
      dataset,
      Array.from({ length: to - from + 1 }, (_, i) => from + i),
      r,
      pools,
      maxPerBlock,
    ),
  }))
}

export interface BuildOptions {
  /** Manifest shard span for a new chain (default: the publisher's). */
  shardSpan?: number
  /** What the manifest records for each partition (default: the writer's entry). */
  entry?: (entry: PartitionEntry) => PartitionEntry
  /** Publish a value index with the partitions (as every product writer does); off by default so tests of the per-partition path stay on it. */
  index?: boolean
  /** With `index`: most rows of a value the index stores inline (default the product's; 0: none). */
  inlineRows?: number
}

/** Writes and publishes partitions; returns their manifest entries as published. */
export async function buildLake(
  store: ObjectStore,
  chain: Chain,
  dataset: DatasetDecl,
  parts: PartSpec[],
  layout: LayoutOptions = {},
  options: BuildOptions = {},
): Promise<PartitionEntry[]> {
  const written: WrittenPartition[] = []
  for (const p of parts) {
    const batch = toColumns(dataset, p.rows)
    const { entry } = await putPartition(store, chain, dataset, batch, { from: p.from, to: p.to }, layout)
    written.push({ entry: options.entry ? options.entry(entry) : entry, batch })
  }
  const publishOptions = options.shardSpan ? { shardSpan: options.shardSpan } : {}
  const writes = [{ dataset, partitions: written }]
  if (options.index)
    await publishIndexed(store, chain, writes, {
      ...publishOptions,
      ...(options.inlineRows !== undefined ? { inlineRows: options.inlineRows } : {}),
    })
  else await publish(store, chain, additionsOf(writes), publishOptions)
  return written.map(w => w.entry)
}

/**
 * An indexed lake of `dataset` over `parts`, `perBlock` rows a block drawn from `seed` (each part
 * cut to its first `cap` rows), where `column` holds `value` in every row `mark(i)` picks (i
 * counted within the part): one value spread through every partition, in row groups of `rowGroupSize`.
 */
export async function buildMarkedLake(
  store: ObjectStore,
  chain: Chain,
  dataset: DatasetDecl,
  parts: readonly { from: number; to: number }[],
  mark: { column: string; value: StoredValue; rows: (i: number) => boolean },
  shape: { seed: number; perBlock: number; cap: number; rowGroupSize: number },
): Promise<{ entries: PartitionEntry[]; rows: Row[] }> {
  const r = rng(shape.seed)
  const pools = makePools(r)
  const perPart = parts.map(({ from, to }) =>
    makeRows(
      dataset,
      Array.from({ length: to - from + 1 }, (_, i) => from + i),
      r,
      pools,
      shape.perBlock,
    ).slice(0, shape.cap),
  )
  perPart.forEach(list => list.forEach((row, i) => mark.rows(i) && (row[mark.column] = mark.value)))
  const specs = parts.map((p, i) => ({ ...p, to: Number(perPart[i][perPart[i].length - 1].block_number), rows: perPart[i] }))
  const entries = await buildLake(store, chain, dataset, specs, { rowGroupSize: shape.rowGroupSize }, { index: true })
  return { entries, rows: perPart.flat() }
}

/** A manifest entry as written before bloom spans and lookup copies were recorded: only the whole tail is known. */
export function legacyEntry({ footerOffset: _f, blooms: _b, lookup: _l, ...entry }: PartitionEntry): PartitionEntry {
  return entry
}

/** Bytes of `reads` of object `key` that fall inside `[offset, offset + length)`. */
export function bytesWithin(
  reads: readonly { key: string; offset: number; length: number }[],
  key: string,
  span: { offset: number; length: number },
): number {
  let n = 0
  for (const r of reads) {
    if (r.key !== key) continue
    n += Math.max(0, Math.min(r.offset + r.length, span.offset + span.length) - Math.max(r.offset, span.offset))
  }
  return n
}

const HEX = (b: Uint8Array) => Array.from(b, x => x.toString(16).padStart(2, '0')).join('')

/** A stored value as comparable plain data (hex for bytes, decimal text for bigints). */
export function plain(v: StoredValue | null | undefined): unknown {
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return '0x' + HEX(v)
  if (typeof v === 'bigint') return v.toString()
  return v
}

/** Reference semantics, written independently of the engine: hex text for equality, BigInt for order. */
export function referenceMatch(p: Predicate, row: Row, chainId: number): boolean {
  const f = p.field
  const v = f.virtual === 'chain' ? BigInt(chainId) : f.virtual === 'null' ? null : row[columnOf(f)]
  const num = (x: StoredValue) => (x instanceof Uint8Array ? BigInt('0x' + (HEX(x) || '0')) : x)
  if (p.op === 'eq' || p.op === 'in') return p.values.some(w => (w === null ? v === null : v !== null && plain(v) === plain(w)))
  if (v === null) return false
  const a = num(v)
  const b = num(p.values[0] as StoredValue)
  return p.op === 'gte' ? a >= b : a <= b
}

/** Rows of batches as plain records keyed by field name. */
export function batchRows(batches: RowBatch[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (const b of batches) {
    for (const v of Object.values(b.columns)) if (v.length !== b.length) throw new Error('ragged batch')
    for (let i = 0; i < b.length; i++) {
      const row: Record<string, unknown> = {}
      for (const name of Object.keys(b.columns)) row[name] = plain(cellOf(b, name, i))
      out.push(row)
    }
  }
  return out
}

/** The expected output rows: reference filter over the source rows, fields projected. */
export function expected(
  rows: Row[],
  predicates: Predicate[],
  fields: readonly FieldDecl[],
  range: [number, number],
  rangeKey: string,
  chainId: number,
): Record<string, unknown>[] {
  return rows
    .filter(row => {
      const b = Number(row[rangeKey] as bigint)
      return b >= range[0] && b <= range[1] && predicates.every(p => referenceMatch(p, row, chainId))
    })
    .map(row => {
      const out: Record<string, unknown> = {}
      for (const f of fields) out[f.name] = f.virtual === 'chain' ? String(chainId) : f.virtual === 'null' ? null : plain(row[columnOf(f)])
      return out
    })
}

export async function collect(batches: AsyncIterable<RowBatch>): Promise<RowBatch[]> {
  const out: RowBatch[] = []
  for await (const b of batches) out.push(b)
  return out
}

/**
 * The stored form of the manifest. Row groups, bloom spans and shard references are
 * written as number tuples: at full-chain scale a shard lists thousands of row groups
 * and the root hundreds of shards, and tuples keep them about three times smaller than
 * objects. In memory they are objects (types.ts).
 */
import { shardKey } from './keys.ts'
import { crc32 } from '../store/crc32.ts'
import {
  MANIFEST_FORMAT,
  type ByteSpan,
  type DatasetIndex,
  type ManifestRoot,
  type ManifestShard,
  type PartitionEntry,
  type RowGroupEntry,
  type ShardRef,
} from './types.ts'

/** [index, generation, from, to, partitions, rows, bytes] and, since checksums, the shard's CRC-32 */
type StoredShardRef = [number, number, number, number, number, number, number, number?]
/** [from, to, rows, offset, length] */
type StoredRowGroup = [number, number, number, number, number]
/** [offset, length] or, with its checksum, [offset, length, crc32] */
type StoredSpan = [number, number] | [number, number, number]

interface StoredDatasetIndex {
  coverage: [number, number][]
  rows: number
  bytes: number
  shards: StoredShardRef[]
  index?: DatasetIndex['index']
}

export interface StoredRoot extends Omit<ManifestRoot, 'datasets'> {
  datasets: Record<string, StoredDatasetIndex>
  /** CRC-32 of the root's JSON without this field, the last one (absent in roots written before checksums). */
  crc?: number
}

/** A partition entry as stored: row groups and bloom spans as tuples. */
export interface StoredPartition extends Omit<PartitionEntry, 'rowGroups' | 'blooms'> {
  blooms?: Record<string, StoredSpan>
  rowGroups: StoredRowGroup[]
}

export interface StoredShard extends Omit<ManifestShard, 'partitions'> {
  partitions: StoredPartition[]
}

const mapValues = <A, B>(record: Record<string, A>, f: (a: A) => B): Record<string, B> =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v)]))

const generationOf = (key: string): number => Number(/-g(\d+)\.json$/.exec(key)?.[1])

function checkFormat(value: { format?: unknown }, what: string): void {
  if (value?.format !== MANIFEST_FORMAT) throw new Error(`unknown ${what} format: ${String(value?.format)}`)
}

export function encodeRoot(root: ManifestRoot): StoredRoot {
  const datasets: Record<string, StoredDatasetIndex> = {}
  for (const [name, d] of Object.entries(root.datasets)) {
    datasets[name] = {
      coverage: d.coverage,
      rows: d.rows,
      bytes: d.bytes,
      shards: d.shards.map((s): StoredShardRef => {
        const ref: StoredShardRef = [s.index, generationOf(s.key), s.from, s.to, s.partitions, s.rows, s.bytes]
        if (s.crc !== undefined) ref.push(s.crc)
        return ref
      }),
      ...(d.index ? { index: d.index } : {}),
    }
  }
  const stored: StoredRoot = { ...root, datasets }
  return { ...stored, crc: rootCrc(stored) }
}

const encoder = new TextEncoder()

/**
 * CRC-32 of a root's JSON text without its `crc`. JSON text read back and written again is
 * the same text, so a reader recomputes it from the parsed object: a flipped bit anywhere in
 * the root (a digit of a shard's rows, a letter of its label) is refused, not served.
 */
const rootCrc = (stored: Omit<StoredRoot, 'crc'>): number => crc32(encoder.encode(JSON.stringify(stored)))

export function decodeRoot({ crc, ...stored }: StoredRoot): ManifestRoot {
  checkFormat(stored, 'manifest root')
  if (crc !== undefined && rootCrc(stored) !== crc) throw new Error('the root fails its checksum')
  const datasets: ManifestRoot['datasets'] = {}
  for (const [name, d] of Object.entries(stored.datasets)) {
    datasets[name] = {
      coverage: d.coverage,
      rows: d.rows,
      bytes: d.bytes,
      shards: d.shards.map(([index, generation, from, to, partitions, rows, bytes, crc]): ShardRef => ({
        index,
        key: shardKey(stored.chain, name, index, generation),
        from,
        to,
        partitions,
        rows,
        bytes,
        ...(crc === undefined ? {} : { crc }),
      })),
      ...(d.index ? { index: d.index } : {}),
    }
    checkDataset(name, datasets[name], stored.shardSpan)
  }
  return { ...stored, datasets }
}

/**
 * A root's own numbers must agree before it is trusted: coverage sorted, inside the blocks
 * its shards span, from the first shard's first block to the last shard's last; rows and
 * bytes the sums of its shards'; each shard inside its span. A root damaged into other valid
 * JSON (coverage it has no shards for) is refused, not served.
 */
function checkDataset(name: string, d: ManifestRoot['datasets'][string], span: number): void {
  const fail = (why: string) => {
    throw new Error(`dataset ${name}: ${why}`)
  }
  const sum = (pick: (s: ShardRef) => number) => d.shards.reduce((n, s) => n + pick(s), 0)
  if (d.rows !== sum(s => s.rows) || d.bytes !== sum(s => s.bytes)) fail('rows or bytes are not the sums of its shards')
  for (const s of d.shards)
    if (s.from > s.to || s.from < s.index * span || s.to >= (s.index + 1) * span) fail(`shard ${s.index} lies outside its span`)
  d.coverage.forEach(([a, b], i) => {
    if (a > b || (i > 0 && a <= d.coverage[i - 1][1])) fail('coverage is not sorted and disjoint')
  })
  const first = d.coverage[0]?.[0]
  const last = d.coverage.at(-1)?.[1]
  if (
    d.shards.length === 0
      ? d.coverage.length > 0
      : first !== Math.min(...d.shards.map(s => s.from)) || last !== Math.max(...d.shards.map(s => s.to))
  ) {
    fail('coverage does not match the blocks its shards span')
  }
  // An index that answers for blocks the dataset does not cover would point at unpublished data.
  const indexed = (d.index?.segments ?? []).flatMap(seg => {
    if (seg.coverage.some(([a, b]) => a > b || a < seg.from || b > seg.to)) fail(`index segment ${seg.from}-${seg.to} is inconsistent`)
    return seg.coverage
  })
  indexed.sort((x, y) => x[0] - y[0])
  indexed.forEach(([a, b], i) => {
    if (i > 0 && a <= indexed[i - 1][1]) fail('index segments overlap')
    if (!d.coverage.some(([x, y]) => x <= a && b <= y)) fail(`the index covers unpublished blocks ${a}-${b}`)
  })
}

export function encodeShard(shard: ManifestShard): StoredShard {
  return {
    ...shard,
    partitions: shard.partitions.map(({ blooms, ...p }): StoredPartition => ({
      ...p,
      ...(blooms
        ? { blooms: mapValues(blooms, (b): StoredSpan => (b.crc === undefined ? [b.offset, b.length] : [b.offset, b.length, b.crc])) }
        : {}),
      rowGroups: p.rowGroups.map(g => [g.from, g.to, g.rows, g.offset, g.length]),
    })),
  }
}

export function decodeShard(stored: StoredShard): ManifestShard {
  checkFormat(stored, 'manifest shard')
  return {
    ...stored,
    partitions: stored.partitions.map(({ blooms, ...p }): PartitionEntry => ({
      ...p,
      ...(blooms
        ? { blooms: mapValues(blooms, ([offset, length, crc]): ByteSpan => ({ offset, length, ...(crc === undefined ? {} : { crc }) })) }
        : {}),
      rowGroups: p.rowGroups.map(([from, to, rows, offset, length]): RowGroupEntry => ({ from, to, rows, offset, length })),
    })),
  }
}

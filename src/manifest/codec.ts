/**
 * The stored form of the manifest. Row groups, bloom spans and shard references are
 * written as number tuples: at full-chain scale a shard lists thousands of row groups
 * and the root hundreds of shards, and tuples keep them about three times smaller than
 * objects. In memory they are objects (types.ts).
 */
import { shardKey } from './keys.ts'
import {
  MANIFEST_FORMAT,
  type ByteSpan,
  type ManifestRoot,
  type ManifestShard,
  type PartitionEntry,
  type RowGroupEntry,
  type ShardRef,
} from './types.ts'

/** [index, generation, from, to, partitions, rows, bytes] */
type StoredShardRef = [number, number, number, number, number, number, number]
/** [from, to, rows, offset, length] */
type StoredRowGroup = [number, number, number, number, number]
/** [offset, length] */
type StoredSpan = [number, number]

interface StoredDatasetIndex {
  coverage: [number, number][]
  rows: number
  bytes: number
  shards: StoredShardRef[]
}

export interface StoredRoot extends Omit<ManifestRoot, 'datasets'> {
  datasets: Record<string, StoredDatasetIndex>
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
      shards: d.shards.map(s => [s.index, generationOf(s.key), s.from, s.to, s.partitions, s.rows, s.bytes]),
    }
  }
  return { ...root, datasets }
}

export function decodeRoot(stored: StoredRoot): ManifestRoot {
  checkFormat(stored, 'manifest root')
  const datasets: ManifestRoot['datasets'] = {}
  for (const [name, d] of Object.entries(stored.datasets)) {
    datasets[name] = {
      coverage: d.coverage,
      rows: d.rows,
      bytes: d.bytes,
      shards: d.shards.map(([index, generation, from, to, partitions, rows, bytes]): ShardRef => ({
        index,
        key: shardKey(stored.chain, name, index, generation),
        from,
        to,
        partitions,
        rows,
        bytes,
      })),
    }
  }
  return { ...stored, datasets }
}

export function encodeShard(shard: ManifestShard): StoredShard {
  return {
    ...shard,
    partitions: shard.partitions.map(({ blooms, ...p }): StoredPartition => ({
      ...p,
      ...(blooms ? { blooms: mapValues(blooms, (b): StoredSpan => [b.offset, b.length]) } : {}),
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
      ...(blooms ? { blooms: mapValues(blooms, ([offset, length]): ByteSpan => ({ offset, length })) } : {}),
      rowGroups: p.rowGroups.map(([from, to, rows, offset, length]): RowGroupEntry => ({ from, to, rows, offset, length })),
    })),
  }
}

/**
 * The block-range manifest: a small root per chain that points at immutable shards,
 * each listing the partitions of one dataset inside a fixed block span. A query loads
 * the root and only the shards its range touches. Format documented in
 * `partitions-manifest/README.md` and `partitions-manifest/manifest.schema.json`.
 */
import type { Family } from '../schema/dataset.ts'

export const MANIFEST_FORMAT = 'edge-chain-data/manifest@1'

/** Inclusive block range. */
export type BlockRange = [from: number, to: number]

export interface ChainRef {
  family: Family
  id: number
  code: string
}

export interface ManifestRoot {
  format: typeof MANIFEST_FORMAT
  chain: ChainRef
  /** Grows with every publication (it may skip numbers); shard keys carry the generation that wrote them. */
  generation: number
  /** Blocks per shard: shard i covers blocks [i * shardSpan, (i + 1) * shardSpan - 1]. */
  shardSpan: number
  updatedAt: string
  /** What the data is when its chain's name does not say it (`synthetic local data`); shown in status records. */
  label?: string
  datasets: Record<string, DatasetIndex>
}

export interface DatasetIndex {
  /** Covered block ranges, sorted, merged, never overlapping; the holes between them are gaps. */
  coverage: BlockRange[]
  rows: number
  bytes: number
  shards: ShardRef[]
  /**
   * Its value index (src/index), published with the partitions it covers: every segment's
   * partitions are published ones. Absent when the dataset has none yet; blocks outside the
   * segments' coverage are read without it.
   */
  index?: { segments: SegmentDescriptor[]; retired?: RetiredList }
}

/**
 * Where a dataset's retired segments are listed: an object of their own that only writers
 * read (src/manifest/retired.ts), so the root every query reads does not grow with a
 * backfill's merges. Roots written before it carry the list itself.
 */
export type RetiredList = RetiredRef | RetiredSegment[]

/** The object listing a dataset's retired segments: its key, the CRC-32 of its bytes and how many it lists. */
export interface RetiredRef {
  key: string
  crc: number
  segments: number
}

/**
 * A segment no longer listed (merged into a bigger one, or dropped by a replace or a reindex),
 * kept here until its objects are deleted: readers of an older root may still read it, so a
 * writer deletes its objects only a grace period after `since` (src/index/retire.ts).
 */
export interface RetiredSegment {
  /** When a root stopped listing it (ISO 8601). */
  since: string
  segment: SegmentDescriptor
  /** How many of its objects (in `segmentKeys` order) are deleted already; absent: none. */
  deleted?: number
}

/** One indexed column of an index segment. */
export interface ColumnSegment {
  /** Content id (16 hex digits) in its object keys. */
  id: string
  /** Number of bucket objects, a power of two (1: a single object). */
  buckets: number
  /** Stored bytes of all its objects. */
  bytes: number
  /**
   * Rows of its rare values are stored beside the buckets (one rows object per bucket,
   * src/index/README.md "Inline rows"): the row codec they are written in and their bytes.
   */
  rows?: { codec: string; bytes: number }
  /**
   * Bytes of the column's pack, when it has one: every bucket object again, back to back in
   * one object, so a lookup of many values reads one object instead of a bucket each
   * (columns of several buckets and at most `PACK_BYTES`; src/index/README.md "Packs").
   */
  pack?: number
}

/**
 * An index segment: an immutable index of every indexed column over a run of published
 * partitions of one dataset (src/index/README.md). The root lists them, so it stays small
 * (~80 bytes a column).
 */
export interface SegmentDescriptor {
  from: number
  to: number
  /** Block ranges of its partitions, merged: where it answers. */
  coverage: BlockRange[]
  partitions: number
  /** Row groups of its partitions: its size for the merge policy. */
  rowGroups: number
  /** Content id of its partition table object; absent when every bucket carries the table. */
  table?: string
  columns: Record<string, ColumnSegment>
}

export interface ShardRef {
  index: number
  key: string
  /** Lowest and highest block covered by the shard's partitions. */
  from: number
  to: number
  partitions: number
  rows: number
  bytes: number
  /** CRC-32 of the shard object's stored bytes, verified when it is read (absent in roots written before checksums). */
  crc?: number
}

export interface ManifestShard {
  format: typeof MANIFEST_FORMAT
  chain: ChainRef
  dataset: string
  index: number
  generation: number
  /** Sorted by `from`; ranges never overlap. */
  partitions: PartitionEntry[]
}

/** A partition's lookup copy (src/parquet/lookup.ts): its rows sorted by `column` in small row groups. */
export interface LookupEntry {
  column: string
  key: string
  bytes: number
  /** Start of its page indexes and footer: one read of [tailOffset, bytes) opens it. */
  tailOffset: number
  /** CRC-32 of [tailOffset, bytes), verified when read (absent in copies written before checksums). */
  tailCrc?: number
}

export interface PartitionEntry {
  key: string
  from: number
  to: number
  rows: number
  bytes: number
  /**
   * Start of everything after the last data page: page indexes, then bloom filters,
   * then the footer. One ranged read of [tailOffset, bytes) opens any partition.
   */
  tailOffset: number
  /**
   * Start of the footer (file metadata, its length, `PAR1`). Present with `blooms`:
   * the bloom filters fill [smallest bloom offset, footerOffset), so the page indexes
   * are [tailOffset, smallest bloom offset), and a query fetches those, the footer and
   * only the blooms of its filter columns. Absent in partitions written before.
   */
  footerOffset?: number
  /** Per column with bloom filters, the span of its blooms across all row groups (one range each). */
  blooms?: Record<string, ByteSpan>
  /**
   * CRC-32 of the page indexes [tailOffset, smallest bloom offset) and of the footer
   * [footerOffset, bytes); with them each bloom span has its `crc`. A reader verifies
   * every such range it fetches. Absent in partitions written before checksums.
   */
  indexCrc?: number
  footerCrc?: number
  rowGroups: RowGroupEntry[]
  /** Its lookup copy, for datasets that declare one (absent in partitions written before). */
  lookup?: LookupEntry
}

/** A byte range of an object. */
export interface ByteSpan {
  offset: number
  length: number
  /** CRC-32 of the span's bytes (bloom spans of partitions written with checksums). */
  crc?: number
}

export interface RowGroupEntry {
  /** Block range of the rows in the group (from column statistics). */
  from: number
  to: number
  rows: number
  /** Byte span of the group's column chunks. */
  offset: number
  length: number
}

/**
 * The value index in memory: what the manifest root carries per dataset (segment
 * descriptors), what a lookup hands the planner (partitions to open and the row groups
 * that may hold the values), and the decoded entries builds and merges work on.
 * The stored form is in `format.ts`; the design and its numbers in `README.md`.
 */
import type { BlockRange, ColumnSegment, PartitionEntry, SegmentDescriptor } from '../manifest/types.ts'

export type { ColumnSegment, SegmentDescriptor }

/** A value of an indexed column: an address or hash as its bytes, or text (a Move entry function). */
export type IndexValue = Uint8Array | string

/**
 * What the index keeps of a partition: enough to open it without loading a manifest
 * shard. Row-group spans and block ranges are not kept (they would multiply the index
 * size, see README): the partition's footer, which opening it reads anyway, has them.
 */
export type IndexedPartition = Pick<
  PartitionEntry,
  'key' | 'from' | 'to' | 'rows' | 'bytes' | 'tailOffset' | 'footerOffset' | 'indexCrc' | 'footerCrc' | 'lookup'
> & {
  /** Start of the bloom filters (the footer when there are none): [tailOffset, bloomOffset) are the page indexes. */
  bloomOffset?: number
  /** Row groups in the file: ordinals of a segment count through its partitions in this order. */
  rowGroupCount: number
}

/** A dataset's value index: where its objects live and its segments, oldest first. */
export interface ValueIndex {
  /** `<chain>/index/<dataset>` (see `indexPrefix`). */
  prefix: string
  segments: readonly SegmentDescriptor[]
}

/** An object to store. */
export interface IndexObject {
  key: string
  bytes: Uint8Array
}

/**
 * Sorted index entries, columnar (one entry per key; millions per column in a build, so no
 * object per entry): entry i has key keys[i]; a hot entry (hot[i] = 1) has no ordinals, the
 * others ordinals[start[i]..start[i + 1]), ascending row-group ordinals of the segment.
 */
export interface Entries {
  keys: Float64Array
  hot: Uint8Array
  start: Uint32Array
  ordinals: Uint32Array
  /** Inline rows of the entries (columns that store them): per entry its slice of the bucket's rows object. */
  rows?: EntryRows
}

/**
 * Where entry i's rows are in its bucket's rows object: `count[i]` rows (0: none stored, the
 * postings answer) in bytes [offset[i], offset[i] + length[i]) whose CRC-32 is crc[i].
 */
export interface EntryRows {
  count: Uint32Array
  offset: Float64Array
  length: Uint32Array
  crc: Uint32Array
}

/** A partition that may hold a looked-up value, with the ordinals (in its file) of the row groups that may. */
export interface Candidate {
  entry: IndexedPartition
  rowGroups: number[]
}

/** Where rows of a predicate may be: candidate row groups, and block ranges the index cannot narrow (scan them). */
export interface Candidates {
  /** Sorted by `from`; never inside a `scan` range. */
  partitions: Candidate[]
  scan: BlockRange[]
}

/** A value the index does not narrow in some block ranges (it was in too many row groups there). */
export interface HotValue {
  value: IndexValue
  ranges: BlockRange[]
}

/** A slice of a rows object: the inline rows of one key in one segment, and the CRC-32 that verifies a ranged read of it. */
export interface RowSlice {
  /** The rows object's key. */
  key: string
  offset: number
  length: number
  crc: number
  /** Rows it holds. */
  count: number
  /** The column and value looked up (the slice leaves the column out: its rows are restored with the value). */
  column: string
  value: IndexValue
}

/** A segment whose inline rows answer a lookup: every looked-up value is absent from it or has its rows there. */
export interface InlineSegment {
  /** Index of the segment in the index's list. */
  segment: number
  /** Its coverage, clipped to the lookup's range: no partition there needs opening. */
  ranges: BlockRange[]
  slices: RowSlice[]
  /** Rows of all its slices. */
  rows: number
}

/** The answer of `lookupValues`, with the I/O it cost. */
export interface LookupResult extends Candidates {
  hot: HotValue[]
  /** Segments answered by their inline rows (only with `LookupOptions.rows`); `partitions` and `scan` leave them out. */
  inline: InlineSegment[]
  /** Object reads issued (cache hits are free). */
  reads: number
  bytes: number
}

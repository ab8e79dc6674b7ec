/**
 * A dataset is declared once, as data. The Parquet schema, filter validation and
 * every output encoder are derived from these declarations (`parquetSchemaOf` in src/parquet/write.ts, `parseDataQuery` in src/api/params.ts, the encoders of src/format/), so a
 * field added here appears everywhere or the declaration test fails.
 */
import type { Kind } from './kinds.ts'

export type Family = 'evm' | 'move'

export interface FieldDecl {
  /** Output name, in the spec's spelling. */
  name: string
  kind: Kind
  /** The field may be null (JSON null, empty CSV cell, Arrow null). */
  nullable?: boolean
  /** Stored under another column name (a dataset that renames a stored field). */
  column?: string
  /**
   * Not stored: `chain` is the chain id of the request, `null` is always null
   * (the spec's `raw`). Virtual fields are filterable against that constant.
   */
  virtual?: 'chain' | 'null'
  /** Not in the default field set; returned when asked for with `fields=`. */
  extra?: boolean
  /** Write a split-block bloom filter: the column is hit by `__in` lookups of rare values. */
  bloom?: boolean
  /**
   * Keep it in the dataset's value index (src/index): an equality over the whole chain then
   * reads a handful of index objects instead of every partition. For columns looked up by value.
   * An object also sets how many rows of one value the index keeps inline (`IndexDecl`).
   */
  index?: boolean | IndexDecl
  /**
   * `false`: left out of the value index's inline rows (src/index): a large value most queries
   * do not ask for (a Move transaction's events and write-set changes). A query that reads the
   * field is answered from the partitions.
   */
  inline?: false
  /**
   * The values the field takes, when they are a closed set: `F=` and `F__in=` with any
   * other value are a 400 listing these (a misspelling would otherwise match nothing).
   */
  values?: readonly string[]
}

export interface DatasetDecl {
  /** Dataset name as it appears in the URL and in object keys. */
  name: string
  family: Family
  /** Path under /v1/api/ that serves it. */
  path: string
  /** Partitions this dataset reads; two datasets may share one storage (Move transactions and decoded). */
  storage: string
  /** Range key: stored column holding the block number (or Move version). */
  rangeKey: string
  /** Stored columns that order rows inside a partition and in every response. */
  orderBy: readonly string[]
  fields: readonly FieldDecl[]
  /** A lookup copy of every partition, for equality on one column (see src/parquet/lookup.ts). */
  lookup?: LookupDecl
}

/**
 * Each partition is also written sorted by `column` in row groups of `rowGroupSize`
 * rows. A row group's columns are contiguous in a Parquet file, so the rows of a rare
 * value (a contract's logs) are one ranged read per partition in that copy, where the
 * block-ordered partition scatters them over a page per column per row group.
 */
export interface LookupDecl {
  column: string
  rowGroupSize: number
  /**
   * Rows a lookup may always read, as a share of the partition's rows (default 1/16,
   * `LOOKUP_SHARE`; beyond it the lookup weighs bytes against the partition's scan); higher
   * where common values are spread over every page of the block-ordered partition.
   */
  share?: number
}

/**
 * An indexed field whose values are rare but not that rare (a wallet's swaps: a few hundred over
 * a chain's history, spread over every row group): the index stores the rows of a value in at
 * most `inlineRows` rows of a segment whose slice takes at most `inlineBytes`, instead of the
 * index's defaults (`INLINE_ROWS`, `INLINE_BYTES` in src/index/build.ts). Storage for reads:
 * see src/index/README.md "Inline rows".
 */
export interface IndexDecl {
  inlineRows: number
  inlineBytes: number
}

/** The stored column behind a field. */
export const columnOf = (f: FieldDecl): string => f.column ?? f.name

export const isStored = (f: FieldDecl): boolean => f.virtual === undefined

/** The stored columns of a dataset's value index (fields declared `index`), each once, in field order. */
export const indexedColumns = (d: DatasetDecl): string[] => [...new Set(d.fields.filter(f => f.index && isStored(f)).map(columnOf))]

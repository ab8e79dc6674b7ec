/**
 * The contract between the HTTP layer (parse → validate) and the engine
 * (plan → scan), and between the engine and the encoders.
 */
import type { Chain } from '../chains/registry.ts'
import type { DatasetDecl, FieldDecl } from '../schema/dataset.ts'
import type { Operator, StoredValue } from '../schema/kinds.ts'
import type { BlockRange } from '../manifest/types.ts'
import type { RowBatch } from '../columns/batch.ts'

/** One validated filter. `null` in `values` is the `%00` null marker. */
export interface Predicate {
  field: FieldDecl
  op: Operator
  values: (StoredValue | null)[]
}

export interface QuerySpec {
  chain: Chain
  dataset: DatasetDecl
  /** Block (or version) bounds; `latest` resolves against the manifest. */
  from: number | 'latest'
  to: number | 'latest'
  /** All predicates must hold (AND); `__in` values are OR-ed. */
  predicates: Predicate[]
  /** Output fields, in output order. */
  fields: FieldDecl[]
  /** At most this many rows; the response stops at a block boundary and reports where to resume. */
  limit?: number
}

/** I/O accounting, reported in response headers and by benchmarks. */
export interface ScanStats {
  partitionsTotal: number
  partitionsRead: number
  rowGroupsTotal: number
  rowGroupsRead: number
  /** Object-store requests and bytes, manifest included. */
  requests: number
  bytesFetched: number
  /** Rows decoded from Parquet before row-level filtering. */
  rowsScanned: number
}

export interface PlannedQuery {
  /** The range asked for, `latest` resolved. */
  range: BlockRange
  /** The stored parts of that range: what the response actually covers. */
  served: BlockRange[]
  /** The newest stored block (or version) of the dataset: where a poller stands. */
  latest: number
  /** Set when `limit` cut the response: the from_block that continues it. */
  nextFrom?: number
  stats: ScanStats
  batches: AsyncIterable<RowBatch>
}

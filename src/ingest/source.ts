/**
 * What the ingest loop needs from a chain: its head and verified rows for a block
 * range. The EVM source reads a JSON-RPC node (evm-source.ts); the Move-VM family
 * plugs its own source into the same loop (run.ts).
 */
import type { BlockRange } from '../manifest/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { PackedBatch } from '../columns/batch.ts'

export interface ChainSource {
  /** Datasets this source fills; batches are keyed by their `storage` name. */
  readonly datasets: readonly DatasetDecl[]
  /** Highest block (or version) the source can serve now. */
  head(): Promise<number>
  /**
   * Verified rows of every dataset for the inclusive range, sorted in each
   * declaration's order, packed (a source packs each step's rows as it makes them).
   * Throws when the source lacks any block of the range or its data does not verify;
   * never returns partial data.
   */
  fetch(range: BlockRange): Promise<Record<string, PackedBatch>>
}

/**
 * Compaction: finalized blocks leave the window as Parquet partitions, written by
 * the ingester's partition writer under content-hashed keys and published in one
 * manifest generation (the same atomic root swap), so the historical store keeps
 * up with the head by itself. Running it again over the same blocks writes the same
 * keys and publishes nothing new. Datasets are decoded and written one at a time,
 * so only one dataset's rows of the compacted blocks are in memory at once.
 */
import { concatBatches } from '../ingest/batch.ts'
import { readRoot } from '../ingest/run.ts'
import { putPartition } from '../parquet/put.ts'
import type { LayoutOptions } from '../parquet/write.ts'
import { DEFAULT_SHARD_SPAN } from '../manifest/publish.ts'
import type { BlockRange, ChainRef } from '../manifest/types.ts'
import { publishIndexed, type DatasetWrites } from '../index/publish.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { decodeRows } from './block-codec.ts'
import type { WindowBlock } from './window.ts'

export interface CompactionResult {
  /** Partition ranges written (the same for every dataset). */
  ranges: BlockRange[]
  /** Manifest generation after publication. */
  generation: number
  rows: Record<string, number>
  bytes: Record<string, number>
}

/** Contiguous runs of blocks cut at manifest shard boundaries (a partition never crosses one). */
export function partitionRanges(blocks: readonly { number: number }[], shardSpan: number): BlockRange[] {
  const out: BlockRange[] = []
  for (const b of blocks) {
    const last = out[out.length - 1]
    if (last && b.number === last[1] + 1 && Math.floor(b.number / shardSpan) === Math.floor(last[0] / shardSpan)) last[1] = b.number
    else out.push([b.number, b.number])
  }
  return out
}

/** Writes and publishes partitions for `blocks` (ascending, final); returns what was published. */
export async function compactBlocks(
  store: ObjectStore,
  chain: ChainRef,
  datasets: readonly DatasetDecl[],
  blocks: readonly WindowBlock[],
  layout: LayoutOptions = {},
): Promise<CompactionResult> {
  const root = await readRoot(store, chain)
  const ranges = partitionRanges(blocks, root?.shardSpan ?? DEFAULT_SHARD_SPAN)
  const writes: DatasetWrites[] = []
  const rows: Record<string, number> = {}
  const bytes: Record<string, number> = {}
  for (const dataset of datasets) {
    const written: DatasetWrites = { dataset, partitions: [] }
    writes.push(written)
    rows[dataset.storage] = 0
    bytes[dataset.storage] = 0
    for (const [from, to] of ranges) {
      const parts = await Promise.all(
        blocks.filter(b => b.number >= from && b.number <= to).map(b => decodeRows(dataset, b.data[dataset.storage])),
      )
      const batch = concatBatches(parts)
      const { entry } = await putPartition(store, chain, dataset, batch, { from, to }, layout)
      written.partitions.push({ entry, batch })
      rows[dataset.storage] += entry.rows
      bytes[dataset.storage] += entry.bytes
      // Writing is synchronous: let live blocks through between partitions.
      await new Promise(r => setTimeout(r, 0))
    }
  }
  const published = await publishIndexed(store, chain, writes)
  return { ranges, generation: published.root.generation, rows, bytes }
}

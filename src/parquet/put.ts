/**
 * Stores one partition, and its lookup copy when the dataset declares one, under
 * content-addressed keys, and returns its manifest entry. Every writer of partitions
 * (the ingester, live compaction, the benchmark lakes) goes through here, so what a
 * manifest entry promises is always in the store before the entry is published.
 */
import { contentHash, partitionKey } from '../manifest/keys.ts'
import type { ChainRef, PartitionEntry } from '../manifest/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { crc32 } from '../store/crc32.ts'
import { lookupWorthwhile, writeLookup } from './lookup.ts'
import { writePartition, type LayoutOptions } from './write.ts'
import type { ColumnBatch, PackedBatch } from '../columns/batch.ts'

const PARQUET = { contentType: 'application/vnd.apache.parquet' }

/** Puts `bytes` at their content key unless an object of that size is there already (a rerun); true when skipped. */
async function putOnce(store: ObjectStore, key: string, bytes: Uint8Array): Promise<boolean> {
  const existing = await store.head(key)
  if (existing?.size === bytes.length) return true
  await store.put(key, bytes, PARQUET)
  return false
}

export interface PutPartition {
  entry: PartitionEntry
  /** Objects already stored by an earlier run (not written again). */
  skipped: number
}

/** A partition ready to store: its objects (the partition, and its lookup copy if any) and its manifest entry. */
export interface EncodedPartition {
  entry: PartitionEntry
  objects: { key: string; bytes: Uint8Array }[]
}

/** Writes `batch` (in the dataset's order) as the partition of blocks `range`. */
export async function putPartition(
  store: ObjectStore,
  chain: ChainRef,
  dataset: DatasetDecl,
  batch: ColumnBatch | PackedBatch,
  range: { from: number; to: number },
  layout?: LayoutOptions,
): Promise<PutPartition> {
  const encoded = await encodePartition(chain, dataset, batch, range, layout)
  return { entry: encoded.entry, skipped: await putEncoded(store, encoded) }
}

/** The partition's bytes and entry, without storing them: pure CPU, so the Node ingester runs it in worker threads. */
export async function encodePartition(
  chain: ChainRef,
  dataset: DatasetDecl,
  batch: ColumnBatch | PackedBatch,
  range: { from: number; to: number },
  layout?: LayoutOptions,
): Promise<EncodedPartition> {
  const written = writePartition(dataset, batch, range, layout)
  const key = partitionKey(chain, dataset.storage, range.from, range.to, await contentHash(written.bytes))
  const objects = [{ key, bytes: written.bytes }]
  const entry: PartitionEntry = { key, ...written.entry }
  // A small partition gets no copy: a lookup could never read less of it than the partition itself.
  if (dataset.lookup && lookupWorthwhile(batch.length, dataset.lookup)) {
    const lookup = writeLookup({ ...dataset, lookup: dataset.lookup }, batch, range)
    const lookupKey = partitionKey(
      chain,
      `${dataset.storage}/by-${dataset.lookup.column}`,
      range.from,
      range.to,
      await contentHash(lookup.bytes),
    )
    objects.push({ key: lookupKey, bytes: lookup.bytes })
    const { tailOffset } = lookup.entry
    const tailCrc = crc32(lookup.bytes.subarray(tailOffset))
    entry.lookup = { column: dataset.lookup.column, key: lookupKey, bytes: lookup.bytes.length, tailOffset, tailCrc }
  }
  return { entry, objects }
}

/** Stores an encoded partition's objects (those already there are skipped); returns how many were skipped. */
export async function putEncoded(store: ObjectStore, encoded: EncodedPartition): Promise<number> {
  let skipped = 0
  for (const { key, bytes } of encoded.objects) if (await putOnce(store, key, bytes)) skipped++
  return skipped
}

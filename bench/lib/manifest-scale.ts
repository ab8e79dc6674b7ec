/**
 * What the manifest costs at full-chain scale, computed by encoding a synthetic
 * manifest of the given shape (not estimated by hand): bytes of the root and of
 * each shard that a query loads.
 */
import { encodeRoot, encodeShard } from '../../src/manifest/codec.ts'
import { partitionKey, shardKey } from '../../src/manifest/keys.ts'
import { MANIFEST_FORMAT, type ChainRef, type ManifestRoot, type ManifestShard, type PartitionEntry } from '../../src/manifest/types.ts'

export interface ScaleShape {
  blocks: number
  /** Rows per block of the dataset measured (logs: ~300 on recent mainnet). */
  rowsPerBlock: number
  partitionBlocks: number
  rowGroupRows: number
  shardSpan: number
  /** Datasets in the root (blocks, transactions, logs). */
  datasets: number
}

export interface ScaleFigures {
  rootBytes: number
  shardBytes: number
  shards: number
  rowGroups: number
  oneBlockQueryBytes: number
  wholeChainQueryBytes: number
}

const size = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length

export function manifestScale(shape: ScaleShape): ScaleFigures {
  const chain: ChainRef = { family: 'evm', id: 1, code: 'ETH' }
  const partitionsPerShard = shape.shardSpan / shape.partitionBlocks
  const rowsPerPartition = shape.partitionBlocks * shape.rowsPerBlock
  const groups = Math.ceil(rowsPerPartition / shape.rowGroupRows)
  const blocksPerGroup = shape.partitionBlocks / groups
  const bytesPerRow = 90
  const partitions: PartitionEntry[] = Array.from({ length: partitionsPerShard }, (_, p) => {
    const from = 24_000_000 + p * shape.partitionBlocks
    const to = from + shape.partitionBlocks - 1
    return {
      key: partitionKey(chain, 'logs', from, to, 'f'.repeat(64)),
      from,
      to,
      rows: rowsPerPartition,
      bytes: rowsPerPartition * bytesPerRow,
      tailOffset: rowsPerPartition * bytesPerRow - 400_000,
      footerOffset: rowsPerPartition * bytesPerRow - 40_000,
      blooms: Object.fromEntries(
        ['transaction_hash', 'address', 'topic0', 'topic1', 'topic2', 'topic3'].map((c, i) => [
          c,
          { offset: rowsPerPartition * bytesPerRow - 360_000 + i * 50_000, length: 50_000 },
        ]),
      ),
      rowGroups: Array.from({ length: groups }, (_, g) => ({
        from: Math.floor(from + g * blocksPerGroup),
        to: Math.floor(from + (g + 1) * blocksPerGroup) - 1,
        rows: shape.rowGroupRows,
        offset: 4 + g * shape.rowGroupRows * bytesPerRow,
        length: shape.rowGroupRows * bytesPerRow,
      })),
    }
  })
  const shard: ManifestShard = { format: MANIFEST_FORMAT, chain, dataset: 'logs', index: 240, generation: 123456, partitions }
  const shards = Math.ceil(shape.blocks / shape.shardSpan)
  const ref = (i: number) => ({
    index: i,
    key: shardKey(chain, 'logs', i, 123456),
    from: i * shape.shardSpan,
    to: (i + 1) * shape.shardSpan - 1,
    partitions: partitionsPerShard,
    rows: rowsPerPartition * partitionsPerShard,
    bytes: rowsPerPartition * partitionsPerShard * bytesPerRow,
  })
  const root: ManifestRoot = {
    format: MANIFEST_FORMAT,
    chain,
    generation: 123456,
    shardSpan: shape.shardSpan,
    updatedAt: new Date(0).toISOString(),
    datasets: Object.fromEntries(
      Array.from({ length: shape.datasets }, (_, d) => [
        ['blocks', 'transactions', 'logs'][d] ?? `d${d}`,
        { coverage: [[0, shape.blocks - 1]], rows: 0, bytes: 0, shards: Array.from({ length: shards }, (_, i) => ref(i)) },
      ]),
    ),
  }
  const rootBytes = size(encodeRoot(root))
  const shardBytes = size(encodeShard(shard))
  return {
    rootBytes,
    shardBytes,
    shards,
    rowGroups: shards * partitionsPerShard * groups,
    oneBlockQueryBytes: rootBytes + shardBytes,
    wholeChainQueryBytes: rootBytes + shards * shardBytes,
  }
}

/**
 * `npm run bench -- manifest`: manifest bytes a query loads at full Ethereum scale
 * (25 M blocks), computed by encoding a manifest of that shape (bench/lib/manifest-scale.ts).
 */
import { findChain } from '../src/chains/registry.ts'
import { DEFAULT_PARTITION_BLOCKS, partitionBlocksOf } from '../src/ingest/run.ts'
import { DEFAULT_LAYOUT } from '../src/parquet/write.ts'
import { DEFAULT_SHARD_SPAN } from '../src/manifest/publish.ts'
import { manifestScale } from './lib/manifest-scale.ts'
import { bytes, int, table } from './report.ts'
import type { Section } from './section.ts'

const BLOCKS = 25_000_000
const LOGS_PER_BLOCK = 280

/** Ethereum's partitions as the ingester writes them by default (the registry's span). */
const ETH_PARTITION_BLOCKS = partitionBlocksOf(findChain('evm', 'ETH')!)

export const manifest: Section = {
  name: 'manifest',
  title: 'manifest bytes a one-block and a whole-chain query load at 25 M blocks',
  slow: false,
  async run() {
    const shapes = [
      [DEFAULT_SHARD_SPAN, ETH_PARTITION_BLOCKS],
      [DEFAULT_SHARD_SPAN, DEFAULT_PARTITION_BLOCKS],
      [1_000_000, ETH_PARTITION_BLOCKS],
    ].filter(([s, p], i, all) => all.findIndex(([s2, p2]) => s2 === s && p2 === p) === i)
    const rows = shapes.map(([shardSpan, partitionBlocks]) => {
      const s = manifestScale({
        blocks: BLOCKS,
        rowsPerBlock: LOGS_PER_BLOCK,
        partitionBlocks,
        rowGroupRows: DEFAULT_LAYOUT.rowGroupSize,
        shardSpan,
        datasets: 3,
      })
      const isDefault = shardSpan === DEFAULT_SHARD_SPAN && partitionBlocks === ETH_PARTITION_BLOCKS
      return [
        int(shardSpan) + (isDefault ? ' (default)' : ''),
        int(partitionBlocks) + (isDefault ? " (Ethereum's default)" : ''),
        int(s.shards),
        int(s.rowGroups),
        bytes(s.rootBytes),
        bytes(s.shardBytes),
        bytes(s.oneBlockQueryBytes),
        bytes(s.wholeChainQueryBytes),
      ]
    })
    return [
      `shape: ${int(BLOCKS)} blocks, ${LOGS_PER_BLOCK} logs per block, row groups of ${int(DEFAULT_LAYOUT.rowGroupSize)} rows, 3 datasets in the root`,
      '',
      table(
        [
          'shard span (blocks)',
          'partition (blocks)',
          'logs shards',
          'row groups',
          'root',
          'one shard',
          'one-block query',
          'whole-chain query',
        ],
        rows,
      ),
    ].join('\n')
  },
}

/**
 * `npm run bench -- manifest`: manifest bytes a query loads at full Ethereum scale
 * (25 M blocks), computed by encoding a manifest of that shape (bench/lib/manifest-scale.ts).
 */
import { DEFAULT_PARTITION_BLOCKS } from '../src/ingest/run.ts'
import { DEFAULT_LAYOUT } from '../src/parquet/write.ts'
import { DEFAULT_SHARD_SPAN } from '../src/manifest/publish.ts'
import { manifestScale } from './lib/manifest-scale.ts'
import { bytes, int, table } from './report.ts'
import type { Section } from './section.ts'

const BLOCKS = 25_000_000
const LOGS_PER_BLOCK = 280

export const manifest: Section = {
  name: 'manifest',
  title: 'manifest bytes a one-block and a whole-chain query load at 25 M blocks',
  slow: false,
  async run() {
    const spans = [DEFAULT_SHARD_SPAN, 1_000_000].filter((s, i, all) => all.indexOf(s) === i)
    const rows = spans.map(shardSpan => {
      const s = manifestScale({
        blocks: BLOCKS,
        rowsPerBlock: LOGS_PER_BLOCK,
        partitionBlocks: DEFAULT_PARTITION_BLOCKS,
        rowGroupRows: DEFAULT_LAYOUT.rowGroupSize,
        shardSpan,
        datasets: 3,
      })
      return [
        int(shardSpan) + (shardSpan === DEFAULT_SHARD_SPAN ? ' (default)' : ''),
        int(s.shards),
        int(s.rowGroups),
        bytes(s.rootBytes),
        bytes(s.shardBytes),
        bytes(s.oneBlockQueryBytes),
        bytes(s.wholeChainQueryBytes),
      ]
    })
    return [
      `shape: ${int(BLOCKS)} blocks, ${LOGS_PER_BLOCK} logs per block, partitions of ${int(DEFAULT_PARTITION_BLOCKS)} blocks, row groups of ${int(DEFAULT_LAYOUT.rowGroupSize)} rows, 3 datasets in the root`,
      '',
      table(['shard span (blocks)', 'logs shards', 'row groups', 'root', 'one shard', 'one-block query', 'whole-chain query'], rows),
    ].join('\n')
  },
}

/**
 * `npm run bench -- move`: the Move-VM figures of bench/lib/move-lake.ts: ingest rate from
 * the replay server (shared/tools/replay-aptos.mjs), Parquet bytes per transaction
 * against the REST JSON, and queries by sender and by entry function over a
 * generated lake of ≥200,000 transactions, with object-store requests and bytes.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { MoveBench } from './lib/move-lake.ts'
import { cacheDir, sourceHash } from './cache.ts'
import { bytes, int, ms, table } from './report.ts'
import type { Section } from './section.ts'

const TRANSACTIONS = 200_000
/** Files whose content decides the Move query lake's bytes. */
const SOURCES = [
  'scripts/dev/random.ts',
  'scripts/dev/move-sample.ts',
  'src/move/transform.ts',
  'src/datasets/move.ts',
  'src/parquet/write.ts',
  'src/schema/kinds.ts',
  'src/manifest/codec.ts',
]

/** Markdown of the Move figures. */
export function moveReport(r: MoveBench): string {
  return [
    '### Ingest',
    '',
    table(
      ['source', 'transactions', 'runs', 'ms', 'transactions/s', 'Parquet B/tx', 'REST JSON B/tx'],
      r.ingest.map(i => [
        i.source,
        int(i.transactions),
        i.runs,
        ms(i.elapsedMs),
        int(i.transactionsPerSecond),
        i.parquetBytesPerTransaction.toFixed(1),
        i.restBytesPerTransaction.toFixed(1),
      ]),
    ),
    '',
    `### Queries (lake: ${int(r.lake.transactions)} transactions in ${r.lake.partitions} partitions, ${bytes(r.lake.bytes)}, ${r.lake.bytesPerTransaction.toFixed(1)} B/tx${r.lake.buildMs === null ? ', reused' : `, built in ${(r.lake.buildMs / 1000).toFixed(0)} s`})`,
    '',
    table(
      ['query', 'filter', 'rows', 'requests (cold)', 'bytes fetched (cold)', 'partitions', 'row groups', 'cold ms', 'warm ms'],
      r.queries.map(q => [
        q.name,
        `\`${q.filter}\``,
        int(q.rows),
        q.requests,
        bytes(q.bytesFetched),
        q.partitionsRead,
        q.rowGroupsRead,
        ms(q.coldMs),
        ms(q.warmMs),
      ]),
    ),
  ].join('\n')
}

export const move: Section = {
  name: 'move',
  title: 'Move-VM ingest rate, bytes per transaction, queries by sender and function over ≥200k transactions',
  slow: false,
  async run(ctx) {
    const replayScript = join(process.env.SHARED_DIR ?? join(ctx.root, '..', 'shared'), 'tools', 'replay-aptos.mjs')
    if (!existsSync(replayScript)) return `skipped: ${replayScript} not found (set SHARED_DIR)`
    const { benchMove } = await import('./lib/move-lake.ts')
    const lakeDir = cacheDir(ctx.cache, `move-lake-${TRANSACTIONS}`, sourceHash(ctx.root, SOURCES))
    return moveReport(await benchMove({ replayScript, lakeDir, lakeTransactions: TRANSACTIONS, log: ctx.log }))
  },
}

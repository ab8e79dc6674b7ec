/**
 * `npm run bench -- layout`: the measurements behind the writer's row-group size and
 * sort order (bench/lib/layout-lake.ts). Slow the first time (five 1M-log lakes are
 * written and cached), so a plain `npm run bench` leaves it out.
 */
import { benchLayout } from './lib/layout-lake.ts'
import { DEFAULT_LAYOUT } from '../src/parquet/write.ts'
import type { QueryFigures } from './lib/lake.ts'
import { cacheDir, LAKE_SOURCES, sourceHash } from './cache.ts'
import { bytes, int, ms, table } from './report.ts'
import type { Section } from './section.ts'

const LOGS = 1_000_000

export const layout: Section = {
  name: 'layout',
  title: 'row-group size and sort order inside a partition, measured on 1M logs',
  slow: true,
  async run(ctx) {
    const r = await benchLayout({
      cacheDir: cacheDir(ctx.cache, `layout-${LOGS}`, sourceHash(ctx.root, LAKE_SOURCES)),
      logs: LOGS,
      log: ctx.log,
    })
    const q = (qs: QueryFigures[], p: string) => qs.find(x => x.name.startsWith(p))!
    const sizes = table(
      [
        'rows per group',
        'file bytes',
        '(a) ms',
        '(a) requests',
        '(a) rounds',
        '(a) bytes',
        '(a) row groups',
        '(b) ms',
        '(b) requests',
        '(b) bytes',
        '(c) ms',
        '(c) rows/s',
        '(c) bytes',
      ],
      r.rowGroups.map(g => {
        const [a, b, c] = ['(a)', '(b)', '(c)'].map(p => q(g.queries, p))
        const mark = g.rowGroupSize === DEFAULT_LAYOUT.rowGroupSize ? ' (default)' : ''
        return [
          int(g.rowGroupSize) + mark,
          bytes(g.fileBytes),
          ms(a.ms),
          a.requests,
          a.rounds,
          bytes(a.bytes),
          a.rowGroupsRead,
          ms(b.ms),
          b.requests,
          bytes(b.bytes),
          ms(c.ms),
          int(c.rowsPerSecond),
          bytes(c.bytes),
        ]
      }),
    )
    const sorts = table(
      [
        'order (hyparquet parquetScan, rows per group)',
        'file bytes',
        '(a) rows',
        '(a) ranges / rows kept',
        '(a) requests',
        '(a) bytes',
        '(a) ms',
        '(b) rows',
        '(b) ranges / rows kept',
        '(b) requests',
        '(b) bytes',
        '(b) ms',
      ],
      r.sorts.map(s => [
        `${s.order} (${int(s.rowGroupSize)})`,
        bytes(s.fileBytes),
        s.a.rows,
        `${s.a.ranges} / ${int(s.a.rowsInRanges)}`,
        s.a.requests,
        bytes(s.a.bytes),
        ms(s.a.ms),
        s.b.rows,
        `${s.b.ranges} / ${int(s.b.rowsInRanges)}`,
        s.b.requests,
        bytes(s.b.bytes),
        ms(s.b.ms),
      ]),
    )
    return [
      `${int(r.rows)} logs in ${r.files} partitions of 500 blocks each; page size ${int(DEFAULT_LAYOUT.pageSize)} bytes`,
      '',
      '#### Row-group size (block order, through the engine: `runQuery`, median of 5)',
      '',
      sizes,
      '',
      '#### Sort order ((a) and (b) read with hyparquet directly: prune, read the filter columns of each kept range, then the output columns of the matching rows; every slice counts as a request)',
      '',
      sorts,
      '',
      `Re-sorting one filter-first partition into (block_number, log_index) order before its first row can stream: ${int(r.resort.rows)} rows decoded and held, ${ms(r.resort.ms)} ms, ~${bytes(r.resort.heapBytes)} of heap.`,
    ].join('\n')
  },
}

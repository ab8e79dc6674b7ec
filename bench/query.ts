/**
 * `npm run bench -- query`: queries (a), (b) and (c) and the everyday query classes on the
 * ≥1M-log lake through the real HTTP path (bench/lib/http.ts), against DuckDB on the same
 * files, with the issue's targets checked.
 *
 * `BENCH_QUERY_VALUES` picks the values the classes run on: `planted` (default: the planted
 * needles and fixed pool values the engine was tuned on), `alt` (other values of the same
 * classes, picked from the lake's files by DuckDB and named in the table with what they are:
 * another hot and warm contract, a rare address, four event signatures from the most to the
 * least frequent, unplanted wallets, a mixed 20-contract list, the first and last transaction,
 * the busiest sender, the first and last blocks), or `both`. Every class's rows must equal
 * DuckDB's count.
 */
import { benchHttp, valueSetOf, type HttpQueryFigures } from './lib/http.ts'
import { lakeDir } from './cache.ts'
import { bytes, int, ms, ratio, table, target } from './report.ts'
import type { Section } from './section.ts'

const LOGS = 1_000_000

export const query: Section = {
  name: 'query',
  title:
    'query classes (rare, warm and hot contract + event, one event everywhere, wallet as topic, 20 contracts, one block, 100 blocks, exports) over HTTP (workerd and Node) vs DuckDB',
  slow: false,
  async run(ctx) {
    const dir = lakeDir(ctx.root, ctx.cache, LOGS)
    const values = valueSetOf(process.env.BENCH_QUERY_VALUES)
    const r = await benchHttp({ dir, root: ctx.root, logs: LOGS, log: ctx.log, values })
    const f = (name: string) => r.figures.find(x => x.name.startsWith(name))
    const served = (x: HttpQueryFigures, s: 'workerd' | 'node') => x.served[s]
    const timing = table(
      [
        'query',
        'rows',
        'workerd ms',
        'workerd rows/s',
        'TTFB ms',
        'Node ms',
        'Node rows/s',
        'DuckDB ms',
        'workerd / DuckDB',
        'Node / DuckDB',
        'response',
      ],
      r.figures.map(x => {
        const w = served(x, 'workerd')
        const n = served(x, 'node')
        return [
          x.name,
          int(x.rows) + (x.duckdbRows === x.rows ? '' : ` (DuckDB ${int(x.duckdbRows)}!)`),
          w ? ms(w.ms) : '-',
          w ? int(w.rowsPerSecond) : '-',
          w ? ms(w.ttfbMs) : '-',
          n ? ms(n.ms) : '-',
          n ? int(n.rowsPerSecond) : '-',
          ms(x.duckdbMs),
          w ? ratio(w.ms, x.duckdbMs) : '-',
          n ? ratio(n.ms, x.duckdbMs) : '-',
          bytes((w ?? n)!.responseBytes),
        ]
      }),
    )
    const io = table(
      [
        'query',
        'requests (warm)',
        'rounds (warm)',
        'bytes fetched (warm)',
        'requests (cold)',
        'rounds (cold)',
        'bytes fetched (cold)',
        'headers: requests / bytes',
      ],
      r.figures.map(x => {
        const h = served(x, 'workerd') ?? served(x, 'node')!
        return [
          x.name,
          x.requests,
          x.rounds,
          bytes(x.bytesFetched),
          x.coldRequests,
          x.coldRounds,
          bytes(x.coldBytes),
          `${h.headerRequests} / ${bytes(h.headerBytes)}`,
        ]
      }),
    )
    const a = f('(a)')
    const b = f('(b)')
    const arrow = f('(c) export arrow')
    const faster = (x: HttpQueryFigures) =>
      (['workerd', 'node'] as const)
        .filter(s => x.served[s])
        .map(s => `${s} ${ratio(x.served[s]!.ms, x.duckdbMs)}×`)
        .join(', ')
    const primary = (x: HttpQueryFigures) => (x.served.workerd ?? x.served.node)!
    const aTargets = (a: HttpQueryFigures, needed: number) => {
      const budget = 2 * (needed + r.manifestBytes)
      return [
        target(primary(a).ms < a.duckdbMs, `(a) faster than DuckDB (ours / DuckDB: ${faster(a)})`),
        target(
          a.rounds <= 3,
          `(a) at most 3 sequential object-store rounds: ${a.rounds} warm (manifest and partition tails cached), ${a.coldRounds} on a fresh server (root, shard, then tails first)`,
        ),
        target(
          a.bytesFetched <= budget,
          `(a) bytes fetched at most 2 × (pages holding the matching rows, every returned column: ${bytes(needed)} + manifest ${bytes(r.manifestBytes)}) = ${bytes(budget)}: fetched ${bytes(a.bytesFetched)} warm (${ratio(a.bytesFetched, needed + r.manifestBytes)}×), ${bytes(a.coldBytes)} on a fresh server (${ratio(a.coldBytes, needed + r.manifestBytes)}×)`,
        ),
      ]
    }
    const targets = [
      ...(a && r.neededBytesA !== undefined ? aTargets(a, r.neededBytesA) : []),
      ...(b ? [target(primary(b).ms < b.duckdbMs, `(b) faster than DuckDB (ours / DuckDB: ${faster(b)})`)] : []),
      ...(arrow
        ? [
            target(
              primary(arrow).rowsPerSecond >= 1_000_000,
              `(c) arrow at least 1 M rows/s: ${int(primary(arrow).rowsPerSecond)} rows/s through workerd${arrow.served.node ? `, ${int(arrow.served.node.rowsPerSecond)} through Node` : ''}`,
            ),
          ]
        : []),
      // Every class returns DuckDB's rows (the values differ from run to run only with the lake).
      target(
        r.figures.every(x => x.rows === x.duckdbRows),
        `every query's rows equal DuckDB's count${r.figures
          .filter(x => x.rows !== x.duckdbRows)
          .map(x => `; ${x.name}: ${int(x.rows)} against ${int(x.duckdbRows)}`)
          .join('')}`,
      ),
      // Issue 10: every class at most DuckDB's time on the Node server, at most 1.5× in workerd.
      ...r.figures
        .filter(x => !x.name.startsWith('(c)'))
        .map(x =>
          target(
            (x.served.node ? x.served.node.ms <= x.duckdbMs : true) && (x.served.workerd ? x.served.workerd.ms <= 1.5 * x.duckdbMs : true),
            `${x.name}: Node at most DuckDB's time, workerd at most 1.5× (ours / DuckDB: ${faster(x)})`,
          ),
        ),
    ]
    return [
      `lake: ${int(r.lake.rows)} logs in blocks ${r.lake.from}-${r.lake.to} (~${Math.round(r.lake.rows / (r.lake.to - r.lake.from + 1))} per block), ${r.lake.files} files, ${bytes(r.lake.bytes)} (lookup copies by address: ${bytes(r.lake.lookupBytes)} more); manifest ${bytes(r.manifestBytes)}${r.bundleBytes ? `; Worker bundle ${bytes(r.bundleBytes)}` : ''}`,
      `writing one partition of ${int(r.lookupCost.rows)} logs (the lake's first): ${ms(r.lookupCost.partitionMs)} ms, ${bytes(r.lookupCost.partitionBytes)}; its lookup copy: ${ms(r.lookupCost.lookupMs)} ms (sort included), ${bytes(r.lookupCost.lookupBytes)}`,
      ...(r.transactions
        ? [
            `transactions: ${int(r.transactions.rows)} in ${bytes(r.transactions.bytes)} (lookup copies by from: ${bytes(r.transactions.lookupBytes)} more); writing the first partition of ${int(r.transactions.lookupCost.rows)}: ${ms(r.transactions.lookupCost.partitionMs)} ms, ${bytes(r.transactions.lookupCost.partitionBytes)}; its lookup copy: ${ms(r.transactions.lookupCost.lookupMs)} ms (sort included), ${bytes(r.transactions.lookupCost.lookupBytes)}`,
          ]
        : []),
      ...(r.r2Cost
        ? [
            `Miniflare's local R2, measured from a Worker (what the workerd column pays per read): ${r.r2Cost.msPerRequest.toFixed(2)} ms per 8 KiB get with 100 in flight, ${r.r2Cost.msPerMB.toFixed(2)} ms per MB beyond that`,
          ]
        : []),
      '',
      timing,
      '',
      io,
      '',
      ...targets,
    ].join('\n')
  },
}

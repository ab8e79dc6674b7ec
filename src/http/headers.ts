/**
 * Response headers that describe what a query served: the resolved range, the
 * stored block ranges inside it (coverage is never silent), where to resume after
 * `limit`, which filters pruned storage and how much I/O that saved. Browsers may
 * read them (CORS).
 */
import type { BlockRange } from '../manifest/types.ts'
import type { IndexUse } from '../query/engine.ts'
import type { PlannedQuery } from '../query/types.ts'

/** Most ranges listed in X-Blocks-Served; past this the list ends with X-Blocks-Served-Truncated. */
export const MAX_SERVED_RANGES = 100

/** Headers a browser script may read (Access-Control-Expose-Headers). */
export const EXPOSED_HEADERS = [
  'X-Block-Range',
  'X-Blocks-Served',
  'X-Blocks-Served-Truncated',
  'X-Next-From-Block',
  'X-Latest-Block',
  'X-Finalized-Block',
  'X-Partitions-Read',
  'X-Partitions-Skipped',
  'X-Row-Groups-Read',
  'X-Row-Groups-Skipped',
  'X-Rows-Scanned',
  'X-Filters-Pushed-Down',
  'X-Index',
  'X-Index-Hot',
  'X-Index-Rows',
  'X-Storage-Requests',
  'X-Bytes-Fetched',
  'Retry-After',
  'WWW-Authenticate',
] as const

/** CORS: any origin may call the API; credentials travel in the Authorization header, never cookies. */
export const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': EXPOSED_HEADERS.join(', '),
}

/** Answer to a CORS preflight (OPTIONS), which browsers send without credentials. */
export const PREFLIGHT_HEADERS: Record<string, string> = {
  ...CORS_HEADERS,
  'Access-Control-Allow-Methods': 'GET, HEAD',
  // Range is accepted and ignored: every answer is the whole response (200).
  'Access-Control-Allow-Headers': 'Authorization, Accept, Accept-Encoding, Range',
  'Access-Control-Max-Age': '86400',
}

/** `100-200,300-400` */
export const formatRanges = (ranges: readonly BlockRange[]): string => ranges.map(([a, b]) => `${a}-${b}`).join(',')

/**
 * The headers of a planned query. Statistics are those known when the response
 * starts (planning and the first batch); the scan goes on while the body streams.
 */
export function queryHeaders(planned: PlannedQuery & { pushed?: readonly string[]; index?: IndexUse }): Record<string, string> {
  const { stats } = planned
  const served = planned.served.slice(0, MAX_SERVED_RANGES)
  return {
    // Empty (from above to) only for a poll above the newest block.
    ...(planned.range[0] <= planned.range[1] ? { 'X-Block-Range': formatRanges([planned.range]) } : {}),
    'X-Latest-Block': String(planned.latest),
    'X-Blocks-Served': formatRanges(served),
    ...(planned.served.length > MAX_SERVED_RANGES ? { 'X-Blocks-Served-Truncated': 'true' } : {}),
    ...(planned.nextFrom === undefined ? {} : { 'X-Next-From-Block': String(planned.nextFrom) }),
    'X-Partitions-Read': String(stats.partitionsRead),
    'X-Partitions-Skipped': String(stats.partitionsTotal - stats.partitionsRead),
    'X-Row-Groups-Read': String(stats.rowGroupsRead),
    'X-Row-Groups-Skipped': String(stats.rowGroupsTotal - stats.rowGroupsRead),
    'X-Rows-Scanned': String(stats.rowsScanned),
    ...(planned.pushed?.length ? { 'X-Filters-Pushed-Down': planned.pushed.join(',') } : {}),
    ...indexHeaders(planned.index),
    'X-Storage-Requests': String(stats.requests),
    'X-Bytes-Fetched': String(stats.bytesFetched),
  }
}

/**
 * `X-Index`: the indexed columns the value index looked up (absent when it was not used);
 * `X-Index-Hot`: per column, the blocks where a looked-up value was too common to index, which
 * were scanned partition by partition instead (`topic0=100-200,300-400;address=…`);
 * `X-Index-Rows`: rows read from the index's own copy of rare values' rows (absent when none), where no partition was opened.
 */
function indexHeaders(index: IndexUse | undefined): Record<string, string> {
  if (!index) return {}
  const hot = index.hot.map(h => `${h.column}=${formatRanges(h.ranges.slice(0, MAX_SERVED_RANGES))}`).join(';')
  return {
    'X-Index': index.columns.join(','),
    ...(hot ? { 'X-Index-Hot': hot } : {}),
    ...(index.rows > 0 ? { 'X-Index-Rows': String(index.rows) } : {}),
  }
}

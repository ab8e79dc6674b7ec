/**
 * One structured line per request: who (the user, never credentials), what (method,
 * path and query), the answer (status, error code), and for a data stream what it cost
 * (rows, storage requests and bytes) and how it ended: `complete`, or `aborted` with the
 * cause (a storage failure, the client going away). A stream that fails part-way never
 * looks complete to the client; this line says why to the operator.
 */
import type { MiddlewareHandler } from 'hono'
import type { RowBatch } from '../columns/batch.ts'
import type { ScanStats } from '../query/types.ts'
import type { PipelineEnv } from './middleware.ts'

/** What a data stream reports when it ends. */
export interface StreamEnd {
  rows: number
  stats: ScanStats
  /** Why it stopped early; absent when every row was sent. */
  aborted?: string
  /** What stopped it, when something failed (not when the client went away). */
  error?: unknown
}

/** Where a route hands its stream's ending, so the request's line is written then. */
export type StreamObserver = (end: StreamEnd) => void

/** Writes each request's line once its answer is known (at once, or when its stream ends). */
export function accessLog(write: (line: string) => void): MiddlewareHandler<PipelineEnv> {
  return async function accessLog(c, next) {
    const started = Date.now()
    const url = new URL(c.req.url)
    const line = (fields: Record<string, unknown>) =>
      write(
        JSON.stringify({
          at: new Date(started).toISOString(),
          method: c.req.method,
          path: url.pathname + url.search,
          user: c.get('user') ?? null,
          status: c.res.status,
          ms: Date.now() - started,
          ...fields,
        }),
      )
    let streaming = false
    c.set('observe', end => {
      line({
        rows: end.rows,
        requests: end.stats.requests,
        bytes_fetched: end.stats.bytesFetched,
        end: end.aborted ? 'aborted' : 'complete',
        ...(end.aborted ? { cause: end.aborted } : {}),
      })
    })
    c.set('streaming', () => (streaming = true))
    await next()
    if (!streaming) line(c.res.status >= 400 ? { error: c.get('errorCode') ?? null } : {})
  }
}

/** The batches of a data response, reporting to `observe` how many went out and how the stream ended. */
export async function* observed(batches: AsyncIterable<RowBatch>, stats: ScanStats, observe: StreamObserver): AsyncGenerator<RowBatch> {
  let rows = 0
  let aborted: string | undefined = 'the client went away'
  let error: unknown
  try {
    for await (const b of batches) {
      rows += b.length
      yield b
    }
    aborted = undefined
  } catch (err) {
    aborted = (err as Error)?.message ?? String(err)
    error = err
    throw err
  } finally {
    observe({ rows, stats, ...(aborted ? { aborted } : {}), ...(error === undefined ? {} : { error }) })
  }
}

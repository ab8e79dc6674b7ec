/**
 * From a validated query to a streaming Response: run the engine (which resolves
 * once the first batch is read, or the whole result with `limit`, so storage
 * trouble at the start is still a proper 503 and the I/O headers count it), refuse
 * a plain JSON response over too many blocks, then stream the encoder's bytes,
 * gzipped when the client asked.
 */
import { contentTypeOf, encodeRows, type EncoderFactory, type Format } from '../format/encode.ts'
import type { ManifestReader } from '../manifest/read.ts'
import { runQuery } from '../query/engine.ts'
import type { ScanOptions } from '../query/scan.ts'
import type { QuerySpec } from '../query/types.ts'
import type { Chain } from '../chains/registry.ts'
import type { DatasetDecl, FieldDecl } from '../schema/dataset.ts'
import { CorruptObjectError, type ObjectStore } from '../store/types.ts'
import type { IndexCache } from '../index/read.ts'
import { observed, type StreamObserver } from './access-log.ts'
import { gzipResponse } from './compress.ts'
import { ApiError, toApiError } from '../api/errors.ts'
import type { StreamLease } from '../api/limits.ts'
import { CORS_HEADERS, queryHeaders } from './headers.ts'
import { blockCount, MAX_JSON_BLOCK_RANGE } from '../api/params.ts'
import { failedStatusRecord, STATUS_FIELDS, statusBatch, statusRecord, type LiveLag } from './status.ts'
import type { RowBatch } from '../columns/batch.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { streamOf } from '../columns/stream.ts'
import { freshQuery, type UnfinalizedSource } from './fresh.ts'

export interface QueryDeps {
  store: ObjectStore
  manifest: ManifestReader
  scan?: ScanOptions
  /** Value-index objects kept across queries. */
  index?: IndexCache
  /** The unfinalized windows of followed chains, served above the partitions (fresh.ts). */
  unfinalized?: UnfinalizedSource
  /** Where the body is encoded (default in place). */
  encoders?: EncoderFactory
}

/** The 413 of a plain JSON request over more than MAX_JSON_BLOCK_RANGE blocks without `limit`. */
export function jsonRangeTooLarge(blocks: number): ApiError {
  return new ApiError(
    413,
    'range_too_large',
    `format=json serves at most ${MAX_JSON_BLOCK_RANGE} blocks per request (this range has ${blocks}); give limit=N (pages of at most N rows, X-Next-From-Block says where to continue), use format=json_stream, csv or arrow, or a narrower range`,
    { details: { max_blocks: MAX_JSON_BLOCK_RANGE } },
  )
}

/**
 * Rejects a plain JSON request whose numeric range is already too large, before any I/O.
 * `limit` bounds the answer whatever the range, so a limited request is never refused.
 */
export function checkJsonRange(query: QuerySpec, format: Format): void {
  if (format !== 'json' || query.limit !== undefined || typeof query.from !== 'number' || typeof query.to !== 'number') return
  const blocks = blockCount([query.from, query.to])
  if (blocks > MAX_JSON_BLOCK_RANGE) throw jsonRangeTooLarge(blocks)
}

/** Headers every successful body response carries. */
export function bodyHeaders(format: Format): Headers {
  return new Headers({
    ...CORS_HEADERS,
    'Content-Type': contentTypeOf(format),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    Vary: 'Accept, Accept-Encoding',
  })
}

/** Starts one step of a response (a read of the next encoded chunk) when its user may start a slice of work (src/api/fair.ts). */
export type Turn = <T>(step: () => Promise<T>) => Promise<T>

/**
 * `body`, giving back its stream slot (`lease`) once when it ends however it ends: read to the
 * end, failed, or cancelled (the client went away, a HEAD) even before its first read. The lease
 * is renewed as the body goes: working while a read runs, waiting for the client once a chunk is
 * out. Each read (the next batch scanned and encoded) waits for its `turn` when one is given.
 */
export function endsWith(body: ReadableStream<Uint8Array>, lease: StreamLease, turn?: Turn): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  // Handed to the runtime: until it asks for a chunk, the body waits for its client.
  lease.renew(true)
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        lease.renew(false)
        let next
        try {
          next = await (turn ? turn(() => reader.read()) : reader.read())
        } catch (err) {
          lease.release()
          throw err
        }
        if (next.done) {
          lease.release()
          controller.close()
        } else {
          lease.renew(true)
          controller.enqueue(next.value)
        }
      },
      cancel(reason) {
        lease.release()
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}

/** A streaming response of encoded batches, gzipped when asked; `lease` is given back when the body ends. */
export function streamResponse(
  format: Format,
  fields: readonly FieldDecl[],
  batches: AsyncIterable<RowBatch>,
  headers: Headers,
  gzip: boolean,
  lease?: StreamLease,
  turn?: Turn,
  encoders?: EncoderFactory,
): Response {
  const encoded = encodeRows(format, fields, batches, encoders)
  const body = lease ? endsWith(encoded, lease, turn) : encoded
  return gzip ? gzipResponse(body, { status: 200, headers }) : new Response(body, { status: 200, headers })
}

/**
 * The status records of `chains`, read from their manifests. A chain whose manifest is
 * damaged gets an `Error` record (and `onDamage` hears of it) while the others are answered;
 * storage that does not answer at all fails the response (503, retry).
 */
export async function statusResponse(
  manifest: ManifestReader,
  chains: readonly Chain[],
  datasets: readonly DatasetDecl[],
  format: Format,
  gzip: boolean,
  onDamage: (err: unknown) => void = () => {},
  liveLag: (chain: Chain) => LiveLag | null | Promise<LiveLag | null> = () => null,
  unfinalized?: UnfinalizedSource,
): Promise<Response> {
  const records = await Promise.all(
    chains.map(async chain => {
      try {
        const record = statusRecord(chain, await manifest.root(chain), datasets, await liveLag(chain))
        const slice = datasets.length
          ? await unfinalized?.slice(chain, { storage: datasets[0].storage, from: null, to: null, finalOnly: false })
          : null
        // A followed chain: the head it follows and the final height, above what is stored
        // (-1, nothing yet: a window anchored before genesis with no block final, leaves it as it is).
        if (slice) {
          const higher = (stored: StoredValue | null, n: number) =>
            n < 0 || (typeof stored === 'bigint' && stored > BigInt(n)) ? stored : BigInt(n)
          record.latest_block_height = higher(record.latest_block_height, slice.head)
          record.finalized_block_height = higher(record.finalized_block_height, slice.finalized)
          if (record.status === 'NoData') record.status = 'Ok'
        }
        return record
      } catch (err) {
        if (!(err instanceof CorruptObjectError)) throw err
        onDamage(err)
        return failedStatusRecord(chain, toApiError(err))
      }
    }),
  )
  return streamResponse(format, STATUS_FIELDS, streamOf([statusBatch(records)]), bodyHeaders(format), gzip)
}

/**
 * Runs a data query and answers it. Errors before the first byte are thrown for the
 * error envelope; `lease` (the stream slot) is given back when the body ends (not when this throws);
 * each read of the body waits for its `turn` (the caller gives the planning its own).
 */
export async function queryResponse(
  deps: QueryDeps,
  query: QuerySpec,
  format: Format,
  gzip: boolean,
  observe?: StreamObserver,
  lease?: StreamLease,
  finalOnly = false,
  turn?: Turn,
): Promise<Response> {
  checkJsonRange(query, format)
  const slice = await deps.unfinalized?.slice(query.chain, {
    storage: query.dataset.storage,
    from: typeof query.from === 'number' ? query.from : null,
    to: typeof query.to === 'number' ? query.to : null,
    finalOnly,
  })
  const planned = slice ? await freshQuery(deps, query, slice, finalOnly) : await runQuery(deps, query)
  const blocks = blockCount(planned.range)
  if (format === 'json' && query.limit === undefined && blocks > MAX_JSON_BLOCK_RANGE) {
    await planned.batches[Symbol.asyncIterator]().return?.()
    throw jsonRangeTooLarge(blocks)
  }
  const headers = bodyHeaders(format)
  for (const [name, value] of Object.entries(queryHeaders(planned))) headers.set(name, value)
  if ('finalized' in planned) headers.set('X-Finalized-Block', String(planned.finalized))
  const batches = observe ? observed(planned.batches, planned.stats, observe) : planned.batches
  return streamResponse(format, query.fields, batches, headers, gzip, lease, turn, deps.encoders)
}

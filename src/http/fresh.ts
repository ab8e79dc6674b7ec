/**
 * HTTP as fresh as the stream: above the stored partitions, a followed chain's
 * unfinalized window is served too, so a block delivered over a WebSocket is readable
 * over HTTP at the same moment. The engine is untouched: it answers the stored part
 * (up to the window's anchor) and the window's rows follow its batches, filtered by
 * the subscription matcher (the scanner's exact value tests). `X-Finalized-Block`
 * says which rows are final; `finalized=true` serves final blocks only.
 */
import { ApiError } from '../api/errors.ts'
import type { Chain } from '../chains/registry.ts'
import type { RowBatch } from '../columns/batch.ts'
import { decodeRows } from '../live/block-codec.ts'
import { rowSelector } from '../live/match.ts'
import type { SliceRequest, WindowSlice } from '../live/slice.ts'
import { ManifestReader } from '../manifest/read.ts'
import type { BlockRange } from '../manifest/types.ts'
import { runQuery, type EngineContext } from '../query/engine.ts'
import type { PlannedQuery, QuerySpec } from '../query/types.ts'

/** The runtime's window of each followed chain (the Node server's LiveChain, a Durable Object on Cloudflare). */
export interface UnfinalizedSource {
  /** The window's blocks a request asks for; null when the chain is not followed (or not yet). */
  slice(chain: Chain, req: SliceRequest): Promise<WindowSlice | null>
}

/** `finalized=true`: final blocks only (no rows a reorg could still drop). */
export const FINALIZED_PARAM = 'finalized'

/** Takes `finalized` out of a query string (it is not a filter); true when it asks for final blocks only. */
export function takeFinalizedParam(params: URLSearchParams): boolean {
  const values = params.getAll(FINALIZED_PARAM)
  if (values.length === 0) return false
  if (values.length > 1)
    throw new ApiError(400, 'duplicate_parameter', `${FINALIZED_PARAM} is given more than once`, { parameter: FINALIZED_PARAM })
  const v = values[0].toLowerCase()
  if (v !== 'true' && v !== 'false')
    throw new ApiError(400, 'invalid_parameter', `${FINALIZED_PARAM}: expected true or false, got "${values[0]}"`, {
      parameter: FINALIZED_PARAM,
    })
  params.delete(FINALIZED_PARAM)
  return v === 'true'
}

const NO_STATS = {
  partitionsTotal: 0,
  partitionsRead: 0,
  rowGroupsTotal: 0,
  rowGroupsRead: 0,
  requests: 0,
  bytesFetched: 0,
  rowsScanned: 0,
}

/**
 * A query over the partitions and the window: the engine's result up to the window's
 * anchor, then the window's matching rows, block by block (whole blocks within
 * `limit`). `latest` resolves to the followed head (the final height with `finalOnly`).
 */
export async function freshQuery(
  ctx: EngineContext,
  query: QuerySpec,
  slice: WindowSlice,
  finalOnly: boolean,
): Promise<PlannedQuery & { finalized: number }> {
  const top = finalOnly ? slice.finalized : slice.head
  const from = query.from === 'latest' ? top : query.from
  const to = query.to === 'latest' ? top : query.to
  const stored: PlannedQuery =
    from <= slice.stored
      ? await storedPart(ctx, { ...query, from, to: Math.min(to, slice.stored) }, slice)
      : { range: [from, to], served: [], latest: slice.stored, stats: { ...NO_STATS }, batches: empty() }
  const range: BlockRange = [from, to]
  const result = { ...stored, range, latest: top, finalized: slice.finalized }
  const blocks = slice.blocks.filter(b => b.number >= from && b.number <= Math.min(to, top))
  if (stored.nextFrom !== undefined || blocks.length === 0) return result
  const selector = rowSelector(query.predicates, query.fields, query.chain.id)
  const window: RowBatch[] = []
  for (const b of blocks) window.push(selector.select(await decodeRows(query.dataset, b.data)))
  let batches: AsyncIterable<RowBatch> = stored.batches
  let last = blocks[blocks.length - 1].number
  let nextFrom: number | undefined
  if (query.limit !== undefined) {
    const held: RowBatch[] = []
    for await (const batch of stored.batches) held.push(batch)
    let rows = held.reduce((n, b) => n + b.length, 0)
    let kept = 0
    while (kept < window.length && (rows + window[kept].length <= query.limit || (rows === 0 && kept === 0))) rows += window[kept++].length
    if (kept < window.length) {
      nextFrom = blocks[kept].number
      last = nextFrom - 1
    }
    window.splice(kept)
    batches = streamAll(held)
  }
  const low = Math.max(from, slice.stored + 1)
  const served: BlockRange[] = last >= low ? [...stored.served, [low, last]] : stored.served
  return {
    ...result,
    served: mergeAdjacent(served),
    ...(nextFrom === undefined ? {} : { nextFrom }),
    batches: concat(batches, window),
  }
}

/**
 * The engine's answer up to the window's anchor. A manifest root cached from before the
 * window's last compaction would leave the compacted blocks in neither part: the root is
 * then read afresh.
 */
async function storedPart(ctx: EngineContext, query: QuerySpec, slice: WindowSlice): Promise<PlannedQuery> {
  const planned = await runQuery(ctx, query)
  if (planned.latest >= slice.stored) return planned
  await planned.batches[Symbol.asyncIterator]().return?.()
  return runQuery({ ...ctx, manifest: new ManifestReader(ctx.store, { rootTtlMs: 0 }) }, query)
}

async function* empty(): AsyncGenerator<RowBatch> {}

async function* streamAll(batches: readonly RowBatch[]): AsyncGenerator<RowBatch> {
  for (const b of batches) yield b
}

async function* concat(first: AsyncIterable<RowBatch>, rest: readonly RowBatch[]): AsyncGenerator<RowBatch> {
  yield* first
  for (const b of rest) if (b.length > 0) yield b
}

function mergeAdjacent(ranges: readonly BlockRange[]): BlockRange[] {
  const out: BlockRange[] = []
  for (const r of ranges) {
    const prev = out[out.length - 1]
    if (prev && r[0] <= prev[1] + 1) prev[1] = Math.max(prev[1], r[1])
    else out.push([r[0], r[1]])
  }
  return out
}

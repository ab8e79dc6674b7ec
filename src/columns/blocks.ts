/**
 * Cutting rows at block boundaries: a block is never split, whether a response is
 * cut by `limit` (the engine) or streamed with progress markers after whole blocks
 * (a subscription). Rows arrive in (range key, index) order, so a block is a run of
 * equal keys.
 */
import { joinBatches, sliceBatch, type RowBatch } from './batch.ts'
import type { U64Vector } from './vector.ts'

/** The range key column of a batch: u64 blocks (or versions), never null. */
export function keysOf(b: RowBatch, key: string): U64Vector {
  const v = b.columns[key]
  if (v?.type !== 'u64') throw new Error(`range key column "${key}" is not a u64 column`)
  return v
}

/** Where the run of rows sharing the key of row `i` starts (compared as words, no BigInt per row). */
export function blockStart(keys: U64Vector, i: number): number {
  const w = keys.words
  const lo = w[2 * i]
  const hi = w[2 * i + 1]
  let start = i
  while (start > 0 && w[2 * start - 2] === lo && w[2 * start - 1] === hi) start--
  return start
}

/** Where the run of rows sharing the key of row `i` ends (exclusive), among the first `n`. */
export function blockEnd(keys: U64Vector, i: number, n: number): number {
  const w = keys.words
  const lo = w[2 * i]
  const hi = w[2 * i + 1]
  let end = i + 1
  while (end < n && w[2 * end] === lo && w[2 * end + 1] === hi) end++
  return end
}

const slice = (b: RowBatch, start: number, end: number): RowBatch => (start === 0 && end === b.length ? b : sliceBatch(b, start, end))

/** Rows of whole blocks, and the key of the block held back after them (null at the end). */
export interface WholeBlocks {
  rows: RowBatch
  /** Every block below this key is complete; its own rows come with the next batch. */
  heldFrom: bigint | null
}

/**
 * The same rows re-cut so that every batch holds whole blocks: the rows of a batch's
 * last block wait for the next batch, and come with it (or last, at the end).
 */
export async function* wholeBlocks(batches: AsyncIterable<RowBatch>, key: string): AsyncGenerator<WholeBlocks> {
  let carry: RowBatch[] = []
  for await (const batch of batches) {
    if (batch.length === 0) continue
    const keys = keysOf(batch, key)
    const cut = blockStart(keys, batch.length - 1)
    if (cut > 0) {
      yield { rows: joinBatches([...carry, slice(batch, 0, cut)]), heldFrom: keys.values[cut] }
      carry = [slice(batch, cut, batch.length)]
      continue
    }
    // The whole batch is one block: it completes the held block or starts the next.
    if (carry.length && keysOf(carry[0], key).values[0] !== keys.values[0]) {
      yield { rows: joinBatches(carry), heldFrom: keys.values[0] }
      carry = []
    }
    carry.push(batch)
  }
  if (carry.length) yield { rows: joinBatches(carry), heldFrom: null }
}

/**
 * At most `limit` rows, ending on a block boundary (the whole first block when it
 * alone exceeds the limit), and the first block left out when rows remain.
 */
export async function takeBlocks(
  batches: AsyncIterable<RowBatch>,
  limit: number,
  key: string,
): Promise<{ batches: RowBatch[]; nextFrom?: number }> {
  const out: RowBatch[] = []
  let taken = 0
  const blocks = wholeBlocks(batches, key)
  try {
    for await (const { rows: b } of blocks) {
      if (taken + b.length <= limit) {
        out.push(b)
        taken += b.length
        continue
      }
      const keys = keysOf(b, key)
      const cut = blockStart(keys, limit - taken)
      if (cut > 0 || taken > 0) {
        if (cut > 0) out.push(slice(b, 0, cut))
        return { batches: out, nextFrom: Number(keys.values[cut]) }
      }
      // The first block alone exceeds the limit: all of it, then resume after it.
      const end = blockEnd(keys, 0, b.length)
      out.push(slice(b, 0, end))
      const more = end < b.length || !(await blocks.next()).done
      return more ? { batches: out, nextFrom: Number(keys.values[0]) + 1 } : { batches: out }
    }
    return { batches: out }
  } finally {
    await blocks.return(undefined)
  }
}

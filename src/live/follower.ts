/**
 * The head follower of one chain: each `tick` asks the node for its head, fetches
 * the blocks above the window's tip and appends them, and detects reorgs by parent
 * hash (a node such as anvil never sends `removed: true` logs, so the link between
 * a block and its parent is the only reliable sign). On a broken link it fetches
 * the node's headers over the window, finds the highest height where both agree
 * (the fork point) and rolls the window back to it; the new canonical blocks
 * follow in the same tick. A fork below the anchor is a reorg deeper than the
 * window can repair: ReorgTooDeepError, never a silent rewrite.
 */
import type { LiveSource } from './source.ts'
import { windowBlock, type Anchor, type BlockHeader, type UnfinalizedWindow, type WindowBlock } from './window.ts'
import type { ColumnBatch } from '../columns/batch.ts'

export interface FollowerOptions {
  /** Blocks fetched in one tick at most (default 32): a follower far behind catches up over several ticks. */
  maxBlocksPerTick?: number
}

export type FollowerEvent =
  /** A new canonical block, appended to the window; `batches` are its decoded rows. */
  | { type: 'block'; block: WindowBlock; batches: Record<string, ColumnBatch>; head: number }
  /** Blocks above `forkPoint` were dropped from the window (lowest first). */
  | { type: 'reorg'; forkPoint: number; dropped: WindowBlock[]; head: number }

/** The node's chain no longer contains the window's anchor: stored data may be on a dead fork. */
export class ReorgTooDeepError extends Error {
  readonly anchor: Anchor
  readonly nodeHash: string
  constructor(anchor: Anchor, nodeHash: string) {
    super(`reorg deeper than the unfinalized window: block ${anchor.number} is ${nodeHash} on the node, ${anchor.hash} here`)
    this.name = 'ReorgTooDeepError'
    this.anchor = anchor
    this.nodeHash = nodeHash
  }
}

/** A node of a chain with final blocks (LiveSource.final) contradicts what was delivered: its error, not a reorg. */
export class FinalityError extends Error {
  constructor(message: string) {
    super(`${message}: blocks of this chain are final, so the node is wrong (lagging or on another chain); retrying`)
    this.name = 'FinalityError'
  }
}

export class HeadFollower {
  readonly source: LiveSource
  readonly window: UnfinalizedWindow
  private readonly maxBlocks: number
  /** The node's head at the last tick (-1 before the first). */
  head = -1

  constructor(source: LiveSource, window: UnfinalizedWindow, options: FollowerOptions = {}) {
    this.source = source
    this.window = window
    this.maxBlocks = Math.max(1, options.maxBlocksPerTick ?? 32)
  }

  /**
   * One poll of the node. Events are handed to `onEvent` in chain order as they
   * happen (awaited, so a slow consumer slows the follower, not the other way
   * round). Returns the number of blocks appended.
   */
  async tick(onEvent: (e: FollowerEvent) => void | Promise<void>): Promise<number> {
    const latest = await this.source.latest()
    this.head = latest.number
    const w = this.window
    if (latest.number <= w.tip.number) {
      const ours = w.hashAt(latest.number)
      if (this.source.final) {
        if (latest.number < w.tip.number)
          throw new FinalityError(`the node is at ${latest.number}, below ${w.tip.number} already delivered`)
        if (ours !== latest.hash) throw new FinalityError(`the node names ${latest.hash} at ${latest.number}, ${ours} was delivered`)
        return 0
      }
      // A node at or below our tip on the same chain: nothing new (a lagging node catches up later).
      if (ours === latest.hash || latest.number < w.anchor.number) return 0
      await this.repair(latest.number, onEvent)
    }
    let added = 0
    while (added < this.maxBlocks && w.tip.number < this.head) {
      const from = w.tip.number + 1
      const fetched = await this.source.blocks(from, Math.min(this.head, from + this.maxBlocks - added - 1), w)
      let linked = true
      for (const f of fetched) {
        if (f.header.parentHash !== w.tip.hash) {
          if (this.source.final)
            throw new FinalityError(`block ${f.header.number} names parent ${f.header.parentHash}, ${w.tip.hash} was delivered`)
          await this.repair(f.header.number - 1, onEvent)
          linked = false
          break
        }
        const block = windowBlock(f.header, this.source.datasets, f.batches)
        w.append(block)
        added++
        await onEvent({ type: 'block', block, batches: f.batches, head: this.head })
      }
      if (linked && fetched.length === 0) break
    }
    return added
  }

  /** Rolls the window back to the highest height at or below `from` where the node agrees with it. */
  private async repair(from: number, onEvent: (e: FollowerEvent) => void | Promise<void>): Promise<void> {
    const w = this.window
    const top = Math.min(from, w.tip.number)
    const heights: number[] = []
    // An anchor of -1 stands before genesis: block 0 is the lowest height to compare.
    for (let n = top; n >= Math.max(w.anchor.number, 0); n--) heights.push(n)
    const theirs = await this.source.headers(heights)
    let fork: number | undefined
    for (let i = 0; i < heights.length; i++) {
      const h = theirs[i]
      if (!h) throw new Error(`the node has no header at ${heights[i]} below its head ${this.head}; retrying later`)
      if (h.hash === w.hashAt(heights[i])) {
        fork = heights[i]
        break
      }
    }
    if (fork === undefined) throw new ReorgTooDeepError(w.anchor, (theirs[theirs.length - 1] as BlockHeader | undefined)?.hash ?? 'unknown')
    const dropped = w.rollback(fork)
    if (dropped.length) await onEvent({ type: 'reorg', forkPoint: fork, dropped, head: this.head })
  }
}

/**
 * The unfinalized window: the blocks above the anchor (the last block known final:
 * stored in partitions, or compacted from here), contiguous and each linked to its
 * parent by hash. Rows are held encoded (block-codec.ts); the hashes are what
 * reorg detection compares. Pure state: the follower fills it, the compactor
 * empties it from below, a reorg cuts it from above.
 */
import type { DatasetDecl } from '../schema/dataset.ts'
import { decodeRows, encodeRows } from './block-codec.ts'
import type { ColumnBatch } from '../columns/batch.ts'

/** A block's identity: number and 0x-hex hashes. */
export interface BlockHeader {
  number: number
  hash: string
  parentHash: string
}

/** One block of the window: its header and each dataset's rows, encoded. */
export interface WindowBlock extends BlockHeader {
  /** Encoded rows by storage name. */
  data: Record<string, Uint8Array>
  /** Encoded size of `data`. */
  bytes: number
}

/** The last block below the window: final, and the parent the window's first block must name. */
export interface Anchor {
  number: number
  hash: string
}

/** A block whose parent hash does not match the window's tip: the caller must look for a fork. */
export class BrokenLinkError extends Error {}

/** Encodes a block's rows for the window. */
export function windowBlock(header: BlockHeader, datasets: readonly DatasetDecl[], batches: Record<string, ColumnBatch>): WindowBlock {
  const data: Record<string, Uint8Array> = {}
  let bytes = 0
  for (const d of datasets) {
    const batch = batches[d.storage]
    if (!batch) throw new Error(`block ${header.number} has no ${d.storage} rows`)
    data[d.storage] = encodeRows(d, batch)
    bytes += data[d.storage].length
  }
  return { ...header, data, bytes }
}

/** Decodes a window block's rows for the given datasets. */
export async function blockRows(block: WindowBlock, datasets: readonly DatasetDecl[]): Promise<Record<string, ColumnBatch>> {
  const out: Record<string, ColumnBatch> = {}
  await Promise.all(
    datasets.map(async d => {
      const bytes = block.data[d.storage]
      if (!bytes) throw new Error(`block ${block.number} holds no ${d.storage} rows`)
      out[d.storage] = await decodeRows(d, bytes)
    }),
  )
  return out
}

export class UnfinalizedWindow {
  private anchorBlock: Anchor
  private blocks: WindowBlock[] = []
  private encodedBytes = 0

  constructor(anchor: Anchor, blocks: readonly WindowBlock[] = []) {
    this.anchorBlock = anchor
    for (const b of blocks) this.append(b)
  }

  get anchor(): Anchor {
    return this.anchorBlock
  }

  /** Lowest block held (anchor + 1), whether or not any block is held. */
  get low(): number {
    return this.anchorBlock.number + 1
  }

  /** Highest block held, or the anchor when the window is empty. */
  get tip(): Anchor {
    const last = this.blocks[this.blocks.length - 1]
    return last ? { number: last.number, hash: last.hash } : this.anchorBlock
  }

  get size(): number {
    return this.blocks.length
  }

  /** Encoded bytes of every block held. */
  get bytes(): number {
    return this.encodedBytes
  }

  /** The block at `n`, when held. */
  get(n: number): WindowBlock | undefined {
    const i = n - this.low
    return i >= 0 && i < this.blocks.length ? this.blocks[i] : undefined
  }

  /** The hash at `n` when the window knows it (the anchor included). */
  hashAt(n: number): string | undefined {
    return n === this.anchorBlock.number ? this.anchorBlock.hash : this.get(n)?.hash
  }

  /** Blocks `from`..`to` that are held, in order. */
  range(from: number, to: number): WindowBlock[] {
    const a = Math.max(0, from - this.low)
    const b = Math.min(this.blocks.length, to - this.low + 1)
    return a < b ? this.blocks.slice(a, b) : []
  }

  /** Adds the next block; throws BrokenLinkError unless it follows the tip by number and parent hash. */
  append(block: WindowBlock): void {
    const tip = this.tip
    if (block.number !== tip.number + 1) throw new BrokenLinkError(`block ${block.number} does not follow the window's tip ${tip.number}`)
    if (block.parentHash.toLowerCase() !== tip.hash.toLowerCase()) {
      throw new BrokenLinkError(`block ${block.number} names parent ${block.parentHash}, the window holds ${tip.hash}`)
    }
    this.blocks.push(block)
    this.encodedBytes += block.bytes
  }

  /** Drops every block above `forkPoint` (at least the anchor) and returns them, lowest first. */
  rollback(forkPoint: number): WindowBlock[] {
    if (forkPoint < this.anchorBlock.number) throw new Error(`cannot roll back below the anchor ${this.anchorBlock.number}`)
    const dropped = this.blocks.splice(forkPoint - this.anchorBlock.number)
    for (const b of dropped) this.encodedBytes -= b.bytes
    return dropped
  }

  /** Removes blocks up to `upTo` from the bottom (they are stored now); the last one becomes the anchor. */
  finalize(upTo: number): WindowBlock[] {
    const n = Math.min(this.blocks.length, upTo - this.anchorBlock.number)
    if (n <= 0) return []
    const done = this.blocks.splice(0, n)
    for (const b of done) this.encodedBytes -= b.bytes
    const last = done[done.length - 1]
    this.anchorBlock = { number: last.number, hash: last.hash }
    return done
  }
}

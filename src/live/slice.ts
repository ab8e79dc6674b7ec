/**
 * The unfinalized window as HTTP serves it: the followed blocks above the stored
 * partitions, so a block delivered over a WebSocket is readable over HTTP at the same
 * moment. A slice is the window's blocks of one dataset in a range, still encoded
 * (block-codec), with the heights a response reports; it crosses from a Durable
 * Object to the Worker as one binary body (`encodeSlice` / `decodeSlice`).
 */
import type { UnfinalizedWindow } from './window.ts'

export interface SliceBlock {
  number: number
  hash: string
  /** The dataset's rows of the block, encoded by block-codec. */
  data: Uint8Array
}

export interface WindowSlice {
  /** Last block stored in partitions (the window's anchor). */
  stored: number
  /** Highest block followed. */
  head: number
  /** Highest final block: `finality` below the head, never below `stored`. */
  finalized: number
  /** The window's blocks in the range asked, lowest first. */
  blocks: SliceBlock[]
}

/** What a request asks of the window: a range (`from` null: the newest block only) and whether only final blocks. */
export interface SliceRequest {
  storage: string
  from: number | null
  to: number | null
  finalOnly: boolean
}

/** The blocks of a window a request asks for. */
export function sliceOf(w: UnfinalizedWindow, finality: number, req: SliceRequest): WindowSlice {
  const stored = w.anchor.number
  const head = w.tip.number
  const finalized = Math.max(stored, head - finality)
  const top = Math.min(req.finalOnly ? finalized : head, req.to ?? Infinity)
  const from = Math.max(w.low, req.from ?? top)
  const blocks = from > top ? [] : w.range(from, top).map(b => ({ number: b.number, hash: b.hash, data: b.data[req.storage] }))
  if (blocks.some(b => !b.data)) throw new Error(`the window holds no ${req.storage} rows`)
  return { stored, head, finalized, blocks }
}

/** A slice as bytes: a 4-byte length, the JSON of the heights and blocks, then each block's data. */
export function encodeSlice(s: WindowSlice): Uint8Array<ArrayBuffer> {
  const meta = new TextEncoder().encode(
    JSON.stringify({ ...s, blocks: s.blocks.map(b => ({ number: b.number, hash: b.hash, bytes: b.data.length })) }),
  )
  const out = new Uint8Array(4 + meta.length + s.blocks.reduce((n, b) => n + b.data.length, 0))
  new DataView(out.buffer).setUint32(0, meta.length)
  out.set(meta, 4)
  let at = 4 + meta.length
  for (const b of s.blocks) {
    out.set(b.data, at)
    at += b.data.length
  }
  return out
}

export function decodeSlice(bytes: Uint8Array): WindowSlice {
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0)
  const meta = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length))) as Omit<WindowSlice, 'blocks'> & {
    blocks: { number: number; hash: string; bytes: number }[]
  }
  let at = 4 + length
  const blocks = meta.blocks.map(b => {
    const data = bytes.subarray(at, at + b.bytes)
    at += b.bytes
    return { number: b.number, hash: b.hash, data }
  })
  if (at !== bytes.length) throw new Error('a window slice of the wrong length')
  return { stored: meta.stored, head: meta.head, finalized: meta.finalized, blocks }
}

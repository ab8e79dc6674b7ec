/**
 * A store wrapper that records every read (key, byte range, start and end order), and
 * the count of sequential rounds among them: how tests and benchmarks prove what a
 * query read without trusting the engine's own accounting.
 */
import type { ByteRange, GetResult, ObjectStore } from '../../src/store/types.ts'

export interface ReadRecord {
  key: string
  offset: number
  length: number
  /** Logical times: every start and end takes the next tick. */
  started: number
  ended: number
}

/**
 * Records every `get` (key, byte range, start and end order); with `delayMs` each
 * answer waits that long, so reads issued together overlap and dependent ones do not.
 */
export function recordingStore(inner: ObjectStore, delayMs = 0): { store: ObjectStore; reads: ReadRecord[] } {
  const reads: ReadRecord[] = []
  let tick = 0
  const store: ObjectStore = {
    head: k => inner.head(k),
    put: (k, b, o) => inner.put(k, b, o),
    list: p => inner.list(p),
    delete: k => inner.delete(k),
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      const record: ReadRecord = { key, offset: 0, length: -1, started: tick++, ended: -1 }
      reads.push(record)
      const got = await inner.get(key, range)
      if (delayMs) await new Promise(resolve => setTimeout(resolve, delayMs))
      record.ended = tick++
      if (got) {
        record.offset = got.offset
        record.length = got.body.length
      }
      return got
    },
  }
  return { store, reads }
}

/** Sequential rounds among `reads`: the longest chain of reads each started after the previous one ended. */
export function rounds(reads: readonly ReadRecord[]): number {
  const sorted = [...reads].sort((a, b) => a.started - b.started)
  const depth: number[] = []
  let max = 0
  sorted.forEach((r, i) => {
    let d = 1
    for (let j = 0; j < i; j++) if (sorted[j].ended >= 0 && sorted[j].ended < r.started) d = Math.max(d, depth[j] + 1)
    depth.push(d)
    max = Math.max(max, d)
  })
  return max
}

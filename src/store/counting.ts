/**
 * An `ObjectStore` wrapper that counts the I/O going through it, so tests and
 * benchmarks can prove pruning and pushdown (how many reads, how many bytes)
 * instead of assuming them. Runtime-neutral: usable in the Worker and in Node.
 */
import type { ByteRange, GetResult, ObjectInfo, ObjectStore, PutOptions } from './types.ts'

/** I/O through a counting store since it was made or last reset. */
export interface IoCounts {
  /** Read requests: `get`, `head` and `list` calls, found or not. */
  requests: number
  /** Body bytes returned by `get`. */
  bytesFetched: number
  /** `put` and `delete` calls. */
  writes: number
}

/** An `ObjectStore` that also exposes what went through it. */
export interface CountingStore extends ObjectStore {
  /** Live counters (read them after the I/O of interest). */
  readonly counts: IoCounts
  /** Sets every counter back to zero. */
  reset(): void
}

/** Wraps `inner`, counting every call and the bytes each `get` returned. */
export function countingStore(inner: ObjectStore): CountingStore {
  const counts: IoCounts = { requests: 0, bytesFetched: 0, writes: 0 }
  return {
    counts,
    reset() {
      counts.requests = 0
      counts.bytesFetched = 0
      counts.writes = 0
    },
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      counts.requests++
      const got = await inner.get(key, range)
      if (got) counts.bytesFetched += got.body.length
      return got
    },
    head(key: string): Promise<ObjectInfo | null> {
      counts.requests++
      return inner.head(key)
    },
    list(prefix: string): Promise<ObjectInfo[]> {
      counts.requests++
      return inner.list(prefix)
    },
    put(key: string, body: Uint8Array, options?: PutOptions): Promise<ObjectInfo | null> {
      counts.writes++
      return inner.put(key, body, options)
    },
    delete(key: string): Promise<void> {
      counts.writes++
      return inner.delete(key)
    },
  }
}

/**
 * Reading Parquet files out of object storage in few round trips. A partition is
 * opened with one ranged read of its tail (footer, page indexes, bloom filters),
 * which then serves every metadata slice hyparquet asks for from memory. Data
 * slices are not fetched one by one: they are queued, and once the current turn of
 * the event loop has issued all it will, neighbouring slices of the same object are
 * merged into one ranged `get` each and all of them are sent at once. A scan phase
 * that asks for many column pages therefore costs one round of parallel requests.
 */
import type { AsyncBuffer } from 'hyparquet'
import type { ObjectStore } from '../store/types.ts'
import { StorageError } from '../store/types.ts'

export interface ReadQueueOptions {
  /** Slices of one object at most this many bytes apart are fetched in one request (default 16 KiB). */
  maxGap?: number
  /** A merged request is not grown beyond this many bytes (default 8 MiB). */
  maxRequest?: number
}

interface Pending {
  key: string
  start: number
  end: number
  resolve: (buffer: ArrayBuffer) => void
  reject: (error: unknown) => void
}

const later: (fn: () => void) => void =
  typeof setImmediate === 'function' ? fn => void setImmediate(fn) : fn => void setTimeout(fn, 0)

/** Batches byte-range reads issued in the same turn into merged ranged gets. */
export class ReadQueue {
  readonly store: ObjectStore
  readonly maxGap: number
  readonly maxRequest: number
  private pending: Pending[] = []
  private scheduled = false

  constructor(store: ObjectStore, options: ReadQueueOptions = {}) {
    this.store = store
    this.maxGap = options.maxGap ?? 16 * 1024
    this.maxRequest = options.maxRequest ?? 8 * 1024 * 1024
  }

  /** Bytes `[start, end)` of object `key`, fetched with the other reads of this turn. */
  read(key: string, start: number, end: number): Promise<ArrayBuffer> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, start, end, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        later(() => this.flush())
      }
    })
  }

  private flush(): void {
    const batch = this.pending
    this.pending = []
    this.scheduled = false
    batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.start - b.start))
    let group: Pending[] = []
    let start = 0
    let end = 0
    for (const p of batch) {
      const last = group[0]
      if (last && p.key === last.key && p.start <= end + this.maxGap && Math.max(end, p.end) - start <= this.maxRequest) {
        end = Math.max(end, p.end)
        group.push(p)
        continue
      }
      if (last) this.fetch(group, start, end)
      group = [p]
      start = p.start
      end = p.end
    }
    if (group.length) this.fetch(group, start, end)
  }

  private fetch(group: Pending[], start: number, end: number): void {
    const key = group[0].key
    this.store.get(key, { offset: start, length: end - start }).then(
      got => {
        if (!got) throw new StorageError(`object ${key} disappeared while being read`)
        if (got.body.length < end - start) throw new StorageError(`short read of ${key}: ${got.body.length} of ${end - start} bytes`)
        const body = got.body
        for (const p of group) {
          const a = p.start - start
          const b = p.end - start
          const whole = a === 0 && b === body.length && body.byteOffset === 0 && body.buffer.byteLength === b
          p.resolve(whole ? (body.buffer as ArrayBuffer) : (body.slice(a, b).buffer as ArrayBuffer))
        }
      },
    ).catch(error => {
      for (const p of group) p.reject(error)
    })
  }
}

/** Byte ranges of a file already in memory (the tail, prefetched column chunks). */
export class Resident {
  private ranges: { start: number; bytes: Uint8Array }[] = []

  add(start: number, bytes: Uint8Array): void {
    this.ranges.push({ start, bytes })
  }

  remove(bytes: Uint8Array): void {
    this.ranges = this.ranges.filter(r => r.bytes !== bytes)
  }

  /** A copy of `[start, end)` when one resident range holds all of it. */
  slice(start: number, end: number): ArrayBuffer | undefined {
    for (const r of this.ranges) {
      if (start >= r.start && end <= r.start + r.bytes.length) return r.bytes.slice(start - r.start, end - r.start).buffer as ArrayBuffer
    }
    return undefined
  }
}

/**
 * One partition file for hyparquet: slices held in `resident` (the tail, prefetched
 * chunks) come from memory, others go through the read queue.
 */
export function partitionFile(queue: ReadQueue, key: string, byteLength: number, resident: Resident): AsyncBuffer {
  return {
    byteLength,
    slice(start: number, end: number = byteLength): ArrayBuffer | Promise<ArrayBuffer> {
      return resident.slice(start, end) ?? queue.read(key, start, end)
    },
  }
}

/** Reads a partition's tail `[tailOffset, bytes)` in one request. */
export async function readTail(store: ObjectStore, key: string, bytes: number, tailOffset: number): Promise<Uint8Array> {
  const got = await store.get(key, { offset: tailOffset, length: bytes - tailOffset })
  if (!got) throw new StorageError(`partition ${key} is listed in the manifest but missing from the store`)
  if (got.body.length !== bytes - tailOffset) {
    throw new StorageError(`partition ${key}: tail of ${got.body.length} bytes, expected ${bytes - tailOffset}`)
  }
  return got.body
}

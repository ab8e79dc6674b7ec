/**
 * Reading Parquet files out of object storage in few round trips. A partition is
 * opened in one round: its page indexes and footer, and the bloom filters of only the
 * columns the query's pruning consults (one range per column, from the manifest), read
 * in parallel; these then serve every metadata slice hyparquet asks for from memory. Data
 * slices are not fetched one by one: they are queued, and once the current turn of
 * the event loop has issued all it will, neighbouring slices of the same object are
 * merged into one ranged `get` each and all of them are sent at once. A scan phase
 * that asks for many column pages therefore costs one round of parallel requests.
 */
import type { AsyncBuffer, FileMetaData } from 'hyparquet'
import type { ByteSpan } from '../manifest/types.ts'
import type { ObjectStore } from '../store/types.ts'
import { CorruptObjectError, StorageError } from '../store/types.ts'
import { crc32 } from '../store/crc32.ts'
import { ownBuffer } from '../schema/hex.ts'
import type { ReadBuffers } from './read-buffers.ts'

/**
 * The default `maxGap`: about what one more request costs, in bytes of a body already being
 * read (Miniflare's local R2: 0.5 ms a get against 0.7 ms a MB; R2 or S3 over a network: tens
 * of milliseconds a get, and a Worker has 6 connections), so reading a hole this size is
 * cheaper than a request of its own. A value spread thin over every row group (a few matches
 * a group, each in a page of its own) is then a request or two per group, not one per page run
 * (BENCHMARKS.md run O5: a signature of 499 logs, 992 → 112 requests).
 */
export const MAX_GAP = 128 * 1024

export interface ReadQueueOptions {
  /** Slices of one object at most this many bytes apart are fetched in one request (default `MAX_GAP`). */
  maxGap?: number
  /** A merged request is not grown beyond this many bytes (default 8 MiB). */
  maxRequest?: number
  /** Memory requests are read into and given back by `release` (default: each body allocated by the store). */
  buffers?: ReadBuffers
}

interface Pending {
  key: string
  start: number
  end: number
  /** The caller keeps the bytes beyond the scan (a cached tail): never read into lent memory. */
  keep: boolean
  resolve: (bytes: Uint8Array) => void
  reject: (error: unknown) => void
}

const later: (fn: () => void) => void = typeof setImmediate === 'function' ? fn => void setImmediate(fn) : fn => void setTimeout(fn, 0)

/** Batches byte-range reads issued in the same turn into merged ranged gets. */
export class ReadQueue {
  readonly store: ObjectStore
  readonly maxGap: number
  readonly maxRequest: number
  private readonly buffers: ReadBuffers | undefined
  private pending: Pending[] = []
  private scheduled = false
  /** Buffers of `buffers` this queue's requests were read into, and the requests not settled yet. */
  private lent: Uint8Array[] = []
  private inFlight = 0

  constructor(store: ObjectStore, options: ReadQueueOptions = {}) {
    this.store = store
    this.maxGap = options.maxGap ?? MAX_GAP
    this.maxRequest = options.maxRequest ?? 8 * 1024 * 1024
    this.buffers = options.buffers
  }

  /**
   * Bytes `[start, end)` of object `key`, fetched with the other reads of this turn.
   * Reads merged into one request get views of its body, not copies. With `buffers`, the
   * body may be lent memory, valid until `release`: bytes kept longer are read with `keep`.
   */
  read(key: string, start: number, end: number, keep = false): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, start, end, keep, resolve, reject })
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

  /**
   * Gives the memory this queue's requests were read into back to `buffers`: called once
   * the scan has consumed every read (nothing holds a view of them any more). With a request
   * still pending or in flight (a scan that stopped early), the memory is left to the
   * garbage collector instead, since its bytes may yet be written or read.
   */
  release(): void {
    const lent = this.lent
    this.lent = []
    if (this.inFlight === 0 && this.pending.length === 0) this.buffers?.give(lent)
  }

  private fetch(group: Pending[], start: number, end: number): void {
    const key = group[0].key
    const into = group.some(p => p.keep) ? undefined : this.buffers?.take(end - start)
    if (into) this.lent.push(into)
    this.inFlight++
    this.store
      .get(key, { offset: start, length: end - start, ...(into ? { into } : {}) })
      .finally(() => this.inFlight--)
      .then(got => {
        if (!got) throw new CorruptObjectError(key, 'the object the manifest names is missing')
        if (got.body.length < end - start) throw new StorageError(`short read of ${key}: ${got.body.length} of ${end - start} bytes`)
        const body = got.body
        for (const p of group) p.resolve(body.subarray(p.start - start, p.end - start))
      })
      .catch(error => {
        for (const p of group) p.reject(error)
      })
  }
}

/**
 * Byte ranges of a file already in memory (the tail, prefetched column chunks); a
 * query's own ranges may sit on top of the cached tail of the file (`below`).
 */
export class Resident {
  private ranges: { start: number; bytes: Uint8Array }[] = []
  private readonly below: Resident | undefined

  constructor(below?: Resident) {
    this.below = below
  }

  add(start: number, bytes: Uint8Array): void {
    this.ranges.push({ start, bytes })
  }

  remove(bytes: Uint8Array): void {
    this.ranges = this.ranges.filter(r => r.bytes !== bytes)
  }

  /** Bytes held, not counting `below`. */
  get size(): number {
    return this.ranges.reduce((n, r) => n + r.bytes.length, 0)
  }

  /** `[start, end)` without a copy when one resident range holds all of it. */
  view(start: number, end: number): Uint8Array | undefined {
    for (const r of this.ranges) {
      if (start >= r.start && end <= r.start + r.bytes.length) return r.bytes.subarray(start - r.start, end - r.start)
    }
    return this.below?.view(start, end)
  }

  /** A copy of `[start, end)` when one resident range holds all of it. */
  slice(start: number, end: number): ArrayBuffer | undefined {
    return this.view(start, end)?.slice().buffer as ArrayBuffer | undefined
  }
}

/** What a cached partition keeps: its tail ranges read so far and its parsed footer. */
export interface CachedTail {
  resident: Resident
  metadata?: FileMetaData
}

/**
 * Partition tails (page indexes, footer, bloom filters) kept across queries, so a
 * warm isolate opens a partition it has seen without a request or a footer parse.
 * Safe because a partition object never changes: its key carries a hash of its
 * bytes. Bounded by bytes held, least recently used first out.
 */
export class TailCache {
  readonly maxBytes: number
  private readonly entries = new Map<string, CachedTail>()

  constructor(maxBytes = 32 * 1024 * 1024) {
    this.maxBytes = maxBytes
  }

  /** The entry of a partition, created empty if need be, and marked recently used. */
  entry(key: string): CachedTail {
    const found = this.entries.get(key)
    if (found) {
      this.entries.delete(key)
      this.entries.set(key, found)
      return found
    }
    const fresh: CachedTail = { resident: new Resident() }
    this.entries.set(key, fresh)
    return fresh
  }

  /** Evicts least recently used entries until the bytes held fit (`keep` stays). */
  trim(keep: string): void {
    let total = 0
    for (const e of this.entries.values()) total += e.resident.size
    for (const [key, e] of this.entries) {
      if (total <= this.maxBytes) break
      if (key === keep) continue
      total -= e.resident.size
      this.entries.delete(key)
    }
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
      return resident.slice(start, end) ?? queue.read(key, start, end, true).then(ownBuffer)
    },
  }
}

/** Where a partition's tail lies, and its checksums, as the manifest records them. */
export interface TailLayout {
  bytes: number
  tailOffset: number
  footerOffset?: number
  blooms?: Record<string, ByteSpan>
  indexCrc?: number
  footerCrc?: number
}

/** A byte range of a tail read as one piece and, when the writer recorded it, its CRC-32. */
export interface TailRegion {
  start: number
  end: number
  crc?: number
  /** What it is, for the error that names a damaged one. */
  what: string
}

/**
 * The regions that open a partition, the last one ending the file: the page indexes, the
 * bloom filters of those `bloomColumns` the file has, and the footer. A partition whose
 * manifest entry has no bloom spans (written before them) is opened with its whole tail.
 */
export function tailRegions(p: TailLayout, bloomColumns: readonly string[]): TailRegion[] {
  if (p.footerOffset === undefined || !p.blooms) return [{ start: p.tailOffset, end: p.bytes, what: 'the tail' }]
  const blooms = p.blooms
  const bloomStart = Math.min(p.footerOffset, ...Object.values(blooms).map(b => b.offset))
  const wanted = bloomColumns.flatMap(c => {
    const b = blooms[c]
    return b ? [{ start: b.offset, end: b.offset + b.length, crc: b.crc, what: `the bloom filters of ${c}` }] : []
  })
  return [{ start: p.tailOffset, end: bloomStart, crc: p.indexCrc, what: 'the page indexes' }, ...wanted]
    .filter(r => r.end > r.start)
    .sort((a, b) => a.start - b.start)
    .concat({ start: p.footerOffset, end: p.bytes, crc: p.footerCrc, what: 'the footer' })
}

/** The byte ranges `[start, end)` that cover `regions`, ascending, touching ones merged. */
export function mergedRanges(regions: readonly TailRegion[]): [number, number][] {
  const merged: [number, number][] = []
  for (const r of [...regions].sort((a, b) => a.start - b.start)) {
    const last = merged[merged.length - 1]
    if (last && r.start <= last[1]) last[1] = Math.max(last[1], r.end)
    else merged.push([r.start, r.end])
  }
  return merged
}

/**
 * What opens a partition the value index names: its page indexes and footer, no bloom filter
 * (the index has already narrowed the row groups); the whole tail when its layout is not known.
 */
export function indexedTailRegions(p: TailLayout & { indexed?: { bloomOffset?: number } }): TailRegion[] {
  const bloomStart = p.indexed?.bloomOffset ?? p.footerOffset
  if (p.footerOffset === undefined || bloomStart === undefined || bloomStart > p.footerOffset)
    return [{ start: p.tailOffset, end: p.bytes, what: 'the tail' }]
  // [tailOffset, bloomStart) is exactly the region the page-index checksum covers
  return [{ start: p.tailOffset, end: bloomStart, crc: p.indexCrc, what: 'the page indexes' }]
    .filter(r => r.end > r.start)
    .concat({ start: p.footerOffset, end: p.bytes, crc: p.footerCrc, what: 'the footer' })
}

/**
 * Reads the `regions` of a partition (see `tailRegions`) that `resident` does not hold
 * yet through the queue, in one round, into `resident`, and verifies each against its
 * checksum before anything parses it (a region that fails is not kept); returns the
 * last region, which ends with the footer.
 */
export async function readTail(queue: ReadQueue, key: string, regions: readonly TailRegion[], resident: Resident): Promise<Uint8Array> {
  const fresh = regions.filter(r => !resident.view(r.start, r.end))
  const missing = mergedRanges(fresh)
  const bytes = await Promise.all(missing.map(([start, end]) => queue.read(key, start, end, true)))
  missing.forEach(([start], i) => resident.add(start, bytes[i]))
  const damaged = fresh.find(r => r.crc !== undefined && crc32(resident.view(r.start, r.end)!) !== r.crc)
  if (damaged) {
    bytes.forEach(b => resident.remove(b))
    throw new CorruptObjectError(key, `${damaged.what} (bytes ${damaged.start}-${damaged.end - 1}) fail their checksum`)
  }
  const last = regions[regions.length - 1]
  return resident.view(last.start, last.end)!
}

/**
 * Reading index objects: whole-object gets (a bucket or a table is read whole, its key alone
 * locates it), verified where read, decoded, and kept in a bytes-bounded cache that also
 * shares reads in flight (two lookups of one query wanting the same table read it once).
 */
import type { ObjectStore } from '../store/types.ts'
import {
  bucketKey,
  decodeBucket,
  decodePack,
  decodeTable,
  IndexObjectError,
  log2,
  packKey,
  parsing,
  rowsKey,
  tableKey,
  unseal,
  type Bucket,
  type PartitionTable,
} from './format.ts'
import type { Entries, RowSlice, SegmentDescriptor } from './types.ts'
import { crc32 } from '../store/crc32.ts'
import { bytesToHex } from '../schema/hex.ts'

/** Fetches a whole object's bytes; throws IndexObjectError when it is missing. */
export type ObjectReader = (key: string) => Promise<Uint8Array>

/** Reads from `pending` (objects built but not stored yet) or else from `store`, counting store reads. */
export function storeReader(
  store: ObjectStore,
  pending?: ReadonlyMap<string, Uint8Array>,
  counts?: { reads: number; bytes: number },
): ObjectReader {
  return async key => {
    const held = pending?.get(key)
    if (held) return held
    if (counts) counts.reads++
    const got = await store.get(key)
    if (!got) throw new IndexObjectError(key, 'is missing')
    if (counts) counts.bytes += got.body.length
    return got.body
  }
}

/** Reads and decodes bucket `b` of `column` in segment `d`. */
export async function readBucket(read: ObjectReader, prefix: string, d: SegmentDescriptor, column: string, b: number): Promise<Bucket> {
  const key = bucketKey(prefix, d, column, b)
  return openBucket(key, await read(key), d, column, b)
}

/**
 * The verified, decoded bucket `b` of `column` in segment `d` from its stored bytes (its own
 * object, or its part of the column's pack), named `key` in errors.
 */
export function openBucket(key: string, stored: Uint8Array, d: SegmentDescriptor, column: string, b: number): Bucket {
  const c = d.columns[column]
  const k = log2(c.buckets)
  const body = unseal(key, stored, { kind: 'bucket', id: c.id, bucket: b, log2Buckets: k })
  const bucket = parsing(key, () => decodeBucket(body, b, k))
  if (Boolean(bucket.table) === Boolean(d.table))
    throw new IndexObjectError(
      key,
      `is damaged: ${d.table ? 'carries a partition table its segment keeps apart' : 'lacks its partition table'}`,
    )
  return bucket
}

/**
 * Reads the pack of `column` in segment `d`: its stored bucket objects, in bucket order,
 * each still sealed (`openBucket` verifies the ones a lookup uses). The pack is verified
 * whole first: a flipped bit anywhere in it is an IndexObjectError naming the pack.
 */
export async function readPack(read: ObjectReader, prefix: string, d: SegmentDescriptor, column: string): Promise<Uint8Array[]> {
  const key = packKey(prefix, d, column)
  const c = d.columns[column]
  const body = unseal(key, await read(key), { kind: 'pack', id: c.id, bucket: 0, log2Buckets: log2(c.buckets) })
  const parts = parsing(key, () => decodePack(body))
  if (parts.length !== c.buckets) throw new IndexObjectError(key, `is damaged: ${parts.length} buckets, not ${c.buckets}`)
  return parts
}

/** Reads and decodes segment `d`'s separate partition table. */
export async function readTable(read: ObjectReader, prefix: string, d: SegmentDescriptor & { table: string }): Promise<PartitionTable> {
  const key = tableKey(prefix, d, d.table)
  const body = unseal(key, await read(key), { kind: 'table', id: d.table, bucket: 0, log2Buckets: 0 })
  return parsing(key, () => decodeTable(body))
}

/** A stored segment as a merge reads it: its partition table, then buckets one at a time. */
export interface SegmentSource {
  descriptor: SegmentDescriptor
  table(): Promise<PartitionTable>
  bucket(column: string, b: number): Promise<Entries>
  /** The rows object body beside bucket `b` (verified whole); undefined when the column stores no rows. */
  rows(column: string, b: number): Promise<Uint8Array | undefined>
}

/** Segment `d` read through `read`. */
export function segmentSource(read: ObjectReader, prefix: string, d: SegmentDescriptor): SegmentSource {
  return {
    descriptor: d,
    async table() {
      if (d.table) return readTable(read, prefix, { ...d, table: d.table })
      const column = Object.keys(d.columns)[0]
      if (column === undefined) throw new RangeError(`segment [${d.from}, ${d.to}] has no columns`)
      return (await readBucket(read, prefix, d, column, 0)).table!
    },
    async bucket(column, b) {
      if (!d.columns[column]) throw new RangeError(`segment [${d.from}, ${d.to}] does not index ${column}`)
      return (await readBucket(read, prefix, d, column, b)).entries
    },
    async rows(column, b) {
      const c = d.columns[column]
      if (!c?.rows) return undefined
      const key = rowsKey(prefix, d, column, b)
      return unseal(key, await read(key), { kind: 'rows', id: c.id, bucket: b, log2Buckets: log2(c.buckets) })
    },
  }
}

/**
 * The bytes of each slice (ranged reads, all at once), each checked against its CRC-32 from
 * the verified bucket: a flipped bit, a short read or a missing object is an IndexObjectError
 * naming the object and the value, never other rows. Kept in `cache` (immutable objects).
 */
export async function readSlices(
  store: ObjectStore,
  slices: readonly RowSlice[],
  cache: IndexCache,
  counts?: { reads: number; bytes: number },
): Promise<Uint8Array[]> {
  return Promise.all(
    slices.map(s =>
      cache.get(`${s.key}@${s.offset}+${s.length}`, async () => {
        if (counts) counts.reads++
        const got = s.length === 0 ? { body: new Uint8Array(0) } : await store.get(s.key, { offset: s.offset, length: s.length })
        if (!got) throw new IndexObjectError(s.key, 'is missing')
        if (counts) counts.bytes += got.body.length
        const name = typeof s.value === 'string' ? s.value : bytesToHex(s.value)
        if (got.body.length !== s.length)
          throw new IndexObjectError(s.key, `is damaged: the rows of ${name} at ${s.offset} are ${got.body.length} bytes, not ${s.length}`)
        if (crc32(got.body) !== s.crc) throw new IndexObjectError(s.key, `is damaged: the rows of ${name} at ${s.offset} fail their CRC-32`)
        return { value: got.body, size: got.body.length + 64 }
      }),
    ),
  )
}

/** The values an index cache holds, shared by its scoped views. */
class Held {
  readonly values = new Map<string, { value: unknown; size: number }>()
  size = 0
}

/**
 * Decoded tables and buckets kept across lookups (immutable objects: never stale), least
 * recently used out beyond `maxBytes`; a load in flight is shared, not repeated, within one
 * cache. A query uses a `scoped()` view of the server's cache: it shares what was read but
 * not another query's loads, since a Worker cancels a request that waits on another
 * request's read (BENCHMARKS.md, run V).
 */
export class IndexCache {
  private loading = new Map<string, Promise<unknown>>()
  readonly maxBytes: number
  private readonly held: Held

  constructor(maxBytes = 8 * 1024 * 1024, held = new Held()) {
    this.maxBytes = maxBytes
    this.held = held
  }

  /** A view that shares this cache's values and keeps its loads in flight to itself. */
  scoped(): IndexCache {
    return new IndexCache(this.maxBytes, this.held)
  }

  /** The value held under `key`, if any (no load, no change of recency). */
  peek<T>(key: string): T | undefined {
    return this.held.values.get(key)?.value as T | undefined
  }

  async get<T>(key: string, load: () => Promise<{ value: T; size: number }>): Promise<T> {
    const { values } = this.held
    const hit = values.get(key)
    if (hit) {
      values.delete(key)
      values.set(key, hit)
      return hit.value as T
    }
    const pending = this.loading.get(key)
    if (pending) return pending as Promise<T>
    const p = load().then(({ value, size }) => {
      this.keep(key, value, size)
      return value
    })
    this.loading.set(key, p)
    try {
      return await p
    } finally {
      this.loading.delete(key)
    }
  }

  private keep(key: string, value: unknown, size: number): void {
    if (size > this.maxBytes) return
    const held = this.held
    const old = held.values.get(key)
    if (old) held.size -= old.size
    held.values.set(key, { value, size })
    held.size += size
    for (const [k, v] of held.values) {
      if (held.size <= this.maxBytes) break
      held.values.delete(k)
      held.size -= v.size
    }
  }
}

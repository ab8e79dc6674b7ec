/**
 * Reads the manifest for the planner. Shards are immutable (their keys carry the
 * generation), so they are cached for the life of the isolate or process, within a
 * byte budget; the root is cached for a short time so new publications show up
 * quickly. A query walks the shards of its range one after another (`scanPartitions`),
 * so a whole-chain scan never holds the whole-chain manifest.
 */
import type { ObjectStore } from '../store/types.ts'
import { rootKey } from './keys.ts'
import { decodeRoot, decodeShard } from './codec.ts'
import { CorruptObjectError, StorageError } from '../store/types.ts'
import type { BlockRange, ChainRef, ManifestRoot, ManifestShard, PartitionEntry, ShardRef } from './types.ts'
import { crc32 } from '../store/crc32.ts'

const decoder = new TextDecoder()

export const parseRoot = (bytes: Uint8Array): ManifestRoot => decodeRoot(JSON.parse(decoder.decode(bytes)))

/**
 * Parses a stored manifest object; bytes that do not parse are a damaged object, named. A
 * body shorter than the object is a failed read (retry), not damage.
 */
function parsed<T>(key: string, got: { body: Uint8Array; size: number }, parse: (bytes: Uint8Array) => T): T {
  if (got.body.length < got.size) throw new StorageError(`short read of ${key}: ${got.body.length} of ${got.size} bytes`)
  try {
    return parse(got.body)
  } catch (err) {
    throw new CorruptObjectError(key, `not a readable manifest object (${(err as Error).message})`, { cause: err })
  }
}

export const parseShard = (bytes: Uint8Array): ManifestShard => decodeShard(JSON.parse(decoder.decode(bytes)))

/** A shard's bytes must have the CRC-32 its root records (when the root records one). */
export function checkShard(key: string, bytes: Uint8Array, crc: number | undefined): void {
  if (crc !== undefined && crc32(bytes) !== crc) throw new CorruptObjectError(key, 'the manifest shard fails the checksum its root records')
}

export interface ManifestReaderOptions {
  /** How long a root stays cached, in ms (default 2,000). */
  rootTtlMs?: number
  /** Shards kept in memory (default 512, least recently used evicted). */
  maxShards?: number
  /**
   * Stored (JSON) bytes of the shards kept in memory, at most (default 8 MiB, about 70
   * full-chain logs shards); the least recently used are evicted first.
   */
  maxShardBytes?: number
}

/** What a query's walk over the manifest has loaded so far; grows as the walk advances. */
export interface ManifestProgress {
  shards: number
  /** Partitions of the loaded shards that overlap the range, and their row groups. */
  partitions: number
  rowGroups: number
}

/** The partitions of a range, read shard by shard while they are consumed. */
export interface PartitionWalk {
  /** Every partition of the dataset (from the root's shard references, no shard loaded). */
  total: number
  /** Shards the range touches. */
  shards: number
  loaded: ManifestProgress
  /** Partitions overlapping the range, in block order. */
  partitions: AsyncGenerator<PartitionEntry>
}

/** Tuning of a walk over the manifest. */
export interface WalkOptions {
  /** Shards loaded ahead of the one being consumed (default 1: shard k+1 loads while k is scanned). */
  lookAhead?: number
}

interface CachedShard {
  shard: ManifestShard
  bytes: number
}

const overlaps = (x: { from: number; to: number }, range: BlockRange) => x.from <= range[1] && x.to >= range[0]

export interface PartitionsInRange {
  root: ManifestRoot
  partitions: PartitionEntry[]
  /** Partitions of the dataset outside the range, skipped without opening a shard or a file. */
  skipped: number
}

export class ManifestReader {
  readonly store: ObjectStore
  readonly rootTtlMs: number
  readonly maxShards: number
  readonly maxShardBytes: number
  private roots = new Map<string, { at: number; root: ManifestRoot | null }>()
  private shards = new Map<string, CachedShard>()
  private cachedBytes = 0

  constructor(store: ObjectStore, options: ManifestReaderOptions = {}) {
    this.store = store
    this.rootTtlMs = options.rootTtlMs ?? 2_000
    this.maxShards = options.maxShards ?? 512
    this.maxShardBytes = options.maxShardBytes ?? 8 * 1024 * 1024
  }

  /**
   * The chain's root, or null when nothing was ever published for it. A root once read is
   * shared, a read in flight is not: workerd cancels a request as hung ("your Worker's code
   * had hung") when all it waits for is another request's I/O (BENCHMARKS.md, run V).
   */
  async root(chain: ChainRef, store: ObjectStore = this.store): Promise<ManifestRoot | null> {
    const key = rootKey(chain)
    const cached = this.roots.get(key)
    if (cached && Date.now() - cached.at < this.rootTtlMs) return cached.root
    const got = await store.get(key)
    const root = got ? parsed(key, got, parseRoot) : null
    this.roots.set(key, { at: Date.now(), root })
    return root
  }

  /**
   * A shard by key, from the cache or the store, verified against `crc` (its root's record) when
   * read. Only read shards are shared between queries, as roots are: a Worker cancels a request
   * that waits on another request's read, so two queries loading one shard each read it.
   */
  async shard(key: string, store: ObjectStore = this.store, crc?: number): Promise<ManifestShard> {
    const cached = this.shards.get(key)
    if (cached) {
      this.shards.delete(key)
      this.shards.set(key, cached)
      return cached.shard
    }
    const got = await store.get(key)
    if (!got) throw new CorruptObjectError(key, 'the manifest shard the root names is missing')
    // a short read is a failed read (retry, in `parsed`), not damage
    if (got.body.length >= got.size) checkShard(key, got.body, crc)
    const shard = parsed(key, got, parseShard)
    this.forget(key)
    this.shards.set(key, { shard, bytes: got.body.length })
    this.cachedBytes += got.body.length
    this.evict()
    return shard
  }

  private forget(key: string): void {
    const entry = this.shards.get(key)
    if (!entry) return
    this.shards.delete(key)
    this.cachedBytes -= entry.bytes
  }

  /** Drops least recently used shards until both limits hold (the newest always stays). */
  private evict(): void {
    for (const key of this.shards.keys()) {
      if (this.shards.size <= 1 || (this.shards.size <= this.maxShards && this.cachedBytes <= this.maxShardBytes)) return
      this.forget(key)
    }
  }

  /**
   * Partitions of a dataset that overlap `range`, in block order, loaded shard by shard
   * as they are consumed: at most `1 + lookAhead` shards of the walk are loaded or in
   * flight at once, so the memory a query holds does not grow with its range. Only the
   * shards the range touches are loaded. `store` lets a caller count this request's I/O.
   */
  scanPartitions(
    root: ManifestRoot,
    dataset: string,
    range: BlockRange,
    store: ObjectStore = this.store,
    options: WalkOptions = {},
  ): PartitionWalk {
    const index = root.datasets[dataset]
    const refs = index ? index.shards.filter(s => overlaps(s, range)) : []
    const loaded: ManifestProgress = { shards: 0, partitions: 0, rowGroups: 0 }
    const lookAhead = options.lookAhead ?? 1
    const shard = (ref: ShardRef) => this.shard(ref.key, store, ref.crc)
    async function* walk(): AsyncGenerator<PartitionEntry> {
      const pending: Promise<ManifestShard>[] = []
      let next = 0
      while (next < refs.length || pending.length) {
        while (next < refs.length && pending.length < 1 + lookAhead) pending.push(shard(refs[next++]))
        const current = (await pending.shift()!).partitions.filter(p => overlaps(p, range))
        loaded.shards++
        loaded.partitions += current.length
        loaded.rowGroups += current.reduce((n, p) => n + p.rowGroups.length, 0)
        yield* current
      }
    }
    return {
      total: index ? index.shards.reduce((n, s) => n + s.partitions, 0) : 0,
      shards: refs.length,
      loaded,
      partitions: walk(),
    }
  }

  /**
   * Every partition of a dataset that overlaps `range`, in block order, all shards of
   * the range loaded in parallel: for tools and tests over small ranges (a query uses
   * `scanPartitions`). `store` lets a caller count this request's I/O.
   */
  async partitions(root: ManifestRoot, dataset: string, range: BlockRange, store: ObjectStore = this.store): Promise<PartitionsInRange> {
    const walk = this.scanPartitions(root, dataset, range, store, { lookAhead: Infinity })
    const partitions: PartitionEntry[] = []
    for await (const p of walk.partitions) partitions.push(p)
    return { root, partitions, skipped: walk.total - partitions.length }
  }
}

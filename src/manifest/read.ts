/**
 * Reads the manifest for the planner. Shards are immutable (their keys carry the
 * generation), so they are cached for the life of the isolate or process; the root
 * is cached for a short time so new publications show up quickly.
 */
import type { ObjectStore } from '../store/types.ts'
import { rootKey } from './keys.ts'
import { decodeRoot, decodeShard } from './codec.ts'
import type { BlockRange, ChainRef, ManifestRoot, ManifestShard, PartitionEntry } from './types.ts'

const decoder = new TextDecoder()

export const parseRoot = (bytes: Uint8Array): ManifestRoot => decodeRoot(JSON.parse(decoder.decode(bytes)))

export const parseShard = (bytes: Uint8Array): ManifestShard => decodeShard(JSON.parse(decoder.decode(bytes)))

export interface ManifestReaderOptions {
  /** How long a root stays cached, in ms (default 2,000). */
  rootTtlMs?: number
  /** Shards kept in memory (default 512, least recently used evicted). */
  maxShards?: number
}

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
  private roots = new Map<string, { at: number; root: Promise<ManifestRoot | null> }>()
  private shards = new Map<string, Promise<ManifestShard>>()

  constructor(store: ObjectStore, options: ManifestReaderOptions = {}) {
    this.store = store
    this.rootTtlMs = options.rootTtlMs ?? 2_000
    this.maxShards = options.maxShards ?? 512
  }

  /** The chain's root, or null when nothing was ever published for it. */
  root(chain: ChainRef, store: ObjectStore = this.store): Promise<ManifestRoot | null> {
    const key = rootKey(chain)
    const cached = this.roots.get(key)
    if (cached && Date.now() - cached.at < this.rootTtlMs) return cached.root
    const root = store.get(key).then(got => (got ? parseRoot(got.body) : null))
    this.roots.set(key, { at: Date.now(), root })
    root.catch(() => this.roots.delete(key))
    return root
  }

  shard(key: string, store: ObjectStore = this.store): Promise<ManifestShard> {
    let shard = this.shards.get(key)
    if (shard) {
      this.shards.delete(key)
      this.shards.set(key, shard)
      return shard
    }
    shard = store.get(key).then(got => {
      if (!got) throw new Error(`manifest shard ${key} is missing`)
      return parseShard(got.body)
    })
    shard.catch(() => this.shards.delete(key))
    this.shards.set(key, shard)
    while (this.shards.size > this.maxShards) this.shards.delete(this.shards.keys().next().value as string)
    return shard
  }

  /**
   * Partitions of a dataset that overlap `range`, in block order. Only the shards the
   * range touches are loaded, in parallel. `store` lets a caller count this request's I/O.
   */
  async partitions(root: ManifestRoot, dataset: string, range: BlockRange, store: ObjectStore = this.store): Promise<PartitionsInRange> {
    const index = root.datasets[dataset]
    if (!index) return { root, partitions: [], skipped: 0 }
    const refs = index.shards.filter(s => s.from <= range[1] && s.to >= range[0])
    const shards = await Promise.all(refs.map(ref => this.shard(ref.key, store)))
    const all = index.shards.reduce((n, s) => n + s.partitions, 0)
    const partitions = shards.flatMap(s => s.partitions).filter(p => p.from <= range[1] && p.to >= range[0])
    return { root, partitions, skipped: all - partitions.length }
  }
}

/**
 * Atomic publication. Partitions are already written; this writes new shard objects
 * (immutable, keyed by generation) and then swaps the root with a conditional put.
 * A reader sees the old root or the new one, never a mix, and of two concurrent
 * publishers only one can move the root from a given generation: the other reloads
 * and merges again.
 */
import type { ObjectStore } from '../store/types.ts'
import { mergeRanges, overlaps } from './coverage.ts'
import { rootKey, shardKey } from './keys.ts'
import {
  MANIFEST_FORMAT,
  type ChainRef,
  type DatasetIndex,
  type ManifestRoot,
  type ManifestShard,
  type PartitionEntry,
  type RetiredSegment,
  type SegmentDescriptor,
  type ShardRef,
} from './types.ts'
import { checkShard, parseRoot, parseShard } from './read.ts'
import { loadRetired, nextRetired, RetiredListGone, retiredObjects, segmentId, storeRetired } from './retired.ts'
import { crc32 } from '../store/crc32.ts'
import { decodeRoot, encodeRoot, encodeShard } from './codec.ts'

/** Blocks per manifest shard by default: see partitions-manifest/README.md for the sizing. */
export const DEFAULT_SHARD_SPAN = 100_000

/** A dataset's segments after a change and, if the change swept it or retired segments, the whole retired list. */
export interface IndexChange {
  segments: SegmentDescriptor[]
  retired?: RetiredSegment[]
}

/** A new partition overlaps one already published with different content. */
export class OverlapError extends Error {}

export interface PublishOptions {
  /** Used only when the chain has no root yet; an existing root keeps its span. */
  shardSpan?: number
  /** Conditional-write attempts before giving up (default 20). */
  attempts?: number
  /** Sets the root's label (see ManifestRoot); an existing label is kept when omitted. */
  label?: string
  /**
   * The index segments of each dataset once the additions are in, given the root they are
   * added to (called again on that root's successor when a conditional put is lost), so the
   * index and the partitions it covers are published in one root write (src/index/publish.ts).
   * `retired`, when given, replaces the root's list (the step deleted or retired some);
   * segments it no longer lists join that list either way. The step may throw
   * `RetiredListGone` (a newer root replaced the list it read): the publication starts over.
   */
  index?: (root: ManifestRoot) => Promise<Record<string, IndexChange>>
  /**
   * New partitions replace published ones inside their range instead of clashing with them
   * (a re-decode rewriting derived datasets); a published one only partly inside still clashes.
   */
  replace?: boolean
}

export interface PublishResult {
  root: ManifestRoot
  /** Entries already published under the same key (an ingest that is run again). */
  skipped: number
}

/** A random wait before the next conditional root write, doubling up to 1 s: publishers that lost together do not collide again. */
const backoff = (attempt: number) => new Promise(r => setTimeout(r, Math.min(1000, 10 * 2 ** attempt) * Math.random()))

const encoder = new TextEncoder()
const toBytes = (value: unknown) => encoder.encode(JSON.stringify(value))

/** Publishes partitions of one or more datasets of a chain in one generation. */
export async function publish(
  store: ObjectStore,
  chain: ChainRef,
  additions: Record<string, PartitionEntry[]>,
  options: PublishOptions = {},
): Promise<PublishResult> {
  const attempts = options.attempts ?? 20
  // A shard key taken by a publisher that lost (or died before its root write) is never
  // reused: each conflict moves this publisher to a higher generation.
  let skip = 0
  for (let attempt = 0; attempt < attempts; attempt++) {
    const current = await store.get(rootKey(chain))
    const root = current ? parseRoot(current.body) : emptyRoot(chain, options.shardSpan ?? DEFAULT_SHARD_SPAN)
    const generation = root.generation + 1 + skip
    // Retired lists written for this attempt: deleted unless the root that names them is written.
    const lists: string[] = []
    const result = await prepare(
      store,
      options.label === undefined ? root : { ...root, label: options.label },
      additions,
      generation,
      options.replace === true,
      lists,
    )
    if (result === 'conflict') {
      await dropLists(store, lists)
      skip++
      continue
    }
    if (result.added === 0) return { root, skipped: result.skipped }
    let changes: Record<string, IndexChange>
    try {
      changes = (await options.index?.(root)) ?? {}
    } catch (err) {
      if (!(err instanceof RetiredListGone)) throw err
      await dropLists(store, lists)
      skip++
      continue
    }
    for (const [dataset, change] of Object.entries(changes)) {
      const before = root.datasets[dataset]?.index
      const index = await indexAfter(store, chain, dataset, generation, before, change, result.root.updatedAt, lists)
      result.root.datasets[dataset] = { ...result.root.datasets[dataset], index }
      if (!index) delete result.root.datasets[dataset].index
    }
    const written = await store.put(
      rootKey(chain),
      toBytes(encodeRoot(result.root)),
      current ? { ifMatch: current.etag, contentType: 'application/json' } : { ifNoneMatch: '*', contentType: 'application/json' },
    )
    const named = retiredObjects(result.root.datasets)
    if (written) {
      // The lists the old root named and the new one does not are read by writers only, who start over without them.
      await dropLists(
        store,
        [...lists, ...retiredObjects(root.datasets)].filter(key => !named.has(key)),
      )
      return { root: result.root, skipped: result.skipped }
    }
    await dropLists(store, lists)
    await backoff(attempt)
  }
  throw new Error(`manifest of ${chain.code}: gave up after ${attempts} conflicting publications`)
}

/**
 * The index a root lists after `change`. Segments it no longer lists join the retired list
 * (`nextRetired`: kept from `before` unless the change gives its own), stored as an object of
 * its own (retired.ts) whose key is added to `lists`; when nothing retires, the root keeps
 * naming the list `before` named. Undefined when nothing is left to list.
 */
async function indexAfter(
  store: ObjectStore,
  chain: ChainRef,
  dataset: string,
  generation: number,
  before: DatasetIndex['index'],
  change: IndexChange,
  now: string,
  lists: string[],
): Promise<DatasetIndex['index']> {
  const live = new Set(change.segments.map(segmentId))
  const dropped = (before?.segments ?? []).some(s => !live.has(segmentId(s)))
  if (change.retired === undefined && !dropped) {
    if (change.segments.length === 0 && !before?.retired) return undefined
    return { segments: change.segments, ...(before?.retired ? { retired: before.retired } : {}) }
  }
  const retired = nextRetired(before?.segments ?? [], change.retired ?? (await loadRetired(store, before?.retired)), change.segments, now)
  if (retired.length === 0) return change.segments.length ? { segments: change.segments } : undefined
  const ref = await storeRetired(store, chain, dataset, generation, retired)
  lists.push(ref.key)
  return { segments: change.segments, retired: ref }
}

/** Deletes retired-list objects no root names (best effort: one left behind is a few bytes nobody reads). */
async function dropLists(store: ObjectStore, keys: readonly string[]): Promise<void> {
  await Promise.all(keys.map(key => store.delete(key).catch(() => undefined)))
}

function emptyRoot(chain: ChainRef, shardSpan: number): ManifestRoot {
  return { format: MANIFEST_FORMAT, chain, generation: 0, shardSpan, updatedAt: new Date(0).toISOString(), datasets: {} }
}

async function prepare(
  store: ObjectStore,
  root: ManifestRoot,
  additions: Record<string, PartitionEntry[]>,
  generation: number,
  replace: boolean,
  lists: string[],
): Promise<'conflict' | { root: ManifestRoot; added: number; skipped: number }> {
  const next: ManifestRoot = { ...root, generation, updatedAt: new Date().toISOString(), datasets: { ...root.datasets } }
  let added = 0
  let skipped = 0
  for (const [dataset, entries] of Object.entries(additions)) {
    const index: DatasetIndex = root.datasets[dataset] ?? { coverage: [], rows: 0, bytes: 0, shards: [] }
    const byShard = new Map<number, PartitionEntry[]>()
    for (const entry of entries) {
      const shard = Math.floor(entry.from / root.shardSpan)
      if (Math.floor(entry.to / root.shardSpan) !== shard) {
        throw new Error(`partition ${entry.key} crosses a manifest shard boundary (span ${root.shardSpan})`)
      }
      byShard.set(shard, [...(byShard.get(shard) ?? []), entry])
    }
    const shards = new Map(index.shards.map(s => [s.index, s]))
    for (const [shardIndex, newEntries] of byShard) {
      const ref = shards.get(shardIndex)
      const existing = ref ? await loadShard(store, ref) : []
      const merged = mergePartitions(existing, newEntries, replace)
      skipped += merged.skipped
      if (merged.added === 0) continue
      added += merged.added
      const shard: ManifestShard = {
        format: MANIFEST_FORMAT,
        chain: root.chain,
        dataset,
        index: shardIndex,
        generation,
        partitions: merged.partitions,
      }
      const key = shardKey(root.chain, dataset, shardIndex, generation)
      const bytes = toBytes(encodeShard(shard))
      if (!(await store.put(key, bytes, { ifNoneMatch: '*', contentType: 'application/json' }))) return 'conflict'
      shards.set(shardIndex, { ...shardRef(shardIndex, key, merged.partitions), crc: crc32(bytes) })
    }
    const refs = [...shards.values()].sort((a, b) => a.index - b.index)
    // A replaced partition must not stay reachable through the index: its segments go (their blocks are then read without it).
    const kept = (index.index?.segments ?? []).filter(
      s => !replace || !entries.some(e => s.coverage.some(([a, b]) => a <= e.to && b >= e.from)),
    )
    const indexed = await indexAfter(store, root.chain, dataset, generation, index.index, { segments: kept }, next.updatedAt, lists)
    next.datasets[dataset] = {
      ...(indexed ? { index: indexed } : {}),
      coverage: mergeRanges([...index.coverage, ...entries.map(e => [e.from, e.to] as [number, number])]),
      rows: refs.reduce((n, s) => n + s.rows, 0),
      bytes: refs.reduce((n, s) => n + s.bytes, 0),
      shards: refs,
    }
  }
  return { root: next, added, skipped }
}

async function loadShard(store: ObjectStore, ref: ShardRef): Promise<PartitionEntry[]> {
  const got = await store.get(ref.key)
  if (!got) throw new Error(`manifest shard ${ref.key} is missing`)
  checkShard(ref.key, got.body, ref.crc)
  return parseShard(got.body).partitions
}

/**
 * Adds entries to a shard's partitions; the same key again is a no-op, any other overlap is
 * refused, or with `replace` drops the published partitions inside the entry's range.
 */
export function mergePartitions(
  existing: PartitionEntry[],
  entries: PartitionEntry[],
  replace = false,
): { partitions: PartitionEntry[]; added: number; skipped: number } {
  let partitions = [...existing]
  let added = 0
  let skipped = 0
  for (const entry of [...entries].sort((a, b) => a.from - b.from)) {
    const clash = partitions.find(p => overlaps([p.from, p.to], [entry.from, entry.to]))
    if (clash?.key === entry.key) {
      skipped++
      continue
    }
    if (
      clash &&
      replace &&
      !partitions.some(p => overlaps([p.from, p.to], [entry.from, entry.to]) && (p.from < entry.from || p.to > entry.to))
    ) {
      partitions = partitions.filter(p => !overlaps([p.from, p.to], [entry.from, entry.to]))
    } else if (clash) throw new OverlapError(`partition ${entry.key} overlaps published ${clash.key}`)
    partitions.push(entry)
    added++
  }
  partitions.sort((a, b) => a.from - b.from)
  return { partitions, added, skipped }
}

function shardRef(index: number, key: string, partitions: PartitionEntry[]): ShardRef {
  return {
    index,
    key,
    from: partitions[0].from,
    to: partitions[partitions.length - 1].to,
    partitions: partitions.length,
    rows: partitions.reduce((n, p) => n + p.rows, 0),
    bytes: partitions.reduce((n, p) => n + p.bytes, 0),
  }
}

/**
 * Replaces the index segments of datasets without publishing partitions (a reindex): `change`
 * gets the current root and returns each dataset's new list, which must cover only published
 * partitions; called again on the successor when another publisher moved the root first.
 */
export async function publishIndex(
  store: ObjectStore,
  chain: ChainRef,
  change: (root: ManifestRoot) => Promise<Record<string, SegmentDescriptor[]>>,
  attempts = 20,
): Promise<ManifestRoot> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const current = await store.get(rootKey(chain))
    if (!current) throw new Error(`chain ${chain.code} has no manifest to index`)
    const root = parseRoot(current.body)
    const next: ManifestRoot = {
      ...root,
      generation: root.generation + 1,
      updatedAt: new Date().toISOString(),
      datasets: { ...root.datasets },
    }
    const lists: string[] = []
    try {
      for (const [dataset, segments] of Object.entries(await change(root))) {
        const index = await indexAfter(
          store,
          chain,
          dataset,
          next.generation,
          root.datasets[dataset]?.index,
          { segments },
          next.updatedAt,
          lists,
        )
        next.datasets[dataset] = { ...next.datasets[dataset], index }
        if (!index) delete next.datasets[dataset].index
      }
      const encoded = encodeRoot(next)
      // what a reader will check: an index over unpublished blocks is refused here, not served
      decodeRoot(JSON.parse(JSON.stringify(encoded)))
      if (await store.put(rootKey(chain), toBytes(encoded), { ifMatch: current.etag, contentType: 'application/json' })) {
        const named = retiredObjects(next.datasets)
        await dropLists(
          store,
          [...retiredObjects(root.datasets)].filter(key => !named.has(key)),
        )
        return next
      }
    } catch (err) {
      await dropLists(store, lists)
      if (!(err instanceof RetiredListGone)) throw err
      continue
    }
    await dropLists(store, lists)
    await backoff(attempt)
  }
  throw new Error(`manifest of ${chain.code}: gave up after ${attempts} conflicting publications`)
}

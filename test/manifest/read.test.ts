import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { publish } from '../../src/manifest/publish.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { ChainRef, ManifestRoot, PartitionEntry } from '../../src/manifest/types.ts'
import { countingStore } from '../../src/store/counting.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'

const chain: ChainRef = { family: 'evm', id: 31337, code: 'DEVNET' }

const entry = (from: number, to: number): PartitionEntry => ({
  key: `evm-31337/logs/${from}-${to}-a.parquet`,
  from,
  to,
  rows: 10,
  bytes: 1000,
  tailOffset: 900,
  rowGroups: [
    { from, to: from + 49, rows: 5, offset: 4, length: 400 },
    { from: from + 50, to, rows: 5, offset: 404, length: 496 },
  ],
})

/** A store that logs when each shard read starts and ends, in one sequence with the consumer's events. */
function loggingStore(inner: ObjectStore, events: string[]): ObjectStore {
  return {
    ...inner,
    async get(key, range) {
      const shard = /\/(\d{6})-g\d+\.json$/.exec(key)?.[1]
      if (shard) events.push(`start ${Number(shard)}`)
      const got = await inner.get(key, range)
      await new Promise(resolve => setTimeout(resolve, 2))
      if (shard) events.push(`end ${Number(shard)}`)
      return got
    },
  }
}

describe('ManifestReader.scanPartitions', () => {
  let dir: string
  let store: ObjectStore
  let root: ManifestRoot
  // Ten partitions of 100 blocks in five shards of 200 blocks.
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'manifest-read-'))
    store = fsStore(dir)
    root = (await publish(store, chain, { logs: Array.from({ length: 10 }, (_, i) => entry(i * 100, i * 100 + 99)) }, { shardSpan: 200 }))
      .root
  })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('never holds more than two shards of a five-shard range: shard k+2 is read only after shard k is consumed', async () => {
    const events: string[] = []
    const walk = new ManifestReader(loggingStore(store, events)).scanPartitions(root, 'logs', [0, 999])
    expect({ total: walk.total, shards: walk.shards }).toEqual({ total: 10, shards: 5 })
    const seen: number[] = []
    for await (const p of walk.partitions) {
      events.push(`consume ${Math.floor(p.from / 200)}`)
      seen.push(p.from)
      await new Promise(resolve => setTimeout(resolve, 3))
    }
    expect(seen).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900])
    // Held: read started and not every partition consumed yet.
    let most = 0
    for (let i = 0; i < events.length; i++) {
      const before = events.slice(0, i + 1)
      const held = [0, 1, 2, 3, 4].filter(k => before.includes(`start ${k}`) && before.filter(e => e === `consume ${k}`).length < 2)
      most = Math.max(most, held.length)
    }
    expect(most).toBe(2)
    expect(walk.loaded).toEqual({ shards: 5, partitions: 10, rowGroups: 20 })
  })

  it('loads only the shards the range touches, and counts only partitions overlapping the range', async () => {
    const counted = countingStore(store)
    const walk = new ManifestReader(counted).scanPartitions(root, 'logs', [250, 450])
    const keys: string[] = []
    for await (const p of walk.partitions) keys.push(p.key)
    expect(keys).toEqual([entry(200, 299).key, entry(300, 399).key, entry(400, 499).key])
    expect(counted.counts.requests).toBe(2)
    expect(walk.loaded).toEqual({ shards: 2, partitions: 3, rowGroups: 6 })
  })

  it('stops reading shards when the consumer stops', async () => {
    const counted = countingStore(store)
    const walk = new ManifestReader(counted).scanPartitions(root, 'logs', [0, 999])
    for await (const p of walk.partitions) if (p.from === 100) break
    expect(counted.counts.requests).toBeLessThanOrEqual(2)
  })

  it('keeps shards cached within its byte budget, evicting the least recently used', async () => {
    const walkAll = async (reader: ManifestReader) => {
      for await (const _ of reader.scanPartitions(root, 'logs', [0, 999]).partitions) void _
    }
    const roomy = countingStore(store)
    const cached = new ManifestReader(roomy)
    await walkAll(cached)
    await walkAll(cached)
    expect(roomy.counts.requests).toBe(5)

    const shardBytes = (await store.get(root.datasets.logs.shards[0].key))!.body.length
    const tight = countingStore(store)
    const small = new ManifestReader(tight, { maxShardBytes: Math.floor(shardBytes * 2.5) })
    await walkAll(small)
    await walkAll(small)
    expect(tight.counts.requests).toBe(10)
    const last = root.datasets.logs.shards[4].key
    await small.shard(last)
    expect(tight.counts.requests).toBe(10)
  })

  it("shares a root once read, never a read in flight (a Worker cancels a request that waits only for another request's read)", async () => {
    const counted = countingStore(store)
    const reader = new ManifestReader(counted, { rootTtlMs: 60_000 })
    const both = await Promise.all([reader.root(chain), reader.root(chain)])
    expect(both).toEqual([root, root])
    expect(counted.counts.requests).toBe(2)
    expect(await reader.root(chain)).toEqual(root)
    expect(counted.counts.requests).toBe(2)
  })

  it('shares a shard once read, never a read in flight, and counts its bytes once', async () => {
    const counted = countingStore(store)
    const key = root.datasets.logs.shards[0].key
    const shardBytes = (await store.get(key))!.body.length
    // room for exactly one copy: a shard counted twice would evict itself
    const reader = new ManifestReader(counted, { maxShardBytes: shardBytes + 1 })
    const both = await Promise.all([reader.shard(key), reader.shard(key)])
    expect(both[0]).toEqual(both[1])
    expect(counted.counts.requests).toBe(2)
    await reader.shard(key)
    expect(counted.counts.requests).toBe(2)
  })

  it('serves the root the store holds: an older root put back replaces a newer generation once the cache expires', async () => {
    const key = 'evm-31337/manifest/root.json'
    const older = (await store.get(key))!.body.slice()
    const reader = new ManifestReader(store, { rootTtlMs: 20 })
    expect((await reader.root(chain))!.generation).toBe(root.generation)
    const newer = (await publish(store, chain, { logs: [entry(2000, 2099)] }, { shardSpan: 200 })).root
    expect(newer.generation).toBeGreaterThan(root.generation)
    await new Promise(r => setTimeout(r, 30))
    expect((await reader.root(chain))!.generation).toBe(newer.generation)
    // An operator restores the previous root: readers follow the store, whatever the generations.
    await store.put(key, older)
    await new Promise(r => setTimeout(r, 30))
    expect(await reader.root(chain)).toEqual(root)
  })
})

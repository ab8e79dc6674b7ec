import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { fsStore } from '../../src/store/fs.ts'
import { nextIndex, OverlapError, publish } from '../../src/manifest/publish.ts'
import { ManifestReader, parseRoot } from '../../src/manifest/read.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import type { ChainRef, PartitionEntry, SegmentDescriptor } from '../../src/manifest/types.ts'
import type { ObjectStore } from '../../src/store/types.ts'

const chain: ChainRef = { family: 'evm', id: 31337, code: 'DEVNET' }

const entry = (from: number, to: number, tag = 'a'): PartitionEntry => ({
  key: `evm-31337/logs/${from}-${to}-${tag}.parquet`,
  from,
  to,
  rows: (to - from + 1) * 2,
  bytes: 1000,
  tailOffset: 900,
  rowGroups: [{ from, to, rows: (to - from + 1) * 2, offset: 4, length: 896 }],
})

describe('publish', () => {
  let dir: string
  let store: ObjectStore
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'manifest-'))
    store = fsStore(dir)
  })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('publishes partitions, reports gaps as holes in coverage, and reads them back by range', async () => {
    await publish(store, chain, { logs: [entry(0, 99), entry(300, 399)] }, { shardSpan: 1000 })
    const { root } = await publish(store, chain, { logs: [entry(1000, 1099)], blocks: [entry(0, 99)] }, { shardSpan: 1000 })
    expect(root.generation).toBe(2)
    expect(root.datasets.logs.coverage).toEqual([
      [0, 99],
      [300, 399],
      [1000, 1099],
    ])
    expect(root.datasets.logs.shards.map(s => [s.index, s.from, s.to, s.partitions])).toEqual([
      [0, 0, 399, 2],
      [1, 1000, 1099, 1],
    ])
    expect(root.datasets.blocks.coverage).toEqual([[0, 99]])

    const reader = new ManifestReader(store)
    const stored = await reader.root(chain)
    expect(stored).toEqual(root)
    const hit = await reader.partitions(stored!, 'logs', [350, 1050])
    expect(hit.partitions.map(p => p.key)).toEqual([entry(300, 399).key, entry(1000, 1099).key])
    expect(hit.partitions[0].rowGroups).toEqual(entry(300, 399).rowGroups)
    expect(hit.skipped).toBe(1)
  })

  it('is idempotent for the same partitions and refuses an overlap with different content', async () => {
    await publish(store, chain, { logs: [entry(0, 99)] }, { shardSpan: 1000 })
    const again = await publish(store, chain, { logs: [entry(0, 99)] }, { shardSpan: 1000 })
    expect(again.skipped).toBe(1)
    expect(again.root.generation).toBe(1)
    await expect(publish(store, chain, { logs: [entry(50, 149, 'b')] })).rejects.toThrow(OverlapError)
    const root = parseRoot((await store.get(rootKey(chain)))!.body)
    expect(root.generation).toBe(1)
    expect(root.datasets.logs.coverage).toEqual([[0, 99]])
  })

  it('refuses a partition that crosses a shard boundary before writing anything', async () => {
    await expect(publish(store, chain, { logs: [entry(950, 1049)] }, { shardSpan: 1000 })).rejects.toThrow(/shard boundary/)
    expect(await store.get(rootKey(chain))).toBeNull()
  })

  it('lets concurrent publishers all land exactly once, through conditional writes', async () => {
    const writers = Array.from({ length: 8 }, (_, i) =>
      publish(fsStore(dir), chain, { logs: [entry(i * 100, i * 100 + 99)] }, { shardSpan: 1000 }),
    )
    await Promise.all(writers)
    const root = parseRoot((await store.get(rootKey(chain)))!.body)
    // Losers move to higher generations, so the count can pass 8; every publication landed once.
    expect(root.generation).toBeGreaterThanOrEqual(8)
    expect(root.datasets.logs.coverage).toEqual([[0, 799]])
    const { partitions } = await new ManifestReader(store).partitions(root, 'logs', [0, 799])
    expect(partitions.map(p => p.from)).toEqual([0, 100, 200, 300, 400, 500, 600, 700])
  })
})

describe('publish after a publisher died between its shard and root writes', () => {
  it('moves past the orphaned shard key instead of giving up', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'manifest-'))
    try {
      const store = fsStore(dir)
      await publish(store, chain, { logs: [entry(0, 99)] }, { shardSpan: 1000 })
      // The orphan a dead publisher leaves: the next generation's shard, never referenced.
      await store.put('evm-31337/manifest/logs/000000-g2.json', new TextEncoder().encode('{"orphan":true}'))
      const { root } = await publish(store, chain, { logs: [entry(100, 199)] }, { shardSpan: 1000 })
      expect(root.generation).toBe(3)
      expect(root.datasets.logs.coverage).toEqual([[0, 199]])
      const { partitions } = await new ManifestReader(store).partitions(root, 'logs', [0, 999])
      expect(partitions.map(p => p.from)).toEqual([0, 100])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('nextIndex: segments a root stops listing are retired, never forgotten', () => {
  const seg = (from: number, to: number, id: string): SegmentDescriptor => ({
    from,
    to,
    coverage: [[from, to]],
    partitions: 1,
    rowGroups: 1,
    columns: { address: { id, buckets: 1, bytes: 10 } },
  })
  const [a, b, ab, c] = [
    seg(0, 9, 'aaaaaaaaaaaaaaaa'),
    seg(10, 19, 'bbbbbbbbbbbbbbbb'),
    seg(0, 19, 'abababababababab'),
    seg(20, 29, 'cccccccccccccccc'),
  ]
  const schema = JSON.parse(readFileSync(new URL('../../partitions-manifest/manifest.schema.json', import.meta.url), 'utf8'))
  const retiredSchema = schema.$defs.root.properties.datasets.additionalProperties.properties.index.properties.retired.items

  it('retires the merged-away segments with the time of the change, and keeps earlier retired ones', () => {
    const merged = nextIndex({ segments: [a, b] }, { segments: [ab] }, 'T1')
    expect(merged).toEqual({
      segments: [ab],
      retired: [
        { since: 'T1', segment: a },
        { since: 'T1', segment: b },
      ],
    })
    const later = nextIndex(merged, { segments: [ab, c] }, 'T2')
    expect(later).toEqual({ segments: [ab, c], retired: merged!.retired })
    for (const r of later!.retired!) expect(Object.keys(r).filter(k => !(k in retiredSchema.properties))).toEqual([])
  })

  it('takes the retired list of a change that swept it, and still retires what it dropped', () => {
    const merged = nextIndex({ segments: [a, b] }, { segments: [ab] }, 'T1')
    expect(nextIndex(merged, { segments: [ab], retired: [] }, 'T2')).toEqual({ segments: [ab] })
    expect(nextIndex(merged, { segments: [], retired: [] }, 'T2')).toEqual({ segments: [], retired: [{ since: 'T2', segment: ab }] })
    expect(nextIndex({ segments: [a] }, { segments: [a] }, 'T2')).toEqual({ segments: [a] })
    expect(nextIndex(undefined, { segments: [] }, 'T2')).toBeUndefined()
  })

  it('does not list a segment as retired while it is listed again', () => {
    expect(nextIndex({ segments: [a], retired: [{ since: 'T0', segment: b }] }, { segments: [a, b] }, 'T1')).toEqual({ segments: [a, b] })
  })
})

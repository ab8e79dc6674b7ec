import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { fsStore } from '../../src/store/fs.ts'
import { OverlapError, publish } from '../../src/manifest/publish.ts'
import { loadRetired, nextRetired, RetiredListGone } from '../../src/manifest/retired.ts'
import { ManifestReader, parseRoot } from '../../src/manifest/read.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import type { ChainRef, PartitionEntry, RetiredRef, SegmentDescriptor } from '../../src/manifest/types.ts'
import { CorruptObjectError, type ObjectStore } from '../../src/store/types.ts'

const chain: ChainRef = { family: 'evm', id: 31337, code: 'DEVNET' }
const schema = JSON.parse(readFileSync(new URL('../../partitions-manifest/manifest.schema.json', import.meta.url), 'utf8'))

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

describe('nextRetired: segments a root stops listing are retired, never forgotten', () => {
  const [a, b, ab, c] = [
    seg(0, 9, 'aaaaaaaaaaaaaaaa'),
    seg(10, 19, 'bbbbbbbbbbbbbbbb'),
    seg(0, 19, 'abababababababab'),
    seg(20, 29, 'cccccccccccccccc'),
  ]

  it('retires the merged-away segments with the time of the change, and keeps earlier retired ones', () => {
    const merged = nextRetired([a, b], [], [ab], 'T1')
    expect(merged).toEqual([
      { since: 'T1', segment: a },
      { since: 'T1', segment: b },
    ])
    expect(nextRetired([ab], merged, [ab, c], 'T2')).toEqual(merged)
    for (const r of merged) expect(Object.keys(r).filter(k => !(k in schema.$defs.retiredSegment.properties))).toEqual([])
  })

  it('still retires what a change dropped, and none twice', () => {
    expect(nextRetired([ab], [], [], 'T2')).toEqual([{ since: 'T2', segment: ab }])
    expect(nextRetired([a], [{ since: 'T0', segment: a }], [], 'T2')).toEqual([{ since: 'T0', segment: a }])
    expect(nextRetired([a], [], [a], 'T2')).toEqual([])
  })

  it('does not list a segment as retired while it is listed again', () => {
    expect(nextRetired([a], [{ since: 'T0', segment: b }], [a, b], 'T1')).toEqual([])
  })
})

describe('the retired list lives in an object of its own', () => {
  const [a, b, ab] = [seg(0, 9, 'aaaaaaaaaaaaaaaa'), seg(10, 19, 'bbbbbbbbbbbbbbbb'), seg(0, 19, 'abababababababab')]
  const lists = async (store: ObjectStore) => (await store.list('evm-31337/manifest/logs/retired/')).map(o => o.key)

  it('is named by the root, checked when read, and the one a root stops naming is deleted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'retired-'))
    try {
      const store = fsStore(dir)
      await publish(store, chain, { logs: [entry(0, 9)] }, { index: async () => ({ logs: { segments: [a] } }) })
      await publish(store, chain, { logs: [entry(10, 19)] }, { index: async () => ({ logs: { segments: [a, b] } }) })
      expect(await lists(store)).toEqual([])
      const merged = await publish(store, chain, { logs: [entry(20, 29)] }, { index: async () => ({ logs: { segments: [ab] } }) })
      const ref = merged.root.datasets.logs.index!.retired as RetiredRef
      expect(Object.keys(ref).sort()).toEqual(['crc', 'key', 'segments'])
      expect(ref.key).toMatch(
        new RegExp(
          schema.$defs.root.properties.datasets.additionalProperties.properties.index.properties.retired.oneOf[0].properties.key.pattern,
        ),
      )
      expect(await lists(store)).toEqual([ref.key])
      expect(await loadRetired(store, ref)).toEqual([
        { since: merged.root.updatedAt, segment: a },
        { since: merged.root.updatedAt, segment: b },
      ])
      const stored = JSON.parse(new TextDecoder().decode((await store.get(ref.key))!.body))
      expect(Object.keys(stored).filter(k => !(k in schema.$defs.retiredList.properties))).toEqual([])
      // the root stays small: only the reference is in it
      expect(new TextDecoder().decode((await store.get(rootKey(chain)))!.body)).not.toContain('aaaaaaaaaaaaaaaa')

      // a publication that retires nothing keeps naming the same object
      const same = await publish(store, chain, { logs: [entry(30, 39)] }, { index: async () => ({ logs: { segments: [ab] } }) })
      expect(same.root.datasets.logs.index!.retired).toEqual(ref)

      // a change of the list writes a new object and deletes the old one once the root names the new
      const swept = await publish(
        store,
        chain,
        { logs: [entry(40, 49)] },
        { index: async () => ({ logs: { segments: [ab], retired: [] } }) },
      )
      expect(swept.root.datasets.logs.index!.retired).toBeUndefined()
      expect(await lists(store)).toEqual([])

      // a flipped byte is a visible failure, not another list
      const again = await publish(store, chain, { logs: [entry(50, 59)] }, { index: async () => ({ logs: { segments: [] } }) })
      const next = again.root.datasets.logs.index!.retired as RetiredRef
      const bytes = (await store.get(next.key))!.body.slice()
      bytes[bytes.length - 3] ^= 1
      await store.put(next.key, bytes)
      await expect(loadRetired(store, next)).rejects.toThrow(CorruptObjectError)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('a writer whose list a newer root replaced starts over on that root, and leaves no list behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'retired-'))
    try {
      const store = fsStore(dir)
      await publish(store, chain, { logs: [entry(0, 9)] }, { index: async () => ({ logs: { segments: [a] } }) })
      await publish(store, chain, { logs: [entry(10, 19)] }, { index: async () => ({ logs: { segments: [ab] } }) })
      const roots: number[] = []
      // the first attempt finds its root's list gone (as when another writer replaced it), the second succeeds
      const result = await publish(
        store,
        chain,
        { logs: [entry(20, 29)] },
        {
          index: async root => {
            roots.push(root.generation)
            if (roots.length === 1) throw new RetiredListGone('gone')
            return {
              logs: {
                segments: [ab, seg(20, 29, 'cccccccccccccccc')],
                retired: await loadRetired(store, root.datasets.logs.index?.retired),
              },
            }
          },
        },
      )
      expect(roots).toHaveLength(2)
      expect(result.root.datasets.logs.coverage).toEqual([[0, 29]])
      expect(await lists(store)).toEqual([(result.root.datasets.logs.index!.retired as RetiredRef).key])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('reads a root written before it, whose list is in the root itself', async () => {
    expect(await loadRetired(fsStore('/nonexistent'), [{ since: 'T0', segment: a }])).toEqual([{ since: 'T0', segment: a }])
    expect(await loadRetired(fsStore('/nonexistent'), undefined)).toEqual([])
    await expect(
      loadRetired(fsStore(tmpdir()), { key: 'evm-31337/manifest/logs/retired/g1-00000000.json', crc: 0, segments: 1 }),
    ).rejects.toThrow(RetiredListGone)
  })
})

function seg(from: number, to: number, id: string): SegmentDescriptor {
  return { from, to, coverage: [[from, to]], partitions: 1, rowGroups: 1, columns: { address: { id, buckets: 1, bytes: 10 } } }
}

import { afterAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { indexPrefix } from '../../src/index/format.ts'
import { publishIndexed } from '../../src/index/publish.ts'
import { RETIRE_GRACE_MS, sweepRetired } from '../../src/index/retire.ts'
import { segmentKeys } from '../../src/index/tiers.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { loadRetired } from '../../src/manifest/retired.ts'
import { parseRoot } from '../../src/manifest/read.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { ManifestRoot } from '../../src/manifest/types.ts'
import { putPartition } from '../../src/parquet/put.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { ETH } from '../support/chains.ts'
import { recordingStore } from '../support/recording.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { batchRows, collect, expected, makePools, makeRows, rng, toColumns, type Row } from '../query/lake.ts'

afterAll(removeTempDirs)

const HOUR = 60 * 60 * 1000
const prefix = indexPrefix('evm-1', 'logs')
const rootOf = async (store: ObjectStore): Promise<ManifestRoot> => parseRoot((await store.get(rootKey(ETH)))!.body)
const retiredOf = (store: ObjectStore, root: ManifestRoot) => loadRetired(store, root.datasets.logs.index?.retired)
const indexKeys = async (store: ObjectStore) => new Set((await store.list(`${prefix}/`)).map(o => o.key))

/** Publishes one 100-block logs partition per step with the index, the clock `hour` hours after t0. */
async function lake() {
  const { store } = await tempStore()
  const r = rng(5)
  const pools = makePools(r)
  const rows: Row[] = []
  const t0 = Date.parse('2026-01-01T00:00:00Z')
  const step = async (i: number, hour: number, sweep: { budget?: number } = {}) => {
    const blocks = Array.from({ length: 100 }, (_, b) => 1000 + i * 100 + b)
    const part = makeRows(logs, blocks, r, pools, 6)
    rows.push(...part)
    const batch = toColumns(logs, part)
    const { entry } = await putPartition(store, ETH, logs, batch, { from: blocks[0], to: blocks[99] }, { rowGroupSize: 16, pageSize: 256 })
    await publishIndexed(store, ETH, [{ dataset: logs, partitions: [{ entry, batch }] }], { sweep: { now: t0 + hour * HOUR, ...sweep } })
    return rootOf(store)
  }
  return { store, rows, step, t0 }
}

describe('retired index segments', () => {
  it('are listed when merged away, kept through the grace period, then deleted, and queries stay right', async () => {
    const { store, rows, step, t0 } = await lake()
    await step(0, 0)
    const merged = await step(1, 0) // two equal segments merge: the first is retired
    const index = merged.datasets.logs.index!
    const retired = await retiredOf(store, merged)
    expect(index.segments).toHaveLength(1)
    expect(retired).toHaveLength(1)
    expect(retired[0].since).toBe(new Date(t0).toISOString())
    const dead = segmentKeys(prefix, retired[0].segment)
    expect(dead.length).toBeGreaterThan(0)
    const live = (root: ManifestRoot) => new Set(root.datasets.logs.index!.segments.flatMap(s => segmentKeys(prefix, s)))
    for (const k of dead) expect((await indexKeys(store)).has(k)).toBe(true)

    // within the grace period nothing is deleted
    const within = await step(2, (RETIRE_GRACE_MS - HOUR) / HOUR)
    expect((await retiredOf(store, within)).map(r => r.segment)).toContainEqual(retired[0].segment)
    for (const k of dead) expect((await indexKeys(store)).has(k)).toBe(true)

    // after it, the next publication deletes the objects and drops the entry
    const after = await step(3, (RETIRE_GRACE_MS + HOUR) / HOUR)
    const stored = await indexKeys(store)
    for (const k of dead) expect(stored.has(k)).toBe(false)
    const still = await retiredOf(store, after)
    expect(still.map(r => r.segment)).not.toContainEqual(retired[0].segment)
    // what is stored is exactly what the root lists, live or retired
    const listed = new Set([...live(after), ...still.flatMap(r => segmentKeys(prefix, r.segment))])
    expect(stored).toEqual(listed)

    // the lake still answers through the index
    const value = rows[7].address!
    const spec = {
      chain: ETH,
      dataset: logs,
      from: 1000,
      to: 1399,
      predicates: [{ field: logs.fields.find(f => f.name === 'address')!, op: 'eq' as const, values: [value] }],
      fields: [...logs.fields],
    }
    const { store: recorded, reads } = recordingStore(store)
    const result = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, spec)
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows, spec.predicates, spec.fields, [1000, 1399], 'block_number', ETH.id))
    expect(got.length).toBeGreaterThan(0)
    expect(reads.some(r => r.key.startsWith(`${prefix}/`))).toBe(true)
  })

  it('deletes at most the budget per publication and records its progress', async () => {
    const { store, step } = await lake()
    await step(0, 0)
    const retired = await retiredOf(store, await step(1, 0))
    const keys = segmentKeys(prefix, retired[0].segment)
    const now = Date.parse(retired[0].since) + RETIRE_GRACE_MS + 1
    const first = await sweepRetired(store, prefix, retired, { now, budget: 1 })
    expect(first).toEqual([{ ...retired[0], deleted: 1 }])
    const stored = await indexKeys(store)
    expect(stored.has(keys[0])).toBe(false)
    for (const k of keys.slice(1)) expect(stored.has(k)).toBe(true)
    expect(await sweepRetired(store, prefix, first, { now })).toEqual([])
    for (const k of keys) expect((await indexKeys(store)).has(k)).toBe(false)
  })

  it('keeps an entry when a delete fails, without failing', async () => {
    const { store, step } = await lake()
    await step(0, 0)
    const retired = await retiredOf(store, await step(1, 0))
    const failing: ObjectStore = { ...store, delete: async () => Promise.reject(new Error('throttled')) }
    const now = Date.parse(retired[0].since) + RETIRE_GRACE_MS + 1
    expect(await sweepRetired(failing, prefix, retired, { now })).toEqual(retired)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dexSwaps } from '../../src/datasets/dex.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { Predicate } from '../../src/query/types.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { batchRows, buildLake, buildMarkedLake, collect, expected, makePools, makeRows, rng, type Row } from '../query/lake.ts'
import { recordingStore } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { expectInlineAnswer } from './inline.ts'

afterAll(removeTempDirs)

describe('dex/swaps lookup copy by pool', () => {
  // One partition big enough for a copy (LOOKUP_SHARE of it holds a 1,024-row group).
  const FROM = 1
  const TO = 1000
  let store: ObjectStore
  let entry: PartitionEntry
  let rows: Row[]
  beforeAll(async () => {
    const r = rng(11)
    const pools = makePools(r)
    rows = makeRows(
      dexSwaps,
      Array.from({ length: TO - FROM + 1 }, (_, i) => FROM + i),
      r,
      pools,
      40,
    )
    store = (await tempStore()).store
    ;[entry] = await buildLake(store, ETH, dexSwaps, [{ from: FROM, to: TO, rows }], {}, { index: true })
  }, 120_000)

  it('is written with every partition that can use one', () => {
    expect(rows.length).toBeGreaterThan(16 * 1024)
    expect(entry.lookup?.column).toBe('pool')
  })

  /** The pool in the most rows among those in less than `share` of them. */
  function poolBelow(share: number): { pool: Uint8Array; n: number } {
    const counts = new Map<string, { pool: Uint8Array; n: number }>()
    for (const row of rows) {
      const pool = row.pool as Uint8Array
      const c = counts.get(pool.join()) ?? { pool, n: 0 }
      c.n++
      counts.set(pool.join(), c)
    }
    return [...counts.values()].filter(c => c.n < rows.length * share).sort((a, b) => b.n - a.n)[0]
  }

  // A pool in about 1% of the rows, and a hot one in about 13% (beyond the 1/16 other lookups
  // stop at): each spread over every row group of the block-ordered partition.
  it.each([
    ['a warm pool', 1 / 32],
    ['a hot pool', 1 / 5],
  ])("answers %s's swaps from the copy's row groups, reading none of the block-ordered partition's data", async (_, share) => {
    const { pool, n } = poolBelow(share)
    expect(n).toBeGreaterThan((rows.length * share) / 4)
    const predicates: Predicate[] = [{ field: dexSwaps.fields.find(f => f.name === 'pool')!, op: 'eq', values: [pool] }]
    const fields = dexSwaps.fields.filter(f => !f.extra)
    const recorded = recordingStore(store)
    const result = await runQuery(
      { store: recorded.store, manifest: new ManifestReader(recorded.store) },
      { chain: ETH, dataset: dexSwaps, from: FROM, to: TO, predicates, fields },
    )
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows, predicates, fields, [FROM, TO], 'block_number', ETH.id))
    expect(got.length).toBe(n)
    expect(recorded.reads.filter(x => x.key === entry.key && x.offset < entry.tailOffset)).toEqual([])
    expect(recorded.reads.some(x => x.key === entry.lookup!.key && x.offset < entry.lookup!.tailOffset)).toBe(true)
    expect(result.stats.rowsScanned).toBeLessThanOrEqual(n + 2 * 1024)
    expect(result.stats.rowsScanned).toBeLessThan(rows.length / 4)
  })
})

describe("dex/swaps: one wallet's swaps from the value index", () => {
  // Two partitions of 100 row groups of 20 rows, one segment: the wallet is in 80 rows, one in
  // each of 80 row groups, more than the index's default of 64 rows and its hot cap (64 row groups).
  const parts = [
    { from: 1, to: 500 },
    { from: 501, to: 1000 },
  ]
  const WALLET = Uint8Array.from({ length: 20 }, (_, i) => 0xa0 + i)
  let store: ObjectStore
  let entries: PartitionEntry[]
  let rows: Row[]
  beforeAll(async () => {
    store = (await tempStore()).store
    ;({ entries, rows } = await buildMarkedLake(
      store,
      ETH,
      dexSwaps,
      parts,
      { column: 'taker', value: WALLET, rows: i => i % 20 === 7 && Math.floor(i / 20) % 5 < 2 },
      { seed: 12, perBlock: 8, cap: 2000, rowGroupSize: 20 },
    ))
  }, 120_000)

  it('answers from the inline rows the declaration keeps for `taker`, opening no partition', async () => {
    expect(rows.filter(row => row.taker === WALLET).length).toBe(80)
    expect(entries.reduce((k, e) => k + e.rowGroups.length, 0)).toBe(200)
    const result = await expectInlineAnswer({ store, entries, rows }, dexSwaps, 'taker', WALLET, [1, 1000])
    expect(result.index?.hot).toEqual([])
  })
})

/**
 * The EVM datasets' inline-row caps (src/datasets/evm.ts `BY_VALUE`): a wallet, a contract or
 * an event with more rows than the index's defaults (64 rows, 16 KiB of slice a segment) is
 * still answered from the index's own copy of its rows, opening no partition.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { Predicate } from '../../src/query/types.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { batchRows, buildMarkedLake, collect, expected, type Row } from '../query/lake.ts'
import { recordingStore } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

afterAll(removeTempDirs)

const VALUE = Uint8Array.from({ length: 20 }, (_, i) => 0xb0 + i)
const TOPIC = Uint8Array.from({ length: 32 }, (_, i) => (i < 12 ? 0 : 0xb0 + i))
const parts = [
  { from: 1, to: 300 },
  { from: 301, to: 600 },
  { from: 601, to: 900 },
]

const cases: { dataset: DatasetDecl; column: string; value: Uint8Array }[] = [
  { dataset: logs, column: 'topic1', value: TOPIC },
  { dataset: logs, column: 'address', value: VALUE },
  { dataset: transactions, column: 'from', value: VALUE },
]

for (const { dataset, column, value } of cases) {
  describe(`${dataset.name}.${column}: a value of over 150 rows`, () => {
    let store: ObjectStore
    let entries: PartitionEntry[]
    let rows: Row[]
    beforeAll(async () => {
      store = (await tempStore()).store
      // One row in 20 (~60 a partition): more than the default 64 rows (and 16 KiB) once the segments merge.
      ;({ entries, rows } = await buildMarkedLake(
        store,
        ETH,
        dataset,
        parts,
        { column, value, rows: i => i % 20 === 7 },
        { seed: 21, perBlock: 8, cap: 1600, rowGroupSize: 20 },
      ))
    }, 120_000)

    it('is answered from inline rows, opening no partition and no lookup copy', async () => {
      const predicates: Predicate[] = [{ field: dataset.fields.find(f => f.name === column)!, op: 'eq', values: [value] }]
      const fields = dataset.fields.filter(f => !f.extra)
      const n = rows.filter(row => row[column] === value).length
      expect(n).toBeGreaterThan(150)
      const recorded = recordingStore(store)
      const result = await runQuery(
        { store: recorded.store, manifest: new ManifestReader(recorded.store) },
        { chain: ETH, dataset, from: 1, to: 900, predicates, fields },
      )
      const got = batchRows(await collect(result.batches))
      expect(got).toEqual(expected(rows, predicates, fields, [1, 900], 'block_number', ETH.id))
      expect(got.length).toBe(n)
      expect(result.index?.rows).toBe(n)
      expect(recorded.reads.filter(x => entries.some(e => x.key === e.key || x.key === e.lookup?.key))).toEqual([])
    })
  })
}

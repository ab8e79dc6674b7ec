/**
 * The EVM datasets' inline-row caps (src/datasets/evm.ts `BY_VALUE`): a wallet, a contract or
 * an event with more rows than the index's defaults (64 rows, 16 KiB of slice a segment) is
 * still answered from the index's own copy of its rows, opening no partition.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs, transactions } from '../../src/datasets/evm.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { buildMarkedLake, type Row } from '../query/lake.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { expectInlineAnswer } from './inline.ts'

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
      expect(rows.filter(row => row[column] === value).length).toBeGreaterThan(150)
      await expectInlineAnswer({ store, entries, rows }, dataset, column, value, [1, 900])
    })
  })
}

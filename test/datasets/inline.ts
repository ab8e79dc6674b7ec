/**
 * One value looked up over a lake built by `buildMarkedLake`, checked to come from the value
 * index's inline rows: the rows a plain filter gives, all of them counted as read from the
 * index, and no read of a partition or of its lookup copy.
 */
import { expect } from 'vitest'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { runQuery, type QueryResult } from '../../src/query/engine.ts'
import type { Predicate } from '../../src/query/types.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { batchRows, collect, expected, type Row } from '../query/lake.ts'
import { recordingStore } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'

/** Runs `column = value` over blocks `range` with the default fields and checks the answer came from inline rows; returns the result. */
export async function expectInlineAnswer(
  lake: { store: ObjectStore; entries: PartitionEntry[]; rows: Row[] },
  dataset: DatasetDecl,
  column: string,
  value: StoredValue,
  range: [number, number],
): Promise<QueryResult> {
  const predicates: Predicate[] = [{ field: dataset.fields.find(f => f.name === column)!, op: 'eq', values: [value] }]
  const fields = dataset.fields.filter(f => !f.extra)
  const n = lake.rows.filter(row => row[column] === value).length
  const recorded = recordingStore(lake.store)
  const result = await runQuery(
    { store: recorded.store, manifest: new ManifestReader(recorded.store) },
    { chain: ETH, dataset, from: range[0], to: range[1], predicates, fields },
  )
  const got = batchRows(await collect(result.batches))
  expect(got).toEqual(expected(lake.rows, predicates, fields, range, 'block_number', ETH.id))
  expect(got.length).toBe(n)
  expect(result.index?.rows).toBe(n)
  expect(recorded.reads.filter(x => lake.entries.some(e => x.key === e.key || x.key === e.lookup?.key))).toEqual([])
  return result
}

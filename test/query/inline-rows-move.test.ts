import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHAINS } from '../../src/chains/registry.ts'
import { moveDecodedTransactions, moveTransactions } from '../../src/datasets/move.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { QuerySpec } from '../../src/query/types.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { recordingStore } from '../support/recording.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { batchRows, buildLake, collect, makePools, makeRows, rng, type Row } from './lake.ts'

// Move transactions and decoded transactions share one storage: whichever declaration wrote a
// partition and its index, a lookup through either reads the rows the index holds.
const APTOS = CHAINS.find(c => c.code === 'APTOS')!
const SPANS: [number, number][] = [
  [0, 99],
  [100, 199],
  [200, 299],
]
const stores = new Map<DatasetDecl, { store: ObjectStore; rows: Row[] }>()

beforeAll(async () => {
  for (const writer of [moveTransactions, moveDecodedTransactions]) {
    const { store } = await tempStore()
    const r = rng(31)
    const pools = makePools(r)
    const parts = SPANS.map(([from, to]) => ({
      from,
      to,
      rows: makeRows(
        writer,
        Array.from({ length: to - from + 1 }, (_, i) => from + i),
        r,
        pools,
        1,
      ),
    }))
    for (const part of parts) await buildLake(store, APTOS, writer, [part], {}, { index: true })
    stores.set(writer, { store, rows: parts.flatMap(p => p.rows) })
  }
})

afterAll(removeTempDirs)

/** A sender in 2–5 transactions of the lake: rare, so the index holds its rows. */
function rareSender(rows: Row[]): Uint8Array {
  const counts = new Map<string, { v: Uint8Array; n: number }>()
  for (const row of rows)
    if (row.sender instanceof Uint8Array)
      counts.set(row.sender.join(','), { v: row.sender, n: (counts.get(row.sender.join(','))?.n ?? 0) + 1 })
  return [...counts.values()].find(c => c.n >= 2 && c.n <= 5)!.v
}

describe('inline rows of Move transactions', () => {
  for (const writer of [moveTransactions, moveDecodedTransactions])
    for (const reader of [moveTransactions, moveDecodedTransactions])
      it(`written as ${writer.name}, answered from the index through ${reader.name}`, async () => {
        const { store, rows } = stores.get(writer)!
        const sender = rareSender(rows)
        const spec: QuerySpec = {
          chain: APTOS,
          dataset: reader,
          from: 0,
          to: 299,
          predicates: [{ field: reader.fields.find(f => f.name === 'sender')!, op: 'eq', values: [sender] }],
          fields: [...reader.fields],
        }
        const { store: recorded, reads } = recordingStore(store)
        const viaIndex = await runQuery({ store: recorded, manifest: new ManifestReader(recorded) }, spec)
        const got = batchRows(await collect(viaIndex.batches))
        const plain = await runQuery({ store, manifest: new ManifestReader(store), noIndex: true }, spec)
        expect(got).toEqual(batchRows(await collect(plain.batches)))
        expect(got.length).toBeGreaterThanOrEqual(2)
        expect(viaIndex.index?.rows).toBe(got.length)
        expect(viaIndex.stats.partitionsRead).toBe(0)
        expect(reads.filter(x => x.key.endsWith('.parquet'))).toEqual([])
      })
})

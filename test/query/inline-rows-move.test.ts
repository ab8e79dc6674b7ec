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
const stores = new Map<DatasetDecl, { store: ObjectStore; rows: Row[]; rare: Uint8Array; big: Uint8Array }>()

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
    const rows = parts.flatMap(p => p.rows)
    const [rare, big] = rareSenders(rows)
    // the second rare sender's payloads are too big to inline: 2–5 rows of ~9 KB, over `INLINE_BYTES` (16 KiB)
    rows.filter(row => sameBytes(row.sender, big)).forEach((row, i) => (row.payload = JSON.stringify({ i, blob: 'x'.repeat(9000) })))
    for (const part of parts) await buildLake(store, APTOS, writer, [part], {}, { index: true })
    stores.set(writer, { store, rows, rare, big })
  }
})

afterAll(removeTempDirs)

/** Senders in 2–5 transactions of the lake: rare, so the index holds their rows (unless too big). */
function rareSenders(rows: Row[]): Uint8Array[] {
  const counts = new Map<string, { v: Uint8Array; n: number }>()
  for (const row of rows)
    if (row.sender instanceof Uint8Array)
      counts.set(row.sender.join(','), { v: row.sender, n: (counts.get(row.sender.join(','))?.n ?? 0) + 1 })
  return [...counts.values()].filter(c => c.n >= 2 && c.n <= 5).map(c => c.v)
}

const sameBytes = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i])

/** The query for `sender`'s transactions through `reader`: every field but those inline rows leave out (`inline: false`), or `all`. */
const bySender = (reader: DatasetDecl, sender: Uint8Array, all = false): QuerySpec => ({
  chain: APTOS,
  dataset: reader,
  from: 0,
  to: 299,
  predicates: [{ field: reader.fields.find(f => f.name === 'sender')!, op: 'eq', values: [sender] }],
  fields: reader.fields.filter(f => all || f.inline !== false),
})

describe('inline rows of Move transactions', () => {
  for (const writer of [moveTransactions, moveDecodedTransactions])
    for (const reader of [moveTransactions, moveDecodedTransactions])
      it(`written as ${writer.name}, answered from the index through ${reader.name}`, async () => {
        const { store, rare } = stores.get(writer)!
        const spec = bySender(reader, rare)
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

  for (const writer of [moveTransactions, moveDecodedTransactions])
    it(`written as ${writer.name}, a rare sender whose rows are over the byte cap is answered from the partitions, the same rows`, async () => {
      const { store, big } = stores.get(writer)!
      const spec = bySender(writer, big)
      const viaIndex = await runQuery({ store, manifest: new ManifestReader(store) }, spec)
      const got = batchRows(await collect(viaIndex.batches))
      const plain = await runQuery({ store, manifest: new ManifestReader(store), noIndex: true }, spec)
      expect(got).toEqual(batchRows(await collect(plain.batches)))
      expect(got.length).toBeGreaterThanOrEqual(2)
      expect(got.every(row => String(row.payload).length > 9000)).toBe(true)
      // the index was used (postings), but held no rows of it
      expect(viaIndex.index?.columns).toEqual(['sender'])
      expect(viaIndex.index?.rows ?? 0).toBe(0)
      expect(viaIndex.stats.partitionsRead).toBeGreaterThan(0)
    })

  for (const writer of [moveTransactions, moveDecodedTransactions])
    it(`written as ${writer.name}, a rare sender's events and changes (not in inline rows) are read from the partitions, the same rows`, async () => {
      const { store, rare } = stores.get(writer)!
      const spec = bySender(writer, rare, true)
      expect(spec.fields.filter(f => f.inline === false).map(f => f.name)).toEqual(['events', 'changes'])
      const viaIndex = await runQuery({ store, manifest: new ManifestReader(store) }, spec)
      const got = batchRows(await collect(viaIndex.batches))
      const plain = await runQuery({ store, manifest: new ManifestReader(store), noIndex: true }, spec)
      expect(got).toEqual(batchRows(await collect(plain.batches)))
      expect(got.length).toBeGreaterThanOrEqual(2)
      expect(viaIndex.index?.columns).toEqual(['sender'])
      expect(viaIndex.index?.rows ?? 0).toBe(0)
      expect(viaIndex.stats.partitionsRead).toBeGreaterThan(0)
    })
})

import { describe, expect, it } from 'vitest'
import { BloomBuilder } from 'hyparquet-writer/src/bloom.js'
import type { SchemaElement } from 'hyparquet'
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { transformBlocks } from '../../src/ingest/transform.ts'
import { bloomFilterOf, vectorBloomFilter, wasmXxhash64 } from '../../src/parquet/bloom.ts'
import { distinctRows } from '../../src/parquet/dictionary.ts'
import { sliceVector, valueAt, valuesOf, vectorOf, type Vector } from '../../src/columns/vector.ts'
import { writePartition } from '../../src/parquet/write.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import { recordedBlock, recordedReceipts, WITH_RECEIPTS } from '../ingest/fixtures.ts'

const hash = await wasmXxhash64()

/** hyparquet-writer's own filter of the same values. */
function writersFilter(values: unknown[], element: SchemaElement, fpp: number): Uint32Array | undefined {
  const builder = new BloomBuilder(element, { fpp })
  for (const v of values) builder.insert(v)
  return builder.finalize()
}

describe('bloom filters with xxhash-wasm', () => {
  it("writes the recorded mainnet blocks' partitions byte for byte as the writer's own hashing does", () => {
    const batches = transformBlocks(WITH_RECEIPTS.map(n => ({ block: recordedBlock(n), receipts: recordedReceipts(n) })))
    const range = { from: WITH_RECEIPTS[0], to: WITH_RECEIPTS[2] }
    for (const [dataset, batch] of [
      [blocks, batches.blocks],
      [transactions, batches.transactions],
      [logs, batches.logs],
    ] as const) {
      // Row groups of 97 rows: many chunks per column, the last one short.
      for (const rowGroupSize of [97, 10_000]) {
        const own = writePartition(dataset, batch, range, { rowGroupSize })
        const fast = writePartition(dataset, batch, range, { rowGroupSize, bloomHash: hash })
        expect(own.metadata.row_groups[0].columns.some(c => c.meta_data?.bloom_filter_length)).toBe(true)
        expect(Buffer.from(fast.bytes).equals(Buffer.from(own.bytes))).toBe(true)
      }
    }
  })

  it('builds the same filter as BloomBuilder for every physical type, repeated values and nulls', () => {
    const b = (n: number, len = 20) => new Uint8Array(len).fill(n)
    const shared = b(7)
    const cases: [SchemaElement, unknown[]][] = [
      [{ name: 'a', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20 }, [shared, shared, b(7), null, b(1), undefined, b(2)]],
      [{ name: 'h', type: 'BYTE_ARRAY' }, [b(1, 3), b(1, 0), b(1, 3), b(2, 64)]],
      [{ name: 's', type: 'BYTE_ARRAY', converted_type: 'UTF8' }, ['USDC', 'USDC', 'WETH', null]],
      [{ name: 'n', type: 'INT64', converted_type: 'UINT_64' }, [1n, 1n, 2n, 2n ** 63n]],
      [{ name: 'j', type: 'BYTE_ARRAY', converted_type: 'JSON' }, ['{}']],
      [{ name: 'z', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20 }, [null, null]],
      [
        { name: 'many', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 4 },
        Array.from({ length: 5000 }, (_, i) => Uint8Array.of(i, i >> 8, 1, 2)),
      ],
    ]
    for (const [element, values] of cases) {
      for (const fpp of [0.01, 0.2]) expect(bloomFilterOf(values, element, fpp, hash)).toEqual(writersFilter(values, element, fpp))
    }
    // The JSON column cannot be hashed and the all-null one has nothing: no filter, as the writer.
    expect(bloomFilterOf(['{}'], cases[4][0], 0.01, hash)).toBeUndefined()
    expect(bloomFilterOf([null], cases[5][0], 0.01, hash)).toBeUndefined()
  })

  it("builds a packed column's filter from each distinct value's rows, as from its values", () => {
    const b = (n: number, len: number) => new Uint8Array(len).fill(n)
    const cases: [SchemaElement, Vector][] = [
      [
        { name: 'a', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20 },
        vectorOf('address', [b(7, 20), b(7, 20), null, b(1, 20), b(7, 20), null, b(2, 20), b(1, 20)]),
      ],
      [{ name: 'h', type: 'BYTE_ARRAY' }, vectorOf('bytes', [b(1, 3), b(1, 0), b(1, 3), b(2, 64), b(2, 64), b(1, 4), null])],
      [{ name: 'z', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20 }, vectorOf('address', [null, null])],
      [{ name: 'd', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 20, converted_type: 'DECIMAL' }, vectorOf('address', [b(3, 20)])],
    ]
    for (const [element, v] of cases) {
      if (v.type !== 'fixed' && v.type !== 'binary') throw new Error(`${element.name}: not a byte vector`)
      // every window of rows, as a row group's chunk takes them
      for (let start = 0; start < v.length; start++) {
        for (let end = start; end <= v.length; end++) {
          const values = valuesOf(sliceVector(v, start, end))
          const rows = distinctRows(v, start, end)
          expect(new Set(rows.map(r => Buffer.from(valueAt(v, r) as Uint8Array).toString('hex'))).size).toBe(rows.length)
          expect(vectorBloomFilter(v, rows, element, 0.01, hash)).toEqual(bloomFilterOf(values, element, 0.01, hash))
          expect(vectorBloomFilter(v, rows, element, 0.01, hash)).toEqual(writersFilter(values, element, 0.01))
        }
      }
    }
  })

  it('gives partitions of a dataset with a text and an integer bloom column the same bytes', () => {
    const dataset: DatasetDecl = {
      name: 'test/blooms',
      family: 'evm',
      path: 'test/blooms',
      storage: 'test_blooms',
      rangeKey: 'block_number',
      orderBy: ['block_number'],
      fields: [
        { name: 'block_number', kind: 'u64int', bloom: true },
        { name: 'symbol', kind: 'string', nullable: true, bloom: true },
        { name: 'address', kind: 'address', nullable: true, bloom: true },
      ],
    }
    const n = 250
    const batch = {
      length: n,
      columns: {
        block_number: Array.from({ length: n }, (_, i) => BigInt(100 + (i >> 3))),
        symbol: Array.from({ length: n }, (_, i) => (i % 5 ? `T${i % 17}` : null)),
        address: Array.from({ length: n }, (_, i) => (i % 7 ? new Uint8Array(20).fill(i % 11) : null)),
      },
    }
    const range = { from: 100, to: 131 }
    const own = writePartition(dataset, batch, range, { rowGroupSize: 40 })
    const fast = writePartition(dataset, batch, range, { rowGroupSize: 40, bloomHash: hash })
    expect(Buffer.from(fast.bytes).equals(Buffer.from(own.bytes))).toBe(true)
  })
})

/**
 * `chooseDictionary` decides as hyparquet-writer's `useDictionary` does, and gives the same
 * dictionary and indexes: chunks of every value type the datasets write, from all distinct to
 * a handful of values, with nulls, lengths on both sides of the sample, and forced or plain encodings.
 */
import type { DecodedArray, Encoding, ParquetType } from 'hyparquet'
import { useDictionary } from 'hyparquet-writer/src/dictionary.js'
import { describe, expect, it } from 'vitest'
import { vectorOf, valueAt } from '../../src/columns/vector.ts'
import { chooseDictionary, chooseVectorDictionary } from '../../src/parquet/dictionary.ts'
import { isPackedChunk } from '../../src/parquet/vector-chunk.ts'
import type { Kind, StoredValue } from '../../src/schema/kinds.ts'
import { randomBytes, rng } from '../query/lake.ts'

type Column = { type: ParquetType; typeLength?: number; make: (r: () => number, distinct: number) => unknown; kind?: Kind }

const COLUMNS: Record<string, Column> = {
  address: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 20, make: pool(r => randomBytes(r, 20)), kind: 'address' },
  hash: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32, make: pool(r => randomBytes(r, 32)), kind: 'hash' },
  calldata: { type: 'BYTE_ARRAY', make: pool(r => randomBytes(r, Math.floor(r() * 300))), kind: 'bytes' },
  // equal bytes in different arrays, and long values sharing their first and last 32 bytes
  copies: {
    type: 'BYTE_ARRAY',
    make: pool(r => Uint8Array.from([...new Uint8Array(40), Math.floor(r() * 4), ...new Uint8Array(40)])),
    kind: 'bytes',
  },
  // values that differ only in their high word too
  u64: { type: 'INT64', make: pool(r => BigInt(Math.floor(r() * 2 ** 40)) * (r() < 0.5 ? 1n : 2n ** 22n)), kind: 'u64int' },
  text: { type: 'BYTE_ARRAY', make: pool(r => Math.floor(r() * 1e6).toString(36)) },
}

/** A value maker drawing from `distinct` values (fresh arrays each time for bytes, so identity never decides). */
function pool(make: (r: () => number) => unknown): Column['make'] {
  const made = new Map<number, unknown>()
  return (r, distinct) => {
    const k = Math.floor(r() * distinct)
    if (!made.has(k)) made.set(k, make(rng(k + 1)))
    const v = made.get(k)
    return v instanceof Uint8Array ? v.slice() : v
  }
}

describe('chooseDictionary', () => {
  for (const [name, column] of Object.entries(COLUMNS)) {
    it(`matches useDictionary on ${name} columns`, () => {
      const r = rng(name.length)
      let dictionaries = 0
      for (const length of [0, 1, 2, 17, 999, 1000, 1001, 1024, 5000]) {
        for (const distinct of [1, 3, 40, 600, 100_000]) {
          for (const nulls of [0, 0.2, 1]) {
            const values = Array.from({ length }, () => (r() < nulls ? null : column.make(r, distinct))) as DecodedArray
            for (const encoding of [undefined, 'RLE_DICTIONARY', 'PLAIN'] as (Encoding | undefined)[]) {
              const expected = useDictionary(values, column.type, column.typeLength, encoding, undefined, false)
              const actual = chooseDictionary(values, column.type, column.typeLength, encoding, false)
              expect(actual, `${name} ${length}/${distinct}/${nulls}/${encoding}`).toEqual(expected)
              if (column.kind)
                expect(packedChoice(column, values, encoding), `packed ${name} ${length}/${distinct}/${nulls}`).toEqual(expected)
              if (actual.dictionary) dictionaries++
            }
          }
        }
      }
      expect(dictionaries).toBeGreaterThan(20)
    })
  }

  it('samples a packed chunk at the same rows: distinct where sampled, one value elsewhere', () => {
    // the sample (every ~3rd row of 3,000) sees only distinct values and refuses the dictionary,
    // which the whole chunk (1,001 values) would have paid for
    const length = 3000
    const sampled = new Set(Array.from({ length: 1000 }, (_, k) => Math.floor((k * (length - 1)) / 999)))
    for (const column of [COLUMNS.address, COLUMNS.u64]) {
      const r = rng(5)
      const values = Array.from({ length }, (_, i) => (sampled.has(i) ? column.make(r, 1e9) : column.make(rng(9), 1))) as DecodedArray
      const expected = useDictionary(values, column.type, column.typeLength, undefined, undefined, false)
      expect(expected).toEqual({})
      expect(useDictionary(values.slice(0, 1000), column.type, column.typeLength, undefined, undefined, false).dictionary).toBeDefined()
      expect(packedChoice(column, values, undefined)).toEqual(expected)
    }
  })

  it('refuses a null in a required column, as useDictionary does', () => {
    const values = [new Uint8Array(20), null, new Uint8Array(20)] as DecodedArray
    expect(() => useDictionary(values, 'FIXED_LEN_BYTE_ARRAY', 20, undefined, undefined, true)).toThrow('required')
    expect(() => chooseDictionary(values, 'FIXED_LEN_BYTE_ARRAY', 20, undefined, true)).toThrow('required')
    const packed = vectorOf('address', values as StoredValue[])
    expect(() => isPackedChunk(packed) && chooseVectorDictionary(packed, 'FIXED_LEN_BYTE_ARRAY', 20, undefined, true)).toThrow('required')
  })
})

/** `chooseVectorDictionary` of the values packed, its dictionary's rows read back as values. */
function packedChoice(column: Column, values: DecodedArray, encoding: Encoding | undefined) {
  const v = vectorOf(column.kind!, values as StoredValue[])
  if (!isPackedChunk(v)) throw new Error(`${column.kind} is not written from its buffers`)
  const { dictionary, indexes } = chooseVectorDictionary(v, column.type, column.typeLength, encoding, false)
  // a chunk without nulls gets typed indexes
  return dictionary
    ? { dictionary: dictionary.map(row => valueAt(v, row)), indexes: Array.isArray(indexes) ? indexes : Array.from(indexes!) }
    : {}
}

/**
 * `chooseDictionary` decides as hyparquet-writer's `useDictionary` does, and gives the same
 * dictionary and indexes: chunks of every value type the datasets write, from all distinct to
 * a handful of values, with nulls, lengths on both sides of the sample, and forced or plain encodings.
 */
import type { DecodedArray, Encoding, ParquetType } from 'hyparquet'
import { useDictionary } from 'hyparquet-writer/src/dictionary.js'
import { describe, expect, it } from 'vitest'
import { chooseDictionary } from '../../src/parquet/dictionary.ts'
import { randomBytes, rng } from '../query/lake.ts'

type Column = { type: ParquetType; typeLength?: number; make: (r: () => number, distinct: number) => unknown }

const COLUMNS: Record<string, Column> = {
  address: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 20, make: pool(r => randomBytes(r, 20)) },
  hash: { type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 32, make: pool(r => randomBytes(r, 32)) },
  calldata: { type: 'BYTE_ARRAY', make: pool(r => randomBytes(r, Math.floor(r() * 300))) },
  // equal bytes in different arrays, and long values sharing their first and last 32 bytes
  copies: { type: 'BYTE_ARRAY', make: pool(r => Uint8Array.from([...new Uint8Array(40), Math.floor(r() * 4), ...new Uint8Array(40)])) },
  u64: { type: 'INT64', make: pool(r => BigInt(Math.floor(r() * 2 ** 40))) },
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
              if (actual.dictionary) dictionaries++
            }
          }
        }
      }
      expect(dictionaries).toBeGreaterThan(20)
    })
  }

  it('refuses a null in a required column, as useDictionary does', () => {
    const values = [new Uint8Array(20), null, new Uint8Array(20)] as DecodedArray
    expect(() => useDictionary(values, 'FIXED_LEN_BYTE_ARRAY', 20, undefined, undefined, true)).toThrow('required')
    expect(() => chooseDictionary(values, 'FIXED_LEN_BYTE_ARRAY', 20, undefined, true)).toThrow('required')
  })
})

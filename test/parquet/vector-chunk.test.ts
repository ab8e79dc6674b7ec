/**
 * A packed chunk's page cuts, statistics and PLAIN bytes are what row-groups.ts takes from the
 * same values decoded (hyparquet-writer's `getPageBoundaries` and `writePlain`, min and max
 * in unsigned order): u64s that differ in either word, fixed and variable bytes, with nulls.
 */
import type { DecodedArray, ParquetType } from 'hyparquet'
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js'
import { getPageBoundaries } from 'hyparquet-writer/src/column.js'
import { writePlain } from 'hyparquet-writer/src/plain.js'
import { describe, expect, it } from 'vitest'
import { compareValues } from '../../src/columns/compare.ts'
import { valuesOf, vectorOf } from '../../src/columns/vector.ts'
import { chooseVectorDictionary } from '../../src/parquet/dictionary.ts'
import { isPackedChunk, vectorPageBoundaries, vectorStatistics, writeVectorPlain, writeVectorRows } from '../../src/parquet/vector-chunk.ts'
import type { Kind, StoredValue } from '../../src/schema/kinds.ts'
import { randomBytes, rng } from '../query/lake.ts'

const KINDS: { kind: Kind; type: ParquetType; typeLength?: number; make: (r: () => number) => StoredValue }[] = [
  // the high word decides between values with equal low words
  {
    kind: 'u64int',
    type: 'INT64',
    make: r => BigInt(Math.floor(r() * 4)) * 2n ** 32n + BigInt(Math.floor(r() * 3)) + (r() < 0.1 ? 2n ** 63n : 0n),
  },
  { kind: 'address', type: 'FIXED_LEN_BYTE_ARRAY', typeLength: 20, make: r => randomBytes(r, 20).fill(0, 0, Math.floor(r() * 20)) },
  { kind: 'bytes', type: 'BYTE_ARRAY', make: r => randomBytes(r, Math.floor(r() * 3) * Math.floor(r() * 70)) },
]

function reference(values: DecodedArray, start: number, end: number) {
  let min: StoredValue | undefined
  let max: StoredValue | undefined
  let nulls = 0
  for (let i = start; i < end; i++) {
    const v = values[i] as StoredValue | null
    if (v === null) nulls++
    else {
      if (min === undefined || compareValues(v, min) < 0) min = v
      if (max === undefined || compareValues(v, max) > 0) max = v
    }
  }
  return { min, max, nulls }
}

describe('packed chunks', () => {
  for (const { kind, type, typeLength, make } of KINDS) {
    it(`cut pages, take statistics and write PLAIN values as the decoded path does: ${kind}`, () => {
      const r = rng(kind.length)
      for (const nulls of [0, 0.3]) {
        const values = Array.from({ length: 700 }, () => (r() < nulls ? null : make(r)))
        const v = vectorOf(kind, values)
        if (!isPackedChunk(v)) throw new Error(`${kind} is not written from its buffers`)
        const decoded = valuesOf(v) as DecodedArray
        for (const pageSize of [0, 64, 1000]) {
          const pages = vectorPageBoundaries(v, typeLength, pageSize)
          expect(pages, `${kind} ${nulls} ${pageSize}`).toEqual(getPageBoundaries(decoded, type, typeLength, pageSize))
          const { dictionary, indexes } = chooseVectorDictionary(v, type, typeLength, 'RLE_DICTIONARY', false)
          for (const { start, end } of pages) {
            const expected = reference(decoded, start, end)
            expect(vectorStatistics(v, start, end)).toEqual(expected)
            expect(vectorStatistics(v, start, end, indexes, dictionary!.length)).toEqual(expected)
            const [a, b] = [new ByteWriter(), new ByteWriter()]
            writeVectorPlain(a, v, start, end)
            writePlain(
              b,
              decoded.slice(start, end).filter(x => x !== null),
              type,
              typeLength,
            )
            expect(Buffer.from(a.getBytes()).equals(Buffer.from(b.getBytes()))).toBe(true)
          }
          const [a, b] = [new ByteWriter(), new ByteWriter()]
          writeVectorRows(a, v, dictionary!)
          writePlain(
            b,
            dictionary!.map(i => decoded[i]),
            type,
            typeLength,
          )
          expect(Buffer.from(a.getBytes()).equals(Buffer.from(b.getBytes()))).toBe(true)
        }
      }
    })
  }
})

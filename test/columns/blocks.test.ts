import { describe, expect, it } from 'vitest'
import { batchOf, type RowBatch } from '../../src/columns/batch.ts'
import { takeBlocks, wholeBlocks } from '../../src/columns/blocks.ts'
import { streamOf } from '../../src/columns/stream.ts'
import { valuesOf } from '../../src/columns/vector.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'

const FIELDS: FieldDecl[] = [
  { name: 'block_number', kind: 'u64int' },
  { name: 'i', kind: 'u64int' },
]

/** Rows of blocks with 0..3 rows each (ascending), split into batches at random points. */
function randomBatches(seed: number): { rows: bigint[]; batches: RowBatch[] } {
  const r = mulberry32(seed)
  const rows: bigint[] = []
  for (let block = 1; block < 40; block++) for (let k = Math.floor(r() * 4); k > 0; k--) rows.push(BigInt(block))
  const batches: RowBatch[] = []
  for (let at = 0; at < rows.length;) {
    const n = Math.min(rows.length - at, 1 + Math.floor(r() * 7))
    const keys = rows.slice(at, at + n)
    batches.push(batchOf(FIELDS, { block_number: keys, i: keys.map((_, j) => BigInt(at + j)) }, n))
    at += n
  }
  return { rows, batches }
}

const keysOf = (b: RowBatch) => valuesOf(b.columns.block_number) as bigint[]

describe('wholeBlocks', () => {
  it('yields the same rows in order, each batch ending on a block boundary, with the held block after it', async () => {
    for (let seed = 1; seed <= 50; seed++) {
      const { rows, batches } = randomBatches(seed)
      const out: bigint[] = []
      for await (const { rows: b, heldFrom } of wholeBlocks(streamOf(batches), 'block_number')) {
        const keys = keysOf(b)
        expect(b.length).toBeGreaterThan(0)
        if (heldFrom !== null) {
          expect(heldFrom).toBeGreaterThan(keys[keys.length - 1])
          expect(rows[out.length + keys.length]).toBe(heldFrom)
        } else expect(out.length + keys.length).toBe(rows.length)
        out.push(...keys)
      }
      expect(out).toEqual(rows)
    }
  })
})

describe('takeBlocks', () => {
  it('takes at most limit rows on a block boundary (the whole first block when it alone is larger) and says where to resume', async () => {
    for (let seed = 1; seed <= 50; seed++) {
      const { rows, batches } = randomBatches(seed)
      for (const limit of [1, 2, 3, 5, 8, 13, rows.length, rows.length + 1]) {
        const { batches: taken, nextFrom } = await takeBlocks(streamOf(batches), limit, 'block_number')
        const keys = taken.flatMap(keysOf)
        // Reference: whole blocks while they fit; the first block whole when it alone exceeds the limit.
        let end = 0
        while (end < rows.length) {
          let next = end
          while (next < rows.length && rows[next] === rows[end]) next++
          if (next > limit && end > 0) break
          end = next
          if (end >= limit) break
        }
        expect(keys).toEqual(rows.slice(0, end))
        if (end === rows.length) expect(nextFrom).toBeUndefined()
        else expect(nextFrom).toBe(end > 0 && keys.length > limit ? Number(rows[end - 1]) + 1 : Number(rows[end]))
        expect(keys.length <= limit || new Set(keys).size === 1).toBe(true)
      }
    }
  })
})

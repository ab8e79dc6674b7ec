/**
 * The memory decoded columns are built in and handed out again: a buffer comes back
 * only through the vector that owns it, once, and is lent again for a request it fits.
 */
import { describe, expect, it } from 'vitest'
import { BufferPool, ColumnBuffers } from '../../src/query/column-buffers.ts'
import { vectorOf } from '../../src/columns/vector.ts'

describe('BufferPool', () => {
  it('lends fresh memory of the exact size until a buffer comes back, then that buffer for a request it fits', () => {
    const pool = new BufferPool({ minBytes: 1024 })
    expect(pool.take(1000)).toBeUndefined()
    const a = pool.take(5000)!
    expect(a.length).toBe(5000)
    pool.give([a])
    expect(pool.size).toBe(5000)
    // Too large for it, then one it fits (at least the request, under four times it).
    expect(pool.take(6000)).not.toBe(a)
    expect(pool.take(4000)).toBe(a)
    expect(pool.size).toBe(0)
    pool.give([a])
    expect(pool.take(1200)).not.toBe(a)
  })

  it('keeps at most maxBytes idle, and nothing below minBytes', () => {
    const pool = new BufferPool({ maxBytes: 10_000, minBytes: 1024 })
    pool.give([new Uint8Array(6000), new Uint8Array(6000), new Uint8Array(500)])
    expect(pool.size).toBe(6000)
  })
})

describe('ColumnBuffers', () => {
  it('takes back the memory of a vector built in it, once, and none of a vector it did not lend', () => {
    const columns = new ColumnBuffers({ minBytes: 1024 })
    const lent = columns.take(4096)!
    const built = vectorOf('u64int', [1n, 2n])
    columns.owns(built, [lent])
    columns.recycle(vectorOf('u64int', [3n]))
    expect([columns.recycled, columns.size]).toEqual([0, 0])
    columns.recycle(built)
    columns.recycle(built)
    expect([columns.recycled, columns.size]).toEqual([1, 4096])
    expect(columns.take(4096)).toBe(lent)
  })
})

/**
 * The memory decoded columns are built in and handed out again: a buffer comes back
 * only through the vector that owns it, once, and is lent again for a request it fits;
 * a buffer a response's chunks view comes back only once all their bytes are written.
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

  it('takes back memory handed out in chunks once every byte of them is written, and memory no chunk views at once', () => {
    const columns = new ColumnBuffers({ minBytes: 1024 })
    const [a, b, c] = [columns.take(4096)!, columns.take(8192)!, columns.take(2048)!]
    const first = vectorOf('u64int', [1n])
    const second = vectorOf('u64int', [2n])
    columns.owns(first, [a, b])
    columns.owns(second, [c])
    // a is in two chunks (one split again on its way), b in none (copied), c in one; one chunk is other memory.
    const chunks = [a.subarray(0, 1000), a.subarray(1000, 4096), new Uint8Array(64), c.subarray(0, 100)]
    columns.handOut([first, second, first], chunks)
    expect([columns.recycled, columns.size]).toEqual([2, 8192])
    columns.wrote(chunks[0])
    columns.wrote(chunks[2])
    columns.wrote(a.subarray(1000, 3000))
    expect(columns.size).toBe(8192)
    columns.wrote(a.subarray(3000, 4096))
    expect([columns.written, columns.size]).toEqual([1, 8192 + 4096])
    columns.wrote(chunks[3])
    columns.wrote(chunks[3])
    expect([columns.written, columns.size]).toEqual([2, 8192 + 4096 + 2048])
    // Handed out again or recycled after that: nothing comes back twice.
    columns.handOut([first], [a])
    columns.recycle(second)
    expect([columns.recycled, columns.size]).toEqual([2, 8192 + 4096 + 2048])
  })

  it('leaves memory whose chunks are never written (a compressed body, a client gone) out of the pool', () => {
    const columns = new ColumnBuffers({ minBytes: 1024 })
    const a = columns.take(4096)!
    const v = vectorOf('u64int', [1n])
    columns.owns(v, [a])
    columns.handOut([v], [a])
    columns.wrote(new Uint8Array(4096))
    expect([columns.written, columns.size]).toEqual([0, 0])
  })
})

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countingBuffer, directScan, filterFirstOrder, matchingRuns } from '../../bench/lib/layout-lake.ts'
import { benchLake } from '../../bench/lib/lake.ts'

const b = (...xs: number[]) => Uint8Array.from(xs)

describe('filterFirstOrder', () => {
  it('sorts by topic0 (nulls first), then address, block and log index', () => {
    const cols = {
      topic0: [b(2), null, b(1), b(1), b(1)],
      address: [b(0), b(9), b(5), b(4), b(4)],
      block_number: [1n, 1n, 1n, 2n, 1n],
      log_index: [0n, 1n, 2n, 3n, 4n],
    }
    const order = [0, 1, 2, 3, 4].sort(filterFirstOrder(cols))
    expect(order).toEqual([1, 4, 3, 2, 0])
  })
})

describe('matchingRuns', () => {
  it('joins consecutive matches into half-open runs', () => {
    const set = new Set([0, 1, 4, 6, 7, 8])
    expect(matchingRuns(10, i => set.has(i))).toEqual([
      [0, 2],
      [4, 5],
      [6, 9],
    ])
    expect(matchingRuns(3, () => false)).toEqual([])
  })
})

describe('countingBuffer', () => {
  it('counts each slice and its bytes', () => {
    const buf = countingBuffer(b(1, 2, 3, 4, 5))
    expect(new Uint8Array(buf.slice(1, 3) as ArrayBuffer)).toEqual(b(2, 3))
    buf.slice(0)
    expect([buf.requests, buf.bytes, buf.byteLength]).toEqual([2, 7, 5])
  })
})

describe('directScan', () => {
  let dir: string
  let files: string[]
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'layout-bench-'))
    // Files well above hyparquet's 512 KiB first footer read, as real partitions are.
    files = (await benchLake({ dir, logs: 40_000, partitionBlocks: 100 })).files
  }, 120_000)
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('finds exactly the rows a full read finds, reading less than the files', async () => {
    let want = 0
    let total = 0
    let block = 0n
    for (const f of files) {
      const buf = await readFile(f)
      total += buf.length
      const rows = await parquetReadObjects({
        file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer,
        columns: ['block_number'],
      })
      block = rows[Math.floor(rows.length / 2)].block_number as bigint
    }
    for (const f of files) {
      const buf = await readFile(f)
      const rows = await parquetReadObjects({
        file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer,
        columns: ['block_number'],
      })
      want += rows.filter(r => r.block_number === block).length
    }
    const got = await directScan(files, { block_number: { $eq: block } }, (c, i) => c.block_number[i] === block, ['block_number'], {
      useBloomFilters: false,
      usePageIndex: true,
    })
    expect(want).toBeGreaterThan(0)
    expect(got.rows).toBe(want)
    expect(got.rowsInRanges).toBeGreaterThanOrEqual(want)
    expect(got.bytes).toBeLessThan(total)
    expect(got.requests).toBeGreaterThan(0)
  })
})

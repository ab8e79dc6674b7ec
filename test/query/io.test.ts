import { afterAll, describe, expect, it } from 'vitest'
import { ReadQueue, Resident, partitionFile } from '../../src/query/io.ts'

import { recordingStore } from '../support/recording.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

afterAll(removeTempDirs)

const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => i % 251)
const expectSlice = (got: ArrayBuffer | Uint8Array, start: number, end: number) =>
  expect(new Uint8Array(got)).toEqual(bytes.slice(start, end))

describe('ReadQueue', () => {
  it('merges reads of one turn that lie close together, keeps far ones apart, and serves each its bytes', async () => {
    const { store: fs } = await tempStore()
    await fs.put('a', bytes)
    await fs.put('b', bytes)
    const { store, reads } = recordingStore(fs)
    const queue = new ReadQueue(store, { maxGap: 100 })
    const asks: [string, number, number][] = [
      ['a', 0, 10],
      ['a', 50, 60],
      ['a', 55, 58],
      ['a', 1000, 1010],
      ['b', 5, 6],
    ]
    const got = await Promise.all(asks.map(([k, s, e]) => queue.read(k, s, e)))
    asks.forEach(([, s, e], i) => expectSlice(got[i], s, e))
    expect(reads.map(r => [r.key, r.offset, r.length])).toEqual([
      ['a', 0, 60],
      ['a', 1000, 10],
      ['b', 5, 1],
    ])
  })

  it('serves resident slices from memory and other slices through the queue', async () => {
    const { store: fs } = await tempStore()
    await fs.put('f', bytes)
    const { store, reads } = recordingStore(fs)
    const resident = new Resident()
    resident.add(90_000, bytes.slice(90_000))
    const chunk = bytes.slice(100, 200)
    resident.add(100, chunk)
    const file = partitionFile(new ReadQueue(store), 'f', bytes.length, resident)
    expectSlice(await file.slice(95_000, 95_010), 95_000, 95_010)
    expectSlice(await file.slice(150, 200), 150, 200)
    expect(reads).toEqual([])
    expectSlice(await file.slice(10, 20), 10, 20)
    expectSlice(await file.slice(150, 201), 150, 201)
    expect(reads.length).toBe(2)
    resident.remove(chunk)
    expectSlice(await file.slice(150, 160), 150, 160)
    expect(reads.length).toBe(3)
  })

  it('rejects every read of a merged request when the object is missing', async () => {
    const { store } = await tempStore()
    const queue = new ReadQueue(store)
    await expect(Promise.all([queue.read('nope', 0, 1), queue.read('nope', 2, 3)])).rejects.toThrow(/missing/)
  })
})

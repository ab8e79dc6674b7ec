import { afterAll, describe, expect, it } from 'vitest'
import { ReadQueue, Resident, partitionFile, readTail } from '../../src/query/io.ts'
import { ReadBuffers } from '../../src/query/read-buffers.ts'

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

  describe('with lent memory (ReadBuffers)', () => {
    const big = Uint8Array.from({ length: 400_000 }, (_, i) => (i * 7) % 253)
    const setup = async () => {
      const { store: fs } = await tempStore()
      await fs.put('f', big)
      const lent: number[] = []
      const store = {
        ...fs,
        get: (key: string, range?: Parameters<typeof fs.get>[1]) => {
          if (range && 'into' in range && range.into) lent.push(range.into.length)
          return fs.get(key, range)
        },
      }
      return { store, lent, buffers: new ReadBuffers() }
    }

    it('reads requests into memory given back once the scan releases it, and serves the right bytes from stale memory', async () => {
      const { store, lent, buffers } = await setup()
      const first = new ReadQueue(store, { buffers })
      const [a, b] = await Promise.all([first.read('f', 1000, 100_000), first.read('f', 150_000, 200_000)])
      expect(a).toEqual(big.slice(1000, 100_000))
      expect(b).toEqual(big.slice(150_000, 200_000))
      expect(lent).toEqual([262_144])
      expect(buffers.size).toBe(0)
      first.release()
      expect(buffers.size).toBe(262_144)
      // the next scan reads into the same memory (a smaller request too), still holding the first one's bytes
      const second = new ReadQueue(store, { buffers })
      expect(await second.read('f', 300_000, 380_000)).toEqual(big.slice(300_000, 380_000))
      expect(lent).toEqual([262_144, 262_144])
      expect(buffers.size).toBe(0)
      second.release()
      expect(buffers.size).toBe(262_144)
    })

    it('never lends memory to bytes kept beyond the scan (tails), nor to small requests', async () => {
      const { store, lent, buffers } = await setup()
      const queue = new ReadQueue(store, { buffers })
      const resident = new Resident()
      await readTail(queue, 'f', [{ start: 100_000, end: big.length, what: 'the tail' }], resident)
      expect(await partitionFile(queue, 'f', big.length, new Resident()).slice(0, 90_000)).toEqual(big.slice(0, 90_000).buffer)
      expect(await queue.read('f', 0, 1000)).toEqual(big.slice(0, 1000))
      queue.release()
      expect(lent).toEqual([])
      expect(buffers.size).toBe(0)
      expect(resident.view(100_000, big.length)).toEqual(big.slice(100_000))
    })

    it('leaves the memory of a scan that stopped with a read in flight to the garbage collector', async () => {
      const { store, buffers } = await setup()
      const queue = new ReadQueue(store, { buffers })
      const read = queue.read('f', 0, 100_000)
      // the request goes out on the next turn; the scan stops while it is in flight
      await new Promise(resolve => setImmediate(resolve))
      queue.release()
      expect(await read).toEqual(big.slice(0, 100_000))
      expect(buffers.size).toBe(0)
    })

    it('keeps at most maxBytes idle', () => {
      const buffers = new ReadBuffers(300_000)
      const taken = [buffers.take(200_000)!, buffers.take(200_000)!, buffers.take(70_000)!]
      expect(taken.map(b => b.length)).toEqual([262_144, 262_144, 131_072])
      buffers.give(taken)
      expect(buffers.size).toBe(262_144)
      expect(buffers.take(1000)).toBeUndefined()
      expect(buffers.take(300_000)!.length).toBe(524_288)
      expect(buffers.take(100_000)!.length).toBe(262_144)
      expect(buffers.size).toBe(0)
    })
  })
})

import { afterAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { countingStore } from '../../src/store/counting.ts'
import { fsStore } from '../../src/store/fs.ts'

let dir: string
afterAll(() => rm(dir, { recursive: true, force: true }))

describe('countingStore', () => {
  it('counts read requests, body bytes fetched and writes, and resets', async () => {
    dir = await mkdtemp(join(tmpdir(), 'counting-store-'))
    const store = countingStore(fsStore(dir))
    await store.put('a', new Uint8Array(100))
    await store.put('b', new Uint8Array(10), { ifNoneMatch: '*' })
    expect(store.counts).toEqual({ requests: 0, bytesFetched: 0, writes: 2 })

    await store.get('a', { suffix: 8 })
    await store.get('a', { offset: 10, length: 20 })
    await store.get('b')
    await store.get('missing')
    await store.head('a')
    await store.list('')
    expect(store.counts).toEqual({ requests: 6, bytesFetched: 8 + 20 + 10, writes: 2 })

    store.reset()
    await store.delete('b')
    expect(store.counts).toEqual({ requests: 0, bytesFetched: 0, writes: 1 })
  })
})

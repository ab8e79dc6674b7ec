/**
 * The one contract every `ObjectStore` passes (file system, S3, R2). Runtime-neutral:
 * no Node built-ins, so the same cases run in Node and inside workerd.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import type { ObjectStore } from '../../src/store/types.ts'

const bytes = (...values: number[]) => new Uint8Array(values)
const text = (s: string) => new TextEncoder().encode(s)
const decode = (b: Uint8Array | undefined) => new TextDecoder().decode(b)

/** 0, 1, …, n-1 (mod 256): every offset's byte is predictable. */
const counting = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 256)

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)))
  return out
}

/**
 * Runs the contract against the store `make` returns. All cases may share one store
 * (even a non-empty one): each works under its own fresh key prefix. Give the store a
 * small list page size (below 25) so that pagination is exercised.
 */
export function objectStoreContract(name: string, make: () => ObjectStore | Promise<ObjectStore>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let store: ObjectStore
    const run = Math.random().toString(36).slice(2, 8)
    let cases = 0
    const fresh = () => `contract-${run}-${cases++}/`

    beforeAll(async () => {
      store = await make()
    })

    it('answers null for a missing key, lists nothing and deletes it without error', async () => {
      const ns = fresh()
      expect(await store.get(`${ns}missing`)).toBeNull()
      expect(await store.get(`${ns}missing`, { offset: 2, length: 3 })).toBeNull()
      expect(await store.get(`${ns}missing`, { suffix: 3 })).toBeNull()
      expect(await store.head(`${ns}missing`)).toBeNull()
      expect(await store.list(ns)).toEqual([])
      await store.delete(`${ns}missing`)
      expect(await store.head(`${ns}missing`)).toBeNull()
    })

    it('reports the same size and etag from put, head and get', async () => {
      const key = `${fresh()}object.bin`
      const put = await store.put(key, counting(100))
      expect(put).toMatchObject({ key, size: 100 })
      expect(put!.etag).toBeTruthy()
      expect(await store.head(key)).toEqual({ key, size: 100, etag: put!.etag })
      const got = await store.get(key)
      expect(got).toMatchObject({ key, size: 100, etag: put!.etag, offset: 0 })
      expect(got!.body).toEqual(counting(100))
    })

    it('reads slices, open-ended ranges and suffixes with their offset and the whole size', async () => {
      const key = `${fresh()}ranged.bin`
      const src = counting(100)
      await store.put(key, src)
      const cases = [
        { range: { offset: 10, length: 5 }, offset: 10, end: 15 },
        { range: { offset: 0, length: 1 }, offset: 0, end: 1 },
        { range: { offset: 99, length: 1 }, offset: 99, end: 100 },
        { range: { offset: 90 }, offset: 90, end: 100 },
        { range: { offset: 0 }, offset: 0, end: 100 },
        { range: { suffix: 8 }, offset: 92, end: 100 },
        { range: { suffix: 1 }, offset: 99, end: 100 },
        { range: { suffix: 100 }, offset: 0, end: 100 },
        { range: { suffix: 1000 }, offset: 0, end: 100 },
      ]
      for (const c of cases) {
        const got = await store.get(key, c.range)
        expect({ range: c.range, offset: got!.offset, size: got!.size, body: got!.body }).toEqual({
          range: c.range,
          offset: c.offset,
          size: 100,
          body: src.slice(c.offset, c.end),
        })
      }
    })

    it('clamps ranges that run past the end and serves empty ranges', async () => {
      const key = `${fresh()}short.bin`
      const src = counting(100)
      await store.put(key, src)
      const cases = [
        { range: { offset: 95, length: 50 }, offset: 95, end: 100 },
        { range: { offset: 100, length: 5 }, offset: 100, end: 100 },
        { range: { offset: 500 }, offset: 100, end: 100 },
        { range: { offset: 10, length: 0 }, offset: 10, end: 10 },
        { range: { suffix: 0 }, offset: 100, end: 100 },
      ]
      for (const c of cases) {
        const got = await store.get(key, c.range)
        expect({ range: c.range, offset: got!.offset, size: got!.size, body: got!.body }).toEqual({
          range: c.range,
          offset: c.offset,
          size: 100,
          body: src.slice(c.offset, c.end),
        })
      }
    })

    it('stores and reads an empty object', async () => {
      const key = `${fresh()}empty`
      expect(await store.put(key, new Uint8Array(0))).toMatchObject({ key, size: 0 })
      expect(await store.head(key)).toMatchObject({ key, size: 0 })
      for (const range of [undefined, { suffix: 4 }, { offset: 0, length: 4 }]) {
        const got = await store.get(key, range)
        expect({ range, size: got!.size, offset: got!.offset, length: got!.body.length }).toEqual({ range, size: 0, offset: 0, length: 0 })
      }
    })

    it('round-trips binary data under keys with partition-style characters', async () => {
      const ns = fresh()
      const all = Uint8Array.from({ length: 256 }, (_, i) => i)
      const big = randomBytes(300_000)
      const keys = [`${ns}chain=1/logs/0-99 a+b.bin`, `${ns}big.parquet`]
      await store.put(keys[0], all)
      await store.put(keys[1], big)
      expect((await store.get(keys[0]))!.body).toEqual(all)
      expect((await store.get(keys[1]))!.body).toEqual(big)
      const tail = await store.get(keys[1], { suffix: 1000 })
      expect(tail!.body).toEqual(big.slice(big.length - 1000))
      expect((await store.list(`${ns}chain=1/`)).map(o => o.key)).toEqual([keys[0]])
    })

    it('gives every overwrite a new etag, even with the same size, and replaces the content', async () => {
      const key = `${fresh()}rewritten`
      const etags = new Set<string>()
      for (let i = 0; i < 6; i++) {
        const put = await store.put(key, text(`version-${i}`))
        etags.add(put!.etag)
        expect((await store.head(key))!.etag).toBe(put!.etag)
      }
      expect(etags.size).toBe(6)
      expect(decode((await store.get(key))!.body)).toBe('version-5')
      await store.put(key, bytes(7, 8, 9))
      expect(await store.get(key)).toMatchObject({ size: 3, body: bytes(7, 8, 9) })
    })

    it('with ifNoneMatch "*" creates a missing key and refuses an existing one', async () => {
      const key = `${fresh()}create-once`
      const first = await store.put(key, text('first'), { ifNoneMatch: '*' })
      expect(first).toMatchObject({ key, size: 5 })
      expect(await store.put(key, text('second'), { ifNoneMatch: '*' })).toBeNull()
      const got = await store.get(key)
      expect(decode(got!.body)).toBe('first')
      expect(got!.etag).toBe(first!.etag)
    })

    it('with ifMatch writes over the current etag only and leaves the object alone otherwise', async () => {
      const ns = fresh()
      const key = `${ns}cas`
      const v1 = await store.put(key, text('v1'))
      const v2 = await store.put(key, text('v2 longer'), { ifMatch: v1!.etag, contentType: 'text/plain' })
      expect(v2).toMatchObject({ key, size: 9 })
      expect(v2!.etag).not.toBe(v1!.etag)
      expect(await store.put(key, text('v3'), { ifMatch: v1!.etag })).toBeNull()
      const got = await store.get(key)
      expect(decode(got!.body)).toBe('v2 longer')
      expect(got!.etag).toBe(v2!.etag)
      expect(await store.put(`${ns}absent`, text('x'), { ifMatch: v2!.etag })).toBeNull()
      expect(await store.head(`${ns}absent`)).toBeNull()
    })

    it('lists the objects under a prefix in key order with their size and etag', async () => {
      const ns = fresh()
      const names = ['b/1', 'a/2', 'a/10', 'a-x', 'ab', 'a/1', 'a/sub/deep']
      const puts = new Map<string, { size: number; etag: string }>()
      for (const [i, name] of names.entries()) {
        const put = await store.put(`${ns}${name}`, counting(i + 1))
        puts.set(`${ns}${name}`, { size: put!.size, etag: put!.etag })
      }
      const listed = async (prefix: string) => (await store.list(`${ns}${prefix}`)).map(o => o.key.slice(ns.length))
      // Byte order: '-' (0x2d) < '/' (0x2f) < '1' < '2' < 'b' < 's'.
      expect(await listed('a/')).toEqual(['a/1', 'a/10', 'a/2', 'a/sub/deep'])
      expect(await listed('a')).toEqual(['a-x', 'a/1', 'a/10', 'a/2', 'a/sub/deep', 'ab'])
      expect(await listed('a/1')).toEqual(['a/1', 'a/10'])
      expect(await listed('')).toEqual(['a-x', 'a/1', 'a/10', 'a/2', 'a/sub/deep', 'ab', 'b/1'])
      expect(await listed('zz')).toEqual([])
      for (const o of await store.list(ns)) expect({ key: o.key, size: o.size, etag: o.etag }).toEqual({ key: o.key, ...puts.get(o.key) })
    })

    it('lists every key when the listing spans several pages', async () => {
      const ns = fresh()
      const keys = Array.from({ length: 25 }, (_, i) => `${ns}k/${String(i).padStart(3, '0')}`)
      await Promise.all([...keys].reverse().map(k => store.put(k, text(k))))
      expect((await store.list(`${ns}k/`)).map(o => o.key)).toEqual(keys)
    })

    it('deletes one object and nothing else', async () => {
      const ns = fresh()
      await store.put(`${ns}keep`, text('keep'))
      await store.put(`${ns}drop`, text('drop'))
      await store.delete(`${ns}drop`)
      expect(await store.get(`${ns}drop`)).toBeNull()
      expect(await store.head(`${ns}drop`)).toBeNull()
      expect((await store.list(ns)).map(o => o.key)).toEqual([`${ns}keep`])
      expect(decode((await store.get(`${ns}keep`))!.body)).toBe('keep')
      expect(await store.put(`${ns}drop`, text('again'), { ifNoneMatch: '*' })).not.toBeNull()
    })

    it('lets exactly one of several concurrent conditional puts win', async () => {
      const ns = fresh()
      const key = `${ns}contended`
      const base = await store.put(key, text('base'))
      const bodies = Array.from({ length: 8 }, (_, i) => text(`writer-${i}`))
      const results = await Promise.all(bodies.map(b => store.put(key, b, { ifMatch: base!.etag })))
      const winners = results.flatMap((r, i) => (r ? [i] : []))
      expect(winners).toHaveLength(1)
      const got = await store.get(key)
      expect(got!.body).toEqual(bodies[winners[0]])
      expect(got!.etag).toBe(results[winners[0]]!.etag)

      const created = await Promise.all(bodies.map(b => store.put(`${ns}created`, b, { ifNoneMatch: '*' })))
      expect(created.filter(r => r !== null)).toHaveLength(1)
    })
  })
}

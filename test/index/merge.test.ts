import { describe, expect, it } from 'vitest'
import { buildSegment, hotCap, type SegmentSpec } from '../../src/index/build.ts'
import { mergeSegments } from '../../src/index/merge.ts'
import { segmentSource, storeReader } from '../../src/index/read.ts'
import { lookupValues } from '../../src/index/lookup.ts'
import { bucketKey, decodePack, log2, packKey, unseal } from '../../src/index/format.ts'
import type { IndexObject, SegmentDescriptor } from '../../src/index/types.ts'
import { address, candidateSet, entryOf, hex, memoryStore, randomLake, type MemoryStore } from './helpers.ts'

const spec: SegmentSpec = { prefix: 'evm-1/index/logs', columns: ['a', 'b'], bucketBytes: 1024 }

/** Every entry of a column as key → 'hot' or ordinals (mapped to partition key#group), across all buckets. */
async function entriesOf(store: MemoryStore, d: SegmentDescriptor, column: string): Promise<Map<number, string>> {
  const source = segmentSource(storeReader(store), spec.prefix, d)
  const table = await source.table()
  const out = new Map<number, string>()
  for (let b = 0; b < d.columns[column].buckets; b++) {
    const e = await source.bucket(column, b)
    e.keys.forEach((key, i) => {
      if (e.hot[i]) return out.set(key, 'hot')
      const where = [...e.ordinals.subarray(e.start[i], e.start[i + 1])].map(o => {
        let p = 0
        while (table.base[p + 1] <= o) p++
        return `${table.partitions[p].key}#${o - table.base[p]}`
      })
      out.set(key, where.join(' '))
    })
  }
  return out
}

async function put(store: MemoryStore, objects: IndexObject[]) {
  for (const o of objects) await store.put(o.key, o.bytes)
}

describe('mergeSegments', () => {
  it('gives the same postings as a build over the union, across different bucket counts, deterministically', async () => {
    const lake = randomLake(21, { partitions: 7, groups: 5, rows: 120, universe: 4000 })
    const store = memoryStore()
    const parts = [lake.inputs.slice(0, 4), lake.inputs.slice(4, 5), lake.inputs.slice(5)]
    const built = parts.map(p => buildSegment(spec, p))
    for (const b of built) await put(store, b.objects)
    expect(new Set(built.map(b => b.descriptor.columns.b.buckets)).size).toBeGreaterThan(1)
    const outputs: IndexObject[] = []
    const read = storeReader(store)
    store.reset()
    const merged = await mergeSegments(
      spec,
      built.map(b => segmentSource(read, spec.prefix, b.descriptor)),
      async o => {
        outputs.push(o)
      },
    )
    // every input object but the packs read once (an inline table comes from a bucket read once more)
    const inputs = built.map(b => b.objects.filter(o => !o.key.endsWith('.pack')))
    expect(built.some((b, i) => inputs[i].length < b.objects.length)).toBe(true)
    expect(new Set(store.gets)).toEqual(new Set(inputs.flatMap(o => o.map(x => x.key))))
    expect(store.gets.length).toBe(inputs.reduce((n, o, i) => n + o.length + (built[i].descriptor.table ? 0 : 1), 0))
    // the merged segment's packs hold its buckets as stored
    for (const column of spec.columns) {
      const c = merged.columns[column]
      expect(c.buckets).toBeGreaterThan(1)
      const pack = outputs.find(o => o.key === packKey(spec.prefix, merged, column))!
      expect(c.pack).toBe(pack.bytes.length)
      const parts = decodePack(unseal(pack.key, pack.bytes, { kind: 'pack', id: c.id, bucket: 0, log2Buckets: log2(c.buckets) }))
      expect(parts).toEqual(
        Array.from({ length: c.buckets }, (_, b) => outputs.find(o => o.key === bucketKey(spec.prefix, merged, column, b))!.bytes),
      )
    }
    await put(store, outputs)
    const whole = buildSegment(spec, lake.inputs)
    await put(store, whole.objects)
    expect(merged.partitions).toBe(7)
    expect(merged.rowGroups).toBe(35)
    expect(merged.coverage).toEqual(whole.descriptor.coverage)
    for (const column of spec.columns) {
      const a = await entriesOf(store, merged, column)
      expect(a.size).toBeGreaterThan(1000)
      expect(a).toEqual(await entriesOf(store, whole.descriptor, column))
    }
    // the same merge again: the same keys and bytes
    const again: IndexObject[] = []
    await mergeSegments(
      spec,
      built.map(b => segmentSource(read, spec.prefix, b.descriptor)),
      async o => {
        again.push(o)
      },
    )
    expect(again.map(o => o.key)).toEqual(outputs.map(o => o.key))
    again.forEach((o, i) => expect(hex(o.bytes)).toBe(hex(outputs[i].bytes)))
  })

  it('merges segments whose partitions interleave in block order', async () => {
    const lake = randomLake(22, { partitions: 6, groups: 3, rows: 60, universe: 900 })
    const store = memoryStore()
    const odd = buildSegment(
      spec,
      lake.inputs.filter((_, i) => i % 2),
    )
    const even = buildSegment(
      spec,
      lake.inputs.filter((_, i) => i % 2 === 0),
    )
    await put(store, [...odd.objects, ...even.objects])
    const outputs: IndexObject[] = []
    const merged = await mergeSegments(
      spec,
      [odd, even].map(b => segmentSource(storeReader(store), spec.prefix, b.descriptor)),
      async o => {
        outputs.push(o)
      },
    )
    await put(store, outputs)
    const whole = buildSegment(spec, lake.inputs)
    await put(store, whole.objects)
    expect(await entriesOf(store, merged, 'a')).toEqual(await entriesOf(store, whole.descriptor, 'a'))
  })

  it('turns a value hot in an input into all the row groups of that input, then recomputes hot on the merged count', async () => {
    // input 1: 1 partition × 70 row groups, v in all of them (hot: cap 64); input 2: 15 partitions × 70, v in 2
    const v = address(7)
    const rare = address(8)
    const mk = (p: number, has: (g: number) => boolean) => ({
      entry: entryOf(p * 10, p * 10 + 9, 70, 2, `m${p}`),
      rowGroups: Array.from({ length: 70 }, (_, g) => ({ a: [has(g) ? v : null, p === 3 && g === 5 ? rare : null], b: [] })),
    })
    const first = buildSegment(spec, [mk(0, () => true)])
    const second = buildSegment(
      spec,
      Array.from({ length: 15 }, (_, i) => mk(i + 1, g => i === 4 && g < 2)),
    )
    const store = memoryStore()
    await put(store, [...first.objects, ...second.objects])
    const outputs: IndexObject[] = []
    const merged = await mergeSegments(
      spec,
      [first, second].map(b => segmentSource(storeReader(store), spec.prefix, b.descriptor)),
      async o => {
        outputs.push(o)
      },
    )
    await put(store, outputs)
    const index = (d: SegmentDescriptor) => ({ prefix: spec.prefix, segments: [d] })
    expect((await lookupValues(store, index(first.descriptor), 'a', [v])).hot.length).toBe(1)
    // merged: 1,120 row groups, cap 140; v counts 70 + 2 = 72, so it is no longer hot
    expect(hotCap(merged.rowGroups)).toBe(140)
    const got = await lookupValues(store, index(merged), 'a', [v])
    expect(got.hot).toEqual([])
    expect(got.partitions.map(p => [p.entry.from, p.rowGroups.length])).toEqual([
      [0, 70],
      [50, 2],
    ])
    expect(candidateSet((await lookupValues(store, index(merged), 'a', [rare])).partitions)).toEqual(
      new Set([`${mk(3, () => false).entry.key}#5`]),
    )
  })
})

import { describe, expect, it } from 'vitest'
import { buildSegment, type SegmentSpec } from '../../src/index/build.ts'
import { indexCoverage, lookupValues } from '../../src/index/lookup.ts'
import { maintainTiers, mergeCount, MERGE_FACTOR, segmentKeys } from '../../src/index/tiers.ts'
import type { SegmentDescriptor } from '../../src/index/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { candidateSet, memoryStore, randomLake } from './helpers.ts'

const spec: SegmentSpec = { prefix: 'evm-1/index/logs', columns: ['a', 'b'], bucketBytes: 1024 }

describe('mergeCount', () => {
  it('merges the newest two while the older is at most F times the newer, as one cascade', () => {
    expect(mergeCount([1], 4)).toBe(1)
    expect(mergeCount([5, 1], 4)).toBe(1)
    expect(mergeCount([4, 1], 4)).toBe(2)
    expect(mergeCount([64, 16, 4, 1], 4)).toBe(4)
    expect(mergeCount([100, 16, 4, 1], 4)).toBe(3)
    expect(mergeCount([9, 2, 1], 4)).toBe(3)
    expect(mergeCount([3, 1, 1], 1)).toBe(2)
  })
})

describe('maintainTiers over 2,500 appended partitions', () => {
  it('keeps the count within 1 + log_F(row groups), bounds write amplification, and never loses a posting', async () => {
    const store = memoryStore()
    const r = mulberry32(31)
    // 1–3 row groups per partition, like early and late chain partitions
    const lake = randomLake(31, { partitions: 2500, groups: p => 1 + (p % 3), rows: 4, universe: 20_000 })
    let segments: SegmentDescriptor[] = []
    let rowGroups = 0
    let builtBytes = 0
    let written = 0
    let maxCount = 0
    const obsolete: SegmentDescriptor[] = []
    for (const input of lake.inputs) {
      const built = buildSegment(spec, [input])
      rowGroups += input.rowGroups.length
      builtBytes += built.objects.reduce((n, o) => n + o.bytes.length, 0)
      const update = await maintainTiers(store, spec, segments, built)
      segments = update.segments
      obsolete.push(...update.obsolete)
      written += update.bytesWritten
      maxCount = Math.max(maxCount, segments.length)
      expect(segments.length).toBeLessThanOrEqual(Math.floor(1 + Math.log(rowGroups) / Math.log(MERGE_FACTOR)))
      for (let i = 0; i + 1 < segments.length; i++) expect(segments[i].rowGroups).toBeGreaterThan(MERGE_FACTOR * segments[i + 1].rowGroups)
    }
    expect(store.bytesPut).toBe(written)
    const amplification = written / builtBytes
    // proven bound: each rewrite grows a row group's segment by at least 1 + 1/F
    expect(amplification).toBeLessThan(1 + Math.log(rowGroups) / Math.log(1 + 1 / MERGE_FACTOR))
    expect(amplification).toBeLessThan(15)
    expect(maxCount).toBeGreaterThanOrEqual(4)
    console.log(
      `tiers: ${rowGroups} row groups in 2,500 appends → ${segments.length} segments (max ${maxCount}), write amplification ${amplification.toFixed(2)} (bytes written / bytes built)`,
    )

    // every object written is either listed or reported obsolete; deleting the obsolete ones loses nothing
    const live = new Set(segments.flatMap(s => segmentKeys(spec.prefix, s)))
    const dead = obsolete.flatMap(s => segmentKeys(spec.prefix, s))
    expect(new Set([...store.objects.keys()])).toEqual(new Set([...live, ...dead]))
    for (const k of dead) if (!live.has(k)) await store.delete(k)
    expect(indexCoverage(segments, 'a')).toEqual([[0, 249_999]])
    const index = { prefix: spec.prefix, segments }
    const present = [...lake.truth.b.keys()]
    for (let i = 0; i < 40; i++) {
      const h = present[Math.floor(r() * present.length)]
      const got = await lookupValues(store, index, 'b', [Uint8Array.from(h.match(/../g)!.map(x => parseInt(x, 16)))])
      expect(got.hot).toEqual([])
      expect(candidateSet(got.partitions)).toEqual(lake.truth.b.get(h))
    }
  }, 120_000)

  it('refuses a segment over blocks already indexed', async () => {
    const store = memoryStore()
    const lake = randomLake(32, { partitions: 2, groups: 1, rows: 4, universe: 100 })
    const first = await maintainTiers(store, spec, [], buildSegment(spec, lake.inputs))
    await expect(maintainTiers(store, spec, first.segments, buildSegment(spec, lake.inputs.slice(1)))).rejects.toThrow(
      /blocks \[\[100,199\]\] are indexed already/,
    )
  })
})

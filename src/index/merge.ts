/**
 * Merges segments into one, bucket by bucket: buckets split the key space by its top bits, so
 * output bucket b needs only the one input bucket of each input that covers b's keys. Memory
 * is one decoded bucket per input whatever the segments' size (a whole-chain topic1 segment
 * is gigabytes), and each input bucket is read once.
 */
import { BUCKET_BYTES, columnId, hotCap, inlineTable, log2BucketsFor, type SegmentSpec } from './build.ts'
import { bucketKey, encodeBucket, encodeTable, KEY_BITS, log2, seal, tableKey } from './format.ts'
import { hashHex } from './hash.ts'
import { unionRanges } from './ranges.ts'
import type { SegmentSource } from './read.ts'
import type { Entries, IndexObject, SegmentDescriptor } from './types.ts'

/** One input's slice of an output bucket: entries [lo, hi) of `e`, ordinals renumbered through `map`. */
interface Part {
  e: Entries
  lo: number
  hi: number
  /** Merged ordinal of each of the input's row groups (ascending). */
  map: Uint32Array
}

/**
 * Entries of the parts merged by key. A key's count is the sum of its counts, a hot input
 * counting all its row groups (its postings were dropped, so all stay candidates); above
 * `cap` the key is hot, else its ordinals are the union, a hot input contributing all of its.
 */
function mergeEntries(parts: readonly Part[], cap: number): Entries {
  const at = parts.map(p => p.lo)
  const keys: number[] = []
  const hot: number[] = []
  const start: number[] = [0]
  let ordinals = new Uint32Array(1024)
  let count = 0
  for (;;) {
    let key = Infinity
    parts.forEach((p, i) => {
      if (at[i] < p.hi && p.e.keys[at[i]] < key) key = p.e.keys[at[i]]
    })
    if (key === Infinity) break
    const here = parts.flatMap((p, i) => (at[i] < p.hi && p.e.keys[at[i]] === key ? [{ p, j: at[i]++ }] : []))
    const total = here.reduce((n, { p, j }) => n + (p.e.hot[j] ? p.map.length : p.e.start[j + 1] - p.e.start[j]), 0)
    keys.push(key)
    if (total > cap) hot.push(1)
    else {
      hot.push(0)
      if (count + total > ordinals.length) {
        const grown = new Uint32Array(Math.max(ordinals.length * 2, count + total))
        grown.set(ordinals.subarray(0, count))
        ordinals = grown
      }
      const first = count
      for (const { p, j } of here) {
        if (p.e.hot[j]) for (const o of p.map) ordinals[count++] = o
        else for (let x = p.e.start[j]; x < p.e.start[j + 1]; x++) ordinals[count++] = p.map[p.e.ordinals[x]]
      }
      if (here.length > 1) ordinals.subarray(first, count).sort()
    }
    start.push(count)
  }
  return { keys: Float64Array.from(keys), hot: Uint8Array.from(hot), start: Uint32Array.from(start), ordinals: ordinals.slice(0, count) }
}

/** First index in sorted keys[lo, hi) at or above `key`. */
function lowerBound(keys: Float64Array, key: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid] < key) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Merges `inputs` (segments of the same columns over disjoint partitions) into one segment,
 * handing each object to `put` as it is made; returns the merged segment's descriptor.
 * Deterministic: its ids derive from the inputs' ids, so the same merge gives the same keys.
 */
export async function mergeSegments(spec: SegmentSpec, inputs: readonly SegmentSource[], put: (o: IndexObject) => Promise<void>): Promise<SegmentDescriptor> {
  const tables = await Promise.all(inputs.map(s => s.table()))
  const all = tables.flatMap((t, i) => t.partitions.map((p, j) => ({ p, i, first: t.base[j] }))).sort((a, b) => a.p.from - b.p.from)
  const table = encodeTable(all.map(a => a.p))
  const maps = tables.map(t => new Uint32Array(t.base[t.partitions.length]))
  let rowGroups = 0
  for (const { p, i, first } of all) {
    for (let g = 0; g < p.rowGroupCount; g++) maps[i][first + g] = rowGroups + g
    rowGroups += p.rowGroupCount
  }
  const inline = inlineTable(table, spec)
  const tableId = hashHex(table)
  const descriptor: SegmentDescriptor = {
    from: all[0].p.from,
    to: all[all.length - 1].p.to,
    coverage: unionRanges(all.map(a => [a.p.from, a.p.to])),
    partitions: all.length,
    rowGroups,
    ...(inline ? {} : { table: tableId }),
    columns: {},
  }
  if (!inline) await put({ key: tableKey(spec.prefix, descriptor, tableId), bytes: seal(table, { kind: 'table', id: tableId, bucket: 0, log2Buckets: 0 }) })
  const cap = hotCap(rowGroups)
  for (const column of spec.columns) {
    const columns = inputs.map(s => {
      const c = s.descriptor.columns[column]
      if (!c) throw new RangeError(`segment [${s.descriptor.from}, ${s.descriptor.to}] does not index ${column}`)
      return c
    })
    const ks = columns.map(c => log2(c.buckets))
    const k = Math.max(log2BucketsFor(columns.reduce((n, c) => n + c.bytes, 0), spec.bucketBytes ?? BUCKET_BYTES), ...ks)
    const id = columnId(`merge:${column}:${k}:${inline ? 'inline' : tableId}:${columns.map(c => c.id).join(',')}`)
    descriptor.columns[column] = { id, buckets: 2 ** k, bytes: 0 }
    const held: { b: number; e?: Entries }[] = inputs.map(() => ({ b: -1 }))
    const width = 2 ** (KEY_BITS - k)
    for (let b = 0; b < 2 ** k; b++) {
      const parts = await Promise.all(
        inputs.map(async (s, i) => {
          const ib = Math.floor(b / 2 ** (k - ks[i]))
          if (held[i].b !== ib) held[i] = { b: ib, e: await s.bucket(column, ib) }
          const e = held[i].e!
          return { e, lo: lowerBound(e.keys, b * width, 0, e.keys.length), hi: lowerBound(e.keys, (b + 1) * width, 0, e.keys.length), map: maps[i] }
        }),
      )
      const merged = mergeEntries(parts, cap)
      const bytes = seal(encodeBucket(merged, 0, merged.keys.length, b, k, inline ? table : undefined), { kind: 'bucket', id, bucket: b, log2Buckets: k })
      descriptor.columns[column].bytes += bytes.length
      await put({ key: bucketKey(spec.prefix, descriptor, column, b), bytes })
    }
  }
  return descriptor
}

/**
 * Merges segments into one, bucket by bucket: buckets split the key space by its top bits, so
 * output bucket b needs only the one input bucket of each input that covers b's keys. Memory
 * is one decoded bucket per input whatever the segments' size (a whole-chain topic1 segment
 * is gigabytes), and each input bucket is read once.
 */
import {
  BUCKET_BYTES,
  columnId,
  columnHotCap,
  ColumnWriter,
  inlineCaps,
  inlineTable,
  log2BucketsFor,
  joinSlices,
  type ColumnEntries,
  type SegmentSpec,
} from './build.ts'
import { encodeBucket, encodeTable, KEY_BITS, log2, parsing, rowsKey, seal, tableKey } from './format.ts'
import { crc32 } from '../store/crc32.ts'
import { ByteWriter } from './bytes.ts'
import { hashHex } from './hash.ts'
import { unionRanges } from './ranges.ts'
import type { SegmentSource } from './read.ts'
import { decodeSlice, rowCodecId, sliceColumns, sliceWriter, type RowField } from './rows.ts'
import type { ColumnSegment, Entries, IndexObject, SegmentDescriptor } from './types.ts'

/** One input's slice of an output bucket: entries [lo, hi) of `e`, ordinals renumbered through `map`. */
interface Part {
  e: Entries
  lo: number
  hi: number
  /** Merged ordinal of each of the input's row groups (ascending). */
  map: Uint32Array
  /** The input bucket's rows object body, when its column stores rows this merge can keep (same codec). */
  rows?: Uint8Array
  /** Its key, to name it when a slice does not parse. */
  rowsKey?: string
}

/** What re-encodes slices: the codec's fields, the merged column, most rows and bytes a slice, its writer. */
interface SliceCodec {
  fields: readonly RowField[]
  column: string
  max: number
  maxBytes: number
  write: ReturnType<typeof sliceWriter>
}

/**
 * Entries of the parts merged by key. A key's count is the sum of its counts, a hot input
 * counting all its row groups (its postings were dropped, so all stay candidates); above
 * `cap` the key is hot, else its ordinals are the union, a hot input contributing all of its.
 * With `codec`, a key keeps inline rows when every input holding it has them and they
 * total at most `codec.max` rows and encode to at most `codec.maxBytes`: the inputs' rows one
 * after the other in one slice (a reader orders them).
 */
function mergeEntries(parts: readonly Part[], cap: number, codec?: SliceCodec): ColumnEntries {
  const at = parts.map(p => p.lo)
  const keys: number[] = []
  const hot: number[] = []
  const start: number[] = [0]
  const rowCount: number[] = []
  const lengths: number[] = []
  const sliceStart: number[] = [0]
  const w = new ByteWriter()
  let ordinals = new Uint32Array(1024)
  let count = 0
  const here: number[] = []
  for (;;) {
    let key = Infinity
    for (let i = 0; i < parts.length; i++) if (at[i] < parts[i].hi && parts[i].e.keys[at[i]] < key) key = parts[i].e.keys[at[i]]
    if (key === Infinity) break
    here.length = 0
    let total = 0
    for (let i = 0; i < parts.length; i++) {
      const { e, hi, map } = parts[i]
      const j = at[i]
      if (j >= hi || e.keys[j] !== key) continue
      here.push(i)
      total += e.hot[j] ? map.length : e.start[j + 1] - e.start[j]
    }
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
      for (const i of here) {
        const { e, map } = parts[i]
        const j = at[i]
        if (e.hot[j]) {
          ordinals.set(map, count)
          count += map.length
        } else for (let x = e.start[j]; x < e.start[j + 1]; x++) ordinals[count++] = map[e.ordinals[x]]
      }
      if (here.length > 1) ordinals.subarray(first, count).sort()
    }
    for (const i of here) at[i]++
    start.push(count)
    if (codec) {
      const before = w.length
      rowCount.push(total > cap ? 0 : joinRows(parts, here, at, codec, w))
      lengths.push(w.length - before)
      sliceStart.push(w.length)
    }
  }
  const entries: Entries = {
    keys: Float64Array.from(keys),
    hot: Uint8Array.from(hot),
    start: Uint32Array.from(start),
    ordinals: ordinals.slice(0, count),
  }
  if (!codec) return { entries }
  const bytes = w.finish()
  const bounds = Float64Array.from(sliceStart)
  entries.rows = {
    count: Uint32Array.from(rowCount),
    offset: new Float64Array(keys.length),
    length: Uint32Array.from(lengths),
    crc: Uint32Array.from(rowCount, (n, i) => (n ? crc32(bytes.subarray(bounds[i], bounds[i + 1])) : 0)),
  }
  return { entries, slices: { bytes, start: bounds } }
}

/**
 * Writes the slice of the key just merged (entry at[i] - 1 of each part in `here`) to `w` and
 * returns its row count; 0 (nothing written) when one input lacks rows, they are too many or
 * too big, or the inputs' slices are of different values (a key collision: only postings are kept).
 */
function joinRows(parts: readonly Part[], here: readonly number[], at: readonly number[], codec: SliceCodec, w: ByteWriter): number {
  let count = 0
  for (const i of here) {
    const { e, rows } = parts[i]
    const j = at[i] - 1
    if (!rows || !e.rows || e.rows.count[j] === 0) return 0
    count += e.rows.count[j]
  }
  if (count > codec.max) return 0
  const decoded = here.map(i => {
    const { e, rows, rowsKey } = parts[i]
    const j = at[i] - 1
    const from = e.rows!.offset[j]
    const slice = rows!.subarray(from, from + e.rows!.length[j])
    if (slice.length !== e.rows!.length[j]) throw new RangeError('a slice beyond its rows object')
    return parsing(rowsKey!, () => decodeSlice(codec.fields, codec.column, slice, e.rows!.count[j]))
  })
  const checks = new Set(decoded.map(d => d.check))
  if (checks.size > 1) return 0
  const [check] = checks
  const part = new Uint32Array(count)
  const row = new Uint32Array(count)
  let n = 0
  decoded.forEach((d, p) => {
    for (let r = 0; r < d.batch.length; r++) {
      part[n] = p
      row[n++] = r
    }
  })
  const columns = sliceColumns(
    codec.fields,
    decoded.map(d => d.batch),
  )
  const before = w.length
  codec.write({ columns, part, row, lo: 0, hi: count }, w, check ?? undefined)
  if (w.length - before <= codec.maxBytes) return count
  w.length = before
  return 0
}

/**
 * The buckets of one input column in order, each read `ahead` buckets before the merge needs it
 * (reads are the merge's latency: a whole-chain column has ~260,000 buckets). A read ahead
 * that fails fails the merge when it gets there, not as an unhandled rejection before.
 */
function readAhead(
  prefix: string,
  source: SegmentSource,
  column: string,
  count: number,
  withRows: boolean,
  ahead = 8,
): (b: number) => Promise<{ e: Entries; rows?: Uint8Array; rowsKey?: string }> {
  const pending = new Map<number, Promise<{ e: Entries; rows?: Uint8Array; rowsKey?: string }>>()
  return b => {
    for (const j of pending.keys()) if (j < b) pending.delete(j)
    for (let j = b; j < Math.min(count, b + ahead); j++) {
      if (pending.has(j)) continue
      const p = Promise.all([source.bucket(column, j), withRows ? source.rows(column, j) : undefined]).then(([e, rows]) => ({
        e,
        ...(rows ? { rows, rowsKey: rowsKey(prefix, source.descriptor, column, j) } : {}),
      }))
      p.catch(() => {})
      pending.set(j, p)
    }
    return pending.get(b)!
  }
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
export async function mergeSegments(
  spec: SegmentSpec,
  inputs: readonly SegmentSource[],
  put: (o: IndexObject) => Promise<void>,
): Promise<SegmentDescriptor> {
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
  if (!inline)
    await put({
      key: tableKey(spec.prefix, descriptor, tableId),
      bytes: seal(table, { kind: 'table', id: tableId, bucket: 0, log2Buckets: 0 }),
    })
  const codec = spec.rows && rowCodecId(spec.rows.fields)
  for (const column of spec.columns) {
    const columns = inputs.map(s => {
      const c = s.descriptor.columns[column]
      if (!c) throw new RangeError(`segment [${s.descriptor.from}, ${s.descriptor.to}] does not index ${column}`)
      return c
    })
    const ks = columns.map(c => log2(c.buckets))
    const k = Math.max(
      log2BucketsFor(
        columns.reduce((n, c) => n + c.bytes, 0),
        spec.bucketBytes ?? BUCKET_BYTES,
      ),
      ...ks,
    )
    const sliceCodec = spec.rows && {
      fields: spec.rows.fields,
      column,
      ...inlineCaps(spec.rows, column),
      write: sliceWriter(spec.rows.fields, column),
    }
    const cap = columnHotCap(rowGroups, spec.rows, column)
    // the caps decide which slices survive, so they are part of what the id names
    const kept = sliceCodec ? `rows=${codec}:${sliceCodec.max}:${sliceCodec.maxBytes}:` : ''
    const id = columnId(`merge:${column}:${k}:${inline ? 'inline' : tableId}:${kept}${columns.map(c => c.id).join(',')}`)
    const c: ColumnSegment = { id, buckets: 2 ** k, bytes: 0, ...(codec ? { rows: { codec, bytes: 0 } } : {}) }
    descriptor.columns[column] = c
    const buckets = inputs.map((s, i) =>
      readAhead(spec.prefix, s, column, 2 ** ks[i], codec !== undefined && columns[i].rows?.codec === codec),
    )
    const width = 2 ** (KEY_BITS - k)
    const writer = new ColumnWriter(spec, descriptor, column, c)
    for (let b = 0; b < 2 ** k; b++) {
      const parts = await Promise.all(
        inputs.map(async (_, i) => {
          const { e, rows, rowsKey } = await buckets[i](Math.floor(b / 2 ** (k - ks[i])))
          return {
            e,
            lo: lowerBound(e.keys, b * width, 0, e.keys.length),
            hi: lowerBound(e.keys, (b + 1) * width, 0, e.keys.length),
            map: maps[i],
            ...(rows ? { rows, rowsKey } : {}),
          }
        }),
      )
      const merged = mergeEntries(parts, cap, sliceCodec)
      const body = encodeBucket(merged.entries, 0, merged.entries.keys.length, b, k, inline ? table : undefined)
      const rows = merged.slices && joinSlices(merged.slices, 0, merged.entries.keys.length)
      for (const o of writer.bucket(b, { body, ...(rows ? { rows } : {}) })) await put(o)
    }
    for (const o of writer.finish()) await put(o)
  }
  return descriptor
}

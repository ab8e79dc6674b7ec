/**
 * What row-groups.ts takes from a chunk's values (page cuts, statistics, PLAIN bytes), read
 * from a packed chunk where its values lie (dictionary.ts `chooseVectorDictionary` chooses its
 * dictionary). Cut into values first, every row of an ingest unit's partitions and lookup
 * copies was a view or a BigInt for as long as its row group was written: millions of
 * short-lived objects a unit, and each pass over them a pointer chase. The results are the
 * decoded path's, byte for byte (test/parquet/write.test.ts).
 */
import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js'
import { rowComparator } from '../columns/compare.ts'
import { valueAt, type BinaryVector, type FixedVector, type U64Vector, type Vector } from '../columns/vector.ts'
import type { StoredValue } from '../schema/kinds.ts'

/** A packed column a chunk is written from where its values lie: u64 words, fixed-width or binary bytes (not text). */
export type PackedChunk = U64Vector | FixedVector | (BinaryVector & { text: false })

/** Whether a vector's chunks are written from its buffers (the other layouts are cut into values first). */
export const isPackedChunk = (v: Vector): v is PackedChunk => v.type === 'u64' || v.type === 'fixed' || (v.type === 'binary' && !v.text)

/** hyparquet-writer's `getPageBoundaries` for PLAIN values: a page ends once its values' sizes reach `pageSize` (a null counts 0). */
export function vectorPageBoundaries(v: PackedChunk, typeLength: number | undefined, pageSize: number): { start: number; end: number }[] {
  if (!pageSize) return [{ start: 0, end: v.length }]
  const fixedSize = v.type === 'u64' ? 8 : v.type === 'fixed' ? (typeLength ?? 0) : -1
  const offsets = v.type === 'binary' ? v.offsets : undefined
  const boundaries: { start: number; end: number }[] = []
  let start = 0
  let accumulated = 0
  for (let i = 0; i < v.length; i++) {
    const size = v.valid !== null && v.valid[i] === 0 ? 0 : offsets ? offsets[i + 1] - offsets[i] : fixedSize
    accumulated += size
    if (accumulated >= pageSize && i > start) {
      boundaries.push({ start, end: i })
      start = i
      accumulated = size
    }
  }
  if (start < v.length) boundaries.push({ start, end: v.length })
  return boundaries
}

/** Per dictionary entry, the serial of the last page that compared it: a page's statistics compare each of its distinct values once. */
let stamps = new Int32Array(1024)
let serial = 0

/**
 * Min, max and nulls of rows [start, end), in the decoded path's order (unsigned for u64 and
 * bytes); with the chunk's dictionary `indexes`, each distinct value of the page is compared once.
 */
export function vectorStatistics(
  v: PackedChunk,
  start: number,
  end: number,
  indexes?: ArrayLike<number | undefined>,
  entries = 0,
): { min?: StoredValue; max?: StoredValue; nulls: number } {
  if (indexes && stamps.length < entries) stamps = new Int32Array(Math.max(entries, 2 * stamps.length))
  if (indexes && ++serial === 0x7fffffff) {
    stamps.fill(0)
    serial = 1
  }
  const compare = rowComparator(v)
  let min = -1
  let max = -1
  let nulls = 0
  for (let i = start; i < end; i++) {
    if (v.valid !== null && v.valid[i] === 0) {
      nulls++
      continue
    }
    if (indexes) {
      const entry = indexes[i]!
      if (stamps[entry] === serial) continue
      stamps[entry] = serial
    }
    if (min < 0 || compare(i, min) < 0) min = i
    if (max < 0 || compare(i, max) > 0) max = i
  }
  return { min: min < 0 ? undefined : valueAt(v, min)!, max: max < 0 ? undefined : valueAt(v, max)!, nulls }
}

/** PLAIN values of the non-null rows [start, end), as `writePlain` writes them (a binary value after its u32 length). */
export function writeVectorPlain(out: ByteWriter, v: PackedChunk, start: number, end: number): void {
  // a run of u64s is PLAIN INT64 as it lies: a vector's words are little-endian (vector.ts)
  if (v.valid === null && v.type !== 'binary') {
    const [bytes, width] = v.type === 'fixed' ? [v.bytes, v.width] : [new Uint8Array(v.values.buffer, v.values.byteOffset, 8 * v.length), 8]
    out.appendBytes(bytes.subarray(start * width, end * width))
    return
  }
  const rows: number[] = []
  for (let i = start; i < end; i++) if (v.valid === null || v.valid[i] !== 0) rows.push(i)
  writeVectorRows(out, v, rows)
}

/** PLAIN values of the given rows, in that order (a dictionary page's entries). */
export function writeVectorRows(out: ByteWriter, v: PackedChunk, rows: readonly number[]): void {
  let size = 0
  if (v.type === 'u64') size = 8 * rows.length
  else if (v.type === 'fixed') size = v.width * rows.length
  else for (const i of rows) size += 4 + v.offsets[i + 1] - v.offsets[i]
  out.ensure(size)
  const dst = new Uint8Array(out.buffer, out.index, size)
  let at = 0
  if (v.type === 'u64') {
    const view = new DataView(out.buffer, out.index, size)
    for (const i of rows) {
      view.setUint32(at, v.words[2 * i], true)
      view.setUint32(at + 4, v.words[2 * i + 1], true)
      at += 8
    }
  } else if (v.type === 'fixed') {
    const { bytes, width } = v
    for (const i of rows) {
      for (let k = 0, from = i * width; k < width; k++) dst[at + k] = bytes[from + k]
      at += width
    }
  } else {
    const { bytes, offsets } = v
    for (const i of rows) {
      const from = offsets[i]
      const to = offsets[i + 1]
      const n = to - from
      dst[at] = n & 0xff
      dst[at + 1] = (n >>> 8) & 0xff
      dst[at + 2] = (n >>> 16) & 0xff
      dst[at + 3] = n >>> 24
      at += 4
      if (n > 64) dst.set(bytes.subarray(from, to), at)
      else for (let k = 0; k < n; k++) dst[at + k] = bytes[from + k]
      at += n
    }
  }
  out.index += size
  out.offset += size
}

/**
 * Decodes the data pages of a flat column chunk straight into a packed vector
 * (src/columns/vector.ts): values are copied from the decompressed page into one
 * flat buffer per column, so decoding allocates per page, not per value.
 * hyparquet decodes into one JavaScript value per cell (a Uint8Array view per
 * address or hash, a BigInt per number), and garbage collection then took half
 * of a full export's time.
 *
 * Covers what partitions use: data pages v1 and v2, PLAIN and dictionary
 * (PLAIN_DICTIONARY, RLE_DICTIONARY) values, RLE booleans, RLE definition levels
 * of optional columns, and any codec hyparquet or the given compressors know.
 * Page headers (and the scan's offset indexes) are read by page-header.ts; decompression
 * stays hyparquet's.
 */
import type { CompressionCodec, Compressors, PageHeader } from 'hyparquet'
import { decompressPage } from 'hyparquet/src/datapage.js'
import { copyWords, fixedVector, u64Vector, VectorBuffers, type Vector, type VectorMemory, type VectorShape } from '../columns/vector.ts'
import { crc32 } from '../store/crc32.ts'
import { readPageHeader } from './page-header.ts'

/** What decoding one column chunk needs to know. */
export interface ChunkLayout {
  /** Where the values go: the vector layout of the field's kind. */
  shape: VectorShape
  /** OPTIONAL in the schema: pages carry definition levels. */
  optional: boolean
  codec: CompressionCodec
  compressors?: Compressors
  /** Where data pages' vectors take their buffers (the Node server's pool, src/query/column-buffers.ts); default fresh memory. */
  memory?: VectorMemory
}

/** Thrown for a page this decoder does not know; names the encoding. */
export class UnsupportedPageError extends Error {}

/** Thrown for pages whose bytes contradict their checksum, their header or their index: damaged stored bytes. */
export class CorruptPageError extends Error {}

/**
 * What the caller knows of a run of pages from elsewhere (the offset index, the chunk's
 * metadata), checked against the page headers, which no checksum covers: a flipped bit
 * in a header then fails instead of shifting rows or values.
 */
export interface PageCheck {
  /** The row after the run's last page: the pages must hold exactly rows [firstRow, endRow). */
  endRow?: number
  /** The encodings the chunk's data pages use (its `encoding_stats`). */
  encodings?: readonly string[]
}

/** Verifies a page's standard CRC-32 (over its bytes after the header) when the writer set it. */
function verifyPage(header: PageHeader, body: Uint8Array): void {
  if (body.length !== header.compressed_page_size) throw new CorruptPageError('page runs past its column chunk')
  if (header.crc !== undefined && header.crc !== null && crc32(body) !== header.crc >>> 0) {
    throw new CorruptPageError(`${header.type} page fails its checksum`)
  }
}

const PHYSICAL_WIDTH = { u64: 8, bool: 1 } as const

/** Decodes a dictionary page (header included) into a vector of the dictionary's values. */
export function decodeDictionary(layout: ChunkLayout, page: Uint8Array): Vector {
  const reader = { view: viewOf(page), offset: 0 }
  const header = readPageHeader(reader)
  if (header.type !== 'DICTIONARY_PAGE' || !header.dictionary_page_header)
    throw new UnsupportedPageError(`expected a dictionary page, found ${header.type}`)
  const body = page.subarray(reader.offset, reader.offset + header.compressed_page_size)
  verifyPage(header, body)
  const bytes = decompressPage(body, header.uncompressed_page_size, layout.codec, layout.compressors)
  const n = header.dictionary_page_header.num_values
  const out = new Builder(layout.shape, n, false)
  out.plain(bytes, 0, n, null, n)
  const dictionary = out.finish()
  // Its values must fill the page exactly, or its header (no checksum covers it) lies about them.
  const used =
    dictionary.type === 'binary' ? dictionary.offsets[n] + 4 * n : dictionary.type === 'bool' ? Math.ceil(n / 8) : n * out.valueWidth
  if (used !== bytes.length) throw new CorruptPageError(`dictionary page of ${n} values holds ${bytes.length} bytes, not ${used}`)
  return dictionary
}

/**
 * Rows `[from, to)` of a run of consecutive data pages (headers included) whose first
 * row is `firstRow`; rows are counted in the same frame as `firstRow` (file or group).
 * Dictionary-encoded pages need the chunk's `dictionary`.
 */
export function decodePages(
  layout: ChunkLayout,
  pages: Uint8Array,
  firstRow: number,
  from: number,
  to: number,
  dictionary?: Vector,
  check: PageCheck = {},
): Vector {
  const out = new Builder(layout.shape, to - from, layout.optional, layout.memory)
  walkPages(layout, pages, firstRow, from, to, out, dictionary, check)
  return out.finish()
}

/**
 * Only `rows` (ascending, within `[from, to)`, counted as `decodePages` counts them) of a
 * run of pages: the values of the other rows are stepped over, not copied, so a few rows
 * of a page cost their own values, not the page's (a dictionary page's codes often span
 * its whole row group).
 */
export function decodePageRows(
  layout: ChunkLayout,
  pages: Uint8Array,
  firstRow: number,
  from: number,
  to: number,
  rows: Int32Array,
  dictionary?: Vector,
  check: PageCheck = {},
): Vector {
  const out = new Builder(layout.shape, rows.length, layout.optional, layout.memory)
  walkPages(layout, pages, firstRow, from, to, out, dictionary, check, rows)
  return out.finish()
}

/**
 * The dictionary codes of rows `[from, to)` (as `decodePages` counts them), -1 for a
 * null row, or null when a page is not dictionary-encoded. A predicate can then be
 * decided once per distinct value instead of once per row.
 */
export function decodeCodes(
  layout: ChunkLayout,
  pages: Uint8Array,
  firstRow: number,
  from: number,
  to: number,
  check: PageCheck = {},
): Int32Array | null {
  const out = new CodeSink(to - from)
  try {
    walkPages(layout, pages, firstRow, from, to, out, undefined, check)
  } catch (error) {
    if (error === NOT_DICTIONARY) return null
    throw error
  }
  return out.codes
}

function walkPages(
  layout: ChunkLayout,
  pages: Uint8Array,
  firstRow: number,
  from: number,
  to: number,
  out: PageSink,
  dictionary: Vector | undefined,
  check: PageCheck,
  picks?: Int32Array,
): void {
  const reader = { view: viewOf(pages), offset: 0 }
  let row = firstRow
  let picked = 0
  // Every header of the run is read, so that the rows they claim can be checked against `endRow`.
  while (reader.offset < pages.length && (row < to || check.endRow !== undefined)) {
    const first = reader.offset === 0
    const header = readPageHeader(reader)
    const start = reader.offset
    reader.offset += header.compressed_page_size
    // A chunk's dictionary page comes first; anywhere else it is a damaged header.
    if (header.type === 'DICTIONARY_PAGE') {
      if (first) continue
      throw new CorruptPageError('a dictionary page among the data pages')
    }
    const rows = pageRows(header)
    if (row < to && row + rows > from) {
      const [a, b] = [Math.max(0, from - row), Math.min(rows, to - row)]
      // The page's picked rows (a run of `picks`); a page with none is not decoded.
      let keep: Int32Array | null = null
      if (picks) {
        const first = picked
        picked = firstAtLeast(picks, picked, row + b)
        if (picked > first) keep = picks.subarray(first, picked)
      }
      if (keep || !picks) {
        const body = pages.subarray(start, start + header.compressed_page_size)
        verifyPage(header, body)
        const encoding = header.data_page_header_v2?.encoding ?? header.data_page_header?.encoding
        if (check.encodings && !check.encodings.includes(encoding!)) throw new CorruptPageError(`a data page claims encoding ${encoding}`)
        decodeDataPage(layout, header, body, rows, a, b, out, dictionary, keep && { rows: keep, base: row + a })
      }
    }
    row += rows
  }
  if (check.endRow !== undefined && (row !== check.endRow || reader.offset !== pages.length)) {
    throw new CorruptPageError(`column pages hold rows ${firstRow}-${row - 1}, their index says ${firstRow}-${check.endRow - 1}`)
  }
  if (out.filled !== (picks ? picks.length : to - from))
    throw new Error(`column pages hold rows ${firstRow}-${row - 1}, asked for ${from}-${to - 1}`)
}

/** The first index from `from` on whose value in ascending `values` is at least `bound` (values.length if none). */
export function firstAtLeast(values: ArrayLike<number>, from: number, bound: number): number {
  let lo = from
  let hi = values.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (values[mid] < bound) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Where decoded page values go: a vector, or only the dictionary codes. */
interface PageSink {
  filled: number
  plain(values: Uint8Array, skip: number, count: number, window: Uint8Array | null, rows: number): void
  /** The PLAIN values at `picked` (ascending) of a page holding `total`, spread over `rows` rows per `window`. */
  gather(values: Uint8Array, picked: Int32Array, total: number, window: Uint8Array | null, rows: number): void
  fromDictionary(dictionary: Vector | undefined, indexes: Int32Array, window: Uint8Array | null, rows: number): void
  bools(bits: Uint8Array, window: Uint8Array | null, rows: number): void
}

const NOT_DICTIONARY = new Error('page is not dictionary-encoded')

class CodeSink implements PageSink {
  filled = 0
  readonly codes: Int32Array

  constructor(length: number) {
    this.codes = new Int32Array(length)
  }

  plain(): void {
    throw NOT_DICTIONARY
  }

  gather(): void {
    throw NOT_DICTIONARY
  }

  bools(): void {
    throw NOT_DICTIONARY
  }

  fromDictionary(_: Vector | undefined, indexes: Int32Array, window: Uint8Array | null, rows: number): void {
    if (!window) this.codes.set(indexes.subarray(0, rows), this.filled)
    else for (let r = 0, k = 0; r < rows; r++) this.codes[this.filled + r] = window[r] ? indexes[k++] : -1
    this.filled += rows
  }
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** Where the length-prefixed PLAIN value at `p` of `values` ends; its bytes start at p + 4. */
function valueEnd(view: DataView, values: Uint8Array, p: number): number {
  if (p + 4 > values.length) throw new CorruptPageError('a value runs past the end of its page')
  const end = p + 4 + view.getUint32(p, true)
  if (end > values.length) throw new CorruptPageError('a value runs past the end of its page')
  return end
}

/** A page whose values are fewer bytes than `count` values of `bits` bits take. */
function checkHolds(values: Uint8Array, count: number, bits: number): void {
  if (count * bits > values.length * 8) throw new CorruptPageError(`a page of ${values.length} bytes cannot hold ${count} values`)
}

function pageRows(header: PageHeader): number {
  if (header.data_page_header_v2) return header.data_page_header_v2.num_rows
  if (header.data_page_header) return header.data_page_header.num_values
  throw new UnsupportedPageError(`unsupported page type ${header.type}`)
}

/**
 * Working arrays of one page's decode, reused by the next page's: a page decodes
 * synchronously and its sink copies what it keeps, so none is read past its page. A
 * fresh typed array per page (a backing store allocated, zeroed and collected) cost
 * about as much as copying a dense selection's values. Whoever takes one writes every
 * element it reads.
 */
class Scratch<T extends Uint8Array | Int32Array> {
  private buffer: T
  private readonly make: (length: number) => T

  constructor(make: (length: number) => T) {
    this.make = make
    this.buffer = make(1024)
  }

  take(length: number): T {
    // A page far larger than usual gets its own array, so one odd file does not pin the memory.
    if (length > SCRATCH_MAX) return this.make(length)
    if (this.buffer.length < length) this.buffer = this.make(Math.max(length, 2 * this.buffer.length))
    return this.buffer.subarray(0, length) as T
  }
}

const SCRATCH_MAX = 1 << 20
/** A page's definition flags, its picked rows' flags and value indexes, the value index of each row up to the last picked, its dictionary codes, its booleans. */
const DEFINED = new Scratch(n => new Uint8Array(n))
const FLAGS = new Scratch(n => new Uint8Array(n))
const KEPT = new Scratch(n => new Int32Array(n))
const BEFORE = new Scratch(n => new Int32Array(n))
const CODES = new Scratch(n => new Int32Array(n))
const BITS = new Scratch(n => new Uint8Array(n))

/**
 * Decodes one data page's rows `[a, b)` (page-relative) into `out`; with `keep`, only the rows
 * it lists (ascending, numbered from `base`, the page's row `a`).
 */
function decodeDataPage(
  layout: ChunkLayout,
  header: PageHeader,
  body: Uint8Array,
  rows: number,
  a: number,
  b: number,
  out: PageSink,
  dictionary: Vector | undefined,
  keep: { rows: Int32Array; base: number } | null = null,
): void {
  let defined: Uint8Array | null = null
  let values: Uint8Array
  let encoding: string
  const v2 = header.data_page_header_v2
  if (v2) {
    encoding = v2.encoding
    const levelBytes = v2.definition_levels_byte_length + v2.repetition_levels_byte_length
    if (v2.repetition_levels_byte_length) throw new UnsupportedPageError('repeated columns are not supported')
    if (layout.optional) {
      defined = DEFINED.take(rows)
      decodeHybrid(
        body,
        v2.repetition_levels_byte_length,
        v2.repetition_levels_byte_length + v2.definition_levels_byte_length,
        1,
        defined,
        rows,
      )
    }
    const data = body.subarray(levelBytes)
    values =
      v2.is_compressed === false ? data : decompressPage(data, header.uncompressed_page_size - levelBytes, layout.codec, layout.compressors)
  } else {
    const v1 = header.data_page_header!
    encoding = v1.encoding
    const page = decompressPage(body, header.uncompressed_page_size, layout.codec, layout.compressors)
    let at = 0
    if (layout.optional) {
      const length = viewOf(page).getUint32(0, true)
      defined = DEFINED.take(rows)
      decodeHybrid(page, 4, 4 + length, 1, defined, rows)
      at = 4 + length
    }
    values = page.subarray(at)
  }
  // Values are stored for defined rows only: the first wanted one is preceded by the defined rows before `a`.
  let skip = a
  if (defined) {
    skip = 0
    for (let i = 0; i < a; i++) skip += defined[i]
  }
  const window = defined ? defined.subarray(a, b) : null
  let count = b - a
  if (window) {
    count = 0
    for (let i = 0; i < window.length; i++) count += window[i]
  }
  if (keep) {
    const kept = keptRows(keep, window, skip)
    // Values up to the last kept one are decoded, the kept ones gathered.
    const upTo = kept.values.length ? kept.values[kept.values.length - 1] + 1 : 0
    if (encoding === 'PLAIN') {
      const picked = kept.values
      // Kept values in one run (a block range's rows) are copied from the page as they are, not gathered first.
      if (picked.length > 0 && picked[picked.length - 1] - picked[0] === picked.length - 1)
        out.plain(values, picked[0], picked.length, kept.window, kept.rows)
      else out.gather(values, picked, skip + count, kept.window, kept.rows)
    } else if (encoding === 'RLE_DICTIONARY' || encoding === 'PLAIN_DICTIONARY') {
      const codes = CODES.take(kept.values.length)
      if (codes.length > 0) gatherHybrid(values, 1, values.length, values[0], kept.values, codes)
      out.fromDictionary(dictionary, codes, kept.window, kept.rows)
    } else if (encoding === 'RLE' && layout.shape.type === 'bool') {
      const bits = BITS.take(upTo)
      const length = viewOf(values).getUint32(0, true)
      decodeHybrid(values, 4, 4 + length, 1, bits, upTo)
      out.bools(gather(bits, kept.values, new Uint8Array(kept.values.length)), kept.window, kept.rows)
    } else {
      throw new UnsupportedPageError(`unsupported encoding ${encoding}`)
    }
  } else if (encoding === 'PLAIN') {
    out.plain(values, skip, count, window, b - a)
  } else if (encoding === 'RLE_DICTIONARY' || encoding === 'PLAIN_DICTIONARY') {
    const indexes = CODES.take(skip + count)
    if (values.length > 0) decodeHybrid(values, 1, values.length, values[0], indexes, skip + count)
    out.fromDictionary(dictionary, indexes.subarray(skip), window, b - a)
  } else if (encoding === 'RLE' && layout.shape.type === 'bool') {
    const bits = BITS.take(skip + count)
    const length = viewOf(values).getUint32(0, true)
    decodeHybrid(values, 4, 4 + length, 1, bits, skip + count)
    out.bools(bits.subarray(skip), window, b - a)
  } else {
    throw new UnsupportedPageError(`unsupported encoding ${encoding}`)
  }
}

/**
 * The rows `keep` lists among a page's rows `[a, b)` (`window`: their definition flags, null
 * when every row is defined): how many, the page-relative indexes of their values (defined
 * rows only; row a's value is `skip`) and their flags. Costs the kept rows, plus the flags
 * up to the last of them when some rows are null, never a pass over the whole page.
 */
function keptRows(
  keep: { rows: Int32Array; base: number },
  window: Uint8Array | null,
  skip: number,
): { rows: number; values: Int32Array; window: Uint8Array | null } {
  const { rows, base } = keep
  const values = KEPT.take(rows.length)
  if (!window) {
    for (let i = 0; i < rows.length; i++) values[i] = skip + rows[i] - base
    return { rows: rows.length, values, window: null }
  }
  const flags = FLAGS.take(rows.length)
  // Each row's value index first, then the kept rows' without a branch: a kept row's flag
  // and the gap to the next one are as good as random in a dense pick, and mispredicted
  // branches were most of this function's time.
  const last = rows[rows.length - 1] - base
  const before = BEFORE.take(last + 1)
  let v = skip
  for (let r = 0; r <= last; r++) {
    before[r] = v
    v += window[r]
  }
  let n = 0
  for (let i = 0; i < rows.length; i++) {
    const at = rows[i] - base
    const defined = window[at]
    flags[i] = defined
    values[n] = before[at]
    n += defined
  }
  return { rows: rows.length, values: values.subarray(0, n), window: flags }
}

/** `out[i] = from[at[i]]`. */
function gather<T extends Int32Array | Uint8Array>(from: T, at: Int32Array, out: T): T {
  for (let i = 0; i < at.length; i++) out[i] = from[at[i]]
  return out
}

/** The PLAIN booleans at `indexes` (ascending) of a page holding `total`, as a PLAIN page of them alone. */
function gatherBits(values: Uint8Array, indexes: Int32Array, total: number): Uint8Array {
  checkHolds(values, total, 1)
  const out = new Uint8Array(Math.ceil(indexes.length / 8))
  indexes.forEach((v, i) => (out[i >> 3] |= ((values[v >> 3] >> (v & 7)) & 1) << (i & 7)))
  return out
}

/**
 * Parquet's RLE / bit-packed hybrid: `count` values of `width` bits from `bytes[start, end)`
 * into `out`. hyparquet's reader takes a byte at a time through a DataView; dictionary codes
 * of every row pass through here, so runs are filled and packed groups unrolled on typed arrays.
 */
export function decodeHybrid(
  bytes: Uint8Array,
  start: number,
  end: number,
  width: number,
  out: Uint8Array | Int32Array,
  count: number,
): void {
  const runs = new HybridRuns(bytes, start, width)
  let seen = 0
  while (seen < count && runs.at < end) {
    runs.next()
    const n = Math.min(runs.count, count - seen)
    if (runs.packed) {
      if (width <= 24) unpackSmall(bytes, runs.at, width, out, seen, n)
      else unpackWide(bytes, runs.at, width, out, seen, n)
      runs.at += (runs.count * width) >> 3
    } else out.fill(runs.value, seen, seen + n)
    seen += n
  }
  if (seen < count) throw new Error(`RLE run ended after ${seen} of ${count} values`)
}

/**
 * `out[j]` = value `at[j]` of an RLE/bit-packed hybrid run sequence (`at` ascending), reading
 * only those values: a bit-packed value is found by its bit offset, so picking a few rows of a
 * page costs the run headers and the picked values, not a decode of every value before them.
 */
export function gatherHybrid(bytes: Uint8Array, start: number, end: number, width: number, at: Int32Array, out: Int32Array): void {
  const runs = new HybridRuns(bytes, start, width)
  let seen = 0
  let j = 0
  while (j < at.length && runs.at < end) {
    runs.next()
    const last = seen + runs.count
    if (runs.packed) {
      for (; j < at.length && at[j] < last; j++) out[j] = packedAt(bytes, runs.at, width, at[j] - seen)
      runs.at += (runs.count * width) >> 3
    } else for (; j < at.length && at[j] < last; j++) out[j] = runs.value
    seen = last
  }
  if (j < at.length) throw new Error(`RLE run ended after ${seen} values, before value ${at[j]}`)
}

/** A cursor over a hybrid's runs: `next()` reads a run's header at `at`, and an RLE run's value. */
class HybridRuns {
  at: number
  /** Values in the run. */
  count = 0
  /** Bit-packed, its values from `at` on; else `value` repeated. */
  packed = false
  value = 0
  private readonly bytes: Uint8Array
  private readonly byteWidth: number
  private readonly mask: number

  constructor(bytes: Uint8Array, start: number, width: number) {
    this.bytes = bytes
    this.at = start
    this.byteWidth = (width + 7) >> 3
    this.mask = width >= 32 ? 0xffffffff : (1 << width) - 1
  }

  next(): void {
    const bytes = this.bytes
    let header = 0
    let shift = 0
    let b: number
    do {
      b = bytes[this.at++]
      header |= (b & 0x7f) << shift
      shift += 7
    } while (b & 0x80)
    this.packed = (header & 1) === 1
    if (this.packed) {
      this.count = (header >>> 1) * 8
      return
    }
    this.count = header >>> 1
    let value = 0
    for (let i = 0; i < this.byteWidth; i++) value |= bytes[this.at++] << (8 * i)
    this.value = value & this.mask
  }
}

/** Value `i` of a bit-packed run starting at byte `p`. */
function packedAt(bytes: Uint8Array, p: number, width: number, i: number): number {
  const bit = i * width
  const first = p + (bit >>> 3)
  const shift = bit & 7
  if (width <= 24) {
    // at most 31 bits span the value: four bytes, shifted down
    let v = 0
    for (let k = 0; 8 * k < shift + width; k++) v |= bytes[first + k] << (8 * k)
    return (v >>> shift) & ((1 << width) - 1)
  }
  let v = 0
  for (let k = 0; 8 * k < shift + width; k++) v += bytes[first + k] * 2 ** (8 * k)
  return Math.floor(v / 2 ** shift) % 2 ** width
}

/** Bit-packed values of at most 24 bits: the accumulator never passes 31 bits. */
function unpackSmall(bytes: Uint8Array, at: number, width: number, out: Uint8Array | Int32Array, seen: number, n: number): void {
  const mask = (1 << width) - 1
  let acc = 0
  let bits = 0
  let p = at
  for (let i = 0; i < n; i++) {
    while (bits < width) {
      acc |= bytes[p++] << bits
      bits += 8
    }
    out[seen + i] = acc & mask
    acc >>>= width
    bits -= width
  }
}

function unpackWide(bytes: Uint8Array, at: number, width: number, out: Uint8Array | Int32Array, seen: number, n: number): void {
  let acc = 0
  let bits = 0
  let p = at
  for (let i = 0; i < n; i++) {
    while (bits < width) {
      acc += (bytes[p++] ?? 0) * 2 ** bits
      bits += 8
    }
    out[seen + i] = acc % 2 ** width
    acc = Math.floor(acc / 2 ** width)
    bits -= width
  }
}

/**
 * `src` and `dst` as 32-bit words, and the words per `w`-byte value, when both allow it
 * (every fixed width here is a multiple of 4, and decoded buffers start aligned): values
 * are then copied a word at a time. Null when a byte copy is needed.
 */
function wordsOf(src: Uint8Array, dst: Uint8Array, w: number): [Uint32Array, Uint32Array, number] | null {
  if (w % 4 !== 0 || src.byteOffset % 4 !== 0 || dst.byteOffset % 4 !== 0) return null
  return [
    new Uint32Array(src.buffer, src.byteOffset, src.length >> 2),
    new Uint32Array(dst.buffer, dst.byteOffset, dst.length >> 2),
    w >> 2,
  ]
}

/** Accumulates decoded rows into the buffers of one vector. */
class Builder implements PageSink {
  readonly shape: VectorShape
  readonly length: number
  filled = 0
  private readonly valid: Uint8Array | null
  private readonly fixed: Uint8Array
  private readonly width: number
  /** Bytes per value of a fixed-width shape. */
  get valueWidth(): number {
    return this.width
  }
  private offsets: Int32Array | null = null
  private data: Uint8Array = new Uint8Array(0)
  private used = 0
  private readonly buffers: VectorBuffers

  constructor(shape: VectorShape, length: number, optional: boolean, memory?: VectorMemory) {
    this.shape = shape
    this.length = length
    this.buffers = new VectorBuffers(memory)
    this.valid = optional ? new Uint8Array(length) : null
    this.width = shape.type === 'fixed' ? shape.width : shape.type === 'binary' ? 0 : PHYSICAL_WIDTH[shape.type]
    this.fixed = this.buffers.alloc((shape.type === 'u64' ? 8 : this.width) * length)
    // A null row's value is never written: lent memory is cleared, so no earlier answer's bytes show through.
    if (optional && this.buffers.lent.length > 0) this.fixed.fill(0)
    if (shape.type === 'binary') {
      this.offsets = new Int32Array(length + 1)
      this.data = this.buffers.alloc(Math.max(64, length * 32))
    }
  }

  /** Marks the `rows` rows from `filled` valid per `window` (every one when it is null). */
  private mark(window: Uint8Array | null, rows: number): void {
    if (this.valid) {
      if (window) this.valid.set(window, this.filled)
      else this.valid.fill(1, this.filled, this.filled + rows)
    }
  }

  /** `count` PLAIN values from `values`, after skipping `skip` values, spread over `rows` rows per `window`. */
  plain(values: Uint8Array, skip: number, count: number, window: Uint8Array | null, rows: number): void {
    this.mark(window, rows)
    const { shape } = this
    if (shape.type === 'binary') {
      const view = viewOf(values)
      let p = 0
      for (let i = 0; i < skip; i++) p = valueEnd(view, values, p)
      const offsets = this.offsets!
      for (let r = 0; r < rows; r++) {
        const row = this.filled + r
        if (window && !window[r]) {
          offsets[row + 1] = this.used
          continue
        }
        const end = valueEnd(view, values, p)
        this.append(values, p + 4, end)
        p = end
        offsets[row + 1] = this.used
      }
    } else if (shape.type === 'bool') {
      checkHolds(values, skip + count, 1)
      for (let r = 0, k = skip; r < rows; r++) {
        if (window && !window[r]) continue
        this.fixed[this.filled + r] = (values[k >> 3] >> (k & 7)) & 1
        k++
      }
    } else {
      const w = this.width
      const target = this.fixed
      checkHolds(values, skip + count, 8 * w)
      if (!window) {
        target.set(values.subarray(skip * w, (skip + count) * w), this.filled * w)
      } else {
        const words = wordsOf(values, target, w)
        if (words) {
          const [src, dst, n] = words
          let k = skip * n
          for (let r = 0; r < rows; r++) {
            if (!window[r]) continue
            const to = (this.filled + r) * n
            copyWords(dst, to, src, k, n)
            k += n
          }
        } else {
          let k = skip * w
          for (let r = 0; r < rows; r++) {
            if (!window[r]) continue
            const to = (this.filled + r) * w
            for (let j = 0; j < w; j++) target[to + j] = values[k + j]
            k += w
          }
        }
      }
    }
    this.filled += rows
  }

  gather(values: Uint8Array, picked: Int32Array, total: number, window: Uint8Array | null, rows: number): void {
    const { shape } = this
    if (shape.type === 'bool') {
      this.plain(gatherBits(values, picked, total), 0, picked.length, window, rows)
      return
    }
    this.mark(window, rows)
    if (shape.type === 'binary') {
      // One pass over the length prefixes up to the last pick, each picked value appended where it is.
      const view = viewOf(values)
      const offsets = this.offsets!
      let p = 0
      let at = 0
      for (let r = 0, k = 0; r < rows; r++) {
        const row = this.filled + r
        if (!window || window[r]) {
          for (const want = picked[k++]; at < want; at++) p = valueEnd(view, values, p)
          const end = valueEnd(view, values, p)
          this.append(values, p + 4, end)
          p = end
          at++
        }
        offsets[row + 1] = this.used
      }
    } else {
      const w = this.width
      checkHolds(values, total, 8 * w)
      const target = this.fixed
      const words = wordsOf(values, target, w)
      if (words) {
        // Whole words (addresses, hashes, u64) of an aligned page (a decompressed one) copied as words.
        const [src, dst, n] = words
        for (let r = 0, k = 0; r < rows; r++) {
          if (window && !window[r]) continue
          const from = picked[k++] * n
          const to = (this.filled + r) * n
          copyWords(dst, to, src, from, n)
        }
      } else if (w % 4 === 0 && target.byteOffset % 4 === 0) {
        // Elsewhere read as words wherever the page put them, straight into place.
        const src = viewOf(values)
        const dst = new Uint32Array(target.buffer, target.byteOffset, target.length >> 2)
        const n = w >> 2
        for (let r = 0, k = 0; r < rows; r++) {
          if (window && !window[r]) continue
          const from = picked[k++] * w
          const to = (this.filled + r) * n
          for (let j = 0; j < n; j++) dst[to + j] = src.getUint32(from + 4 * j, true)
        }
      } else {
        for (let r = 0, k = 0; r < rows; r++) {
          if (window && !window[r]) continue
          const from = picked[k++] * w
          const to = (this.filled + r) * w
          for (let j = 0; j < w; j++) target[to + j] = values[from + j]
        }
      }
    }
    this.filled += rows
  }

  /** Values at `indexes` of `dictionary`, spread over `rows` rows per `window`. */
  fromDictionary(dictionary: Vector | undefined, indexes: Int32Array, window: Uint8Array | null, rows: number): void {
    if (!dictionary) throw new Error('dictionary-encoded page without a dictionary')
    this.mark(window, rows)
    const d = dictionary
    let k = 0
    if (d.type === 'binary') {
      const offsets = this.offsets!
      for (let r = 0; r < rows; r++) {
        const row = this.filled + r
        if (!window || window[r]) {
          const x = indexes[k++]
          this.append(d.bytes, d.offsets[x], d.offsets[x + 1])
        }
        offsets[row + 1] = this.used
      }
    } else {
      const w = this.width
      const src =
        d.type === 'u64'
          ? new Uint8Array(d.values.buffer, d.values.byteOffset, d.values.byteLength)
          : d.type === 'fixed'
            ? d.bytes
            : d.values
      const target = this.fixed
      const words = wordsOf(src, target, w)
      if (words) {
        const [from, to, n] = words
        for (let r = 0; r < rows; r++) {
          if (window && !window[r]) continue
          const a = indexes[k++] * n
          const b = (this.filled + r) * n
          copyWords(to, b, from, a, n)
        }
      } else {
        for (let r = 0; r < rows; r++) {
          if (window && !window[r]) continue
          const a = indexes[k++] * w
          const b = (this.filled + r) * w
          for (let j = 0; j < w; j++) target[b + j] = src[a + j]
        }
      }
    }
    this.filled += rows
  }

  /** Booleans (one per byte) spread over `rows` rows per `window`. */
  bools(bits: Uint8Array, window: Uint8Array | null, rows: number): void {
    this.mark(window, rows)
    for (let r = 0, k = 0; r < rows; r++) {
      if (window && !window[r]) continue
      this.fixed[this.filled + r] = bits[k++]
    }
    this.filled += rows
  }

  /** Appends `src[start, end)`; short values are copied by hand, since a view per value is what this module avoids. */
  private append(src: Uint8Array, start: number, end: number): void {
    const n = end - start
    if (this.used + n > this.data.length) {
      const grown = this.buffers.alloc(Math.max(2 * this.data.length, this.used + n))
      grown.set(this.data.subarray(0, this.used))
      this.data = grown
    }
    if (n > 32) this.data.set(src.subarray(start, end), this.used)
    else for (let i = 0; i < n; i++) this.data[this.used + i] = src[start + i]
    this.used += n
  }

  finish(): Vector {
    return this.buffers.built(this.vector())
  }

  private vector(): Vector {
    const valid = this.valid && this.valid.includes(0) ? this.valid : null
    const length = this.length
    switch (this.shape.type) {
      case 'u64':
        return u64Vector(new BigUint64Array(this.fixed.buffer, this.fixed.byteOffset, length), valid)
      case 'bool':
        return { type: 'bool', length, values: this.fixed, valid }
      case 'fixed':
        return fixedVector(this.width, this.fixed, valid, length)
      case 'binary':
        return { type: 'binary', length, offsets: this.offsets!, bytes: this.data.subarray(0, this.used), valid, text: this.shape.text }
    }
  }
}

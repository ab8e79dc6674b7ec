/**
 * Whether a column chunk is dictionary encoded, and its dictionary and indexes: the decisions
 * and results of hyparquet-writer's `useDictionary` (no size cap), taken faster. It keyed a
 * `Map` by each byte value's object to find a hash already taken; that lookup cost more than
 * hashing 32 bytes again, and an ingest unit's lookup copies sample nearly every value of
 * their 1,024-row groups (12–14 % of a worker's CPU went here, BENCHMARKS.md). Here the
 * sample and the dictionary tell byte values apart by their bytes in an open-addressing table
 * over typed arrays.
 */
import type { DecodedArray, Encoding, ParquetType } from 'hyparquet'
import { estimateValueSize } from 'hyparquet-writer/src/dictionary.js'
import { bytesEqual, rangesEqual } from '../columns/compare.ts'
import { rowEnd, rowStart, type BinaryVector, type FixedVector } from '../columns/vector.ts'
import type { PackedChunk } from './vector-chunk.ts'

/** Sampled distinct bytes past this share of sampled bytes: plain (hyparquet-writer's rule). */
const SAMPLE_REJECTION = 0.9
const SAMPLE_SIZE = 1000

type Value = DecodedArray[number]

/** A chunk's dictionary and each row's index into it (no index for a null), or `{}` for plain pages. */
export function chooseDictionary(
  values: DecodedArray,
  type: ParquetType,
  typeLength: number | undefined,
  encoding: Encoding | undefined,
  required: boolean,
): { dictionary?: Value[]; indexes?: (number | undefined)[] } {
  if (encoding && encoding !== 'RLE_DICTIONARY') return {}
  if (type === 'BOOLEAN') return {}
  const forced = encoding === 'RLE_DICTIONARY'
  const prefix = type === 'BYTE_ARRAY' ? 4 : 0
  if (!forced && !sampleKeeps(values, type, typeLength, prefix)) return {}

  const dictionary: Value[] = []
  const indexes = new Array<number | undefined>(values.length)
  const table = new ByteTable(values.length)
  const seen = new Map<Value, number>()
  const sizes: number[] = []
  let dictSize = 0
  let totalSize = 0
  let nonNull = 0
  let previous: Value | undefined
  let previousIndex = 0
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (value === null || value === undefined) {
      if (required) throw new Error('parquet required value is undefined')
      continue
    }
    nonNull++
    if (value instanceof Uint8Array) {
      totalSize += value.byteLength
      if (value !== previous) {
        const found = table.find(value, dictionary as Uint8Array[])
        if (found >= 0) {
          previousIndex = found
        } else {
          previousIndex = dictionary.length
          dictSize += value.byteLength
          table.insert(previousIndex)
          dictionary.push(value)
        }
        previous = value
      }
      indexes[i] = previousIndex
    } else {
      let index = seen.get(value)
      if (index === undefined) {
        const size = estimateValueSize(value, type, typeLength)
        index = dictionary.length
        dictionary.push(value)
        sizes.push(size)
        seen.set(value, index)
        dictSize += size
      }
      totalSize += sizes[index]
      indexes[i] = index
    }
  }
  if (!forced && !dictionaryPays(dictionary.length, dictSize, nonNull, totalSize, prefix)) return {}
  return { dictionary, indexes }
}

/** A dictionary and its bit-packed indexes must at least halve the plain bytes (as in hyparquet-writer, formula and all). */
function dictionaryPays(entries: number, dictSize: number, nonNull: number, totalSize: number, prefix: number): boolean {
  const bitWidth = Math.ceil(Math.log2(entries))
  const indexSize = Math.ceil((nonNull * bitWidth) / 8)
  return 2 * (dictSize + entries * prefix + indexSize) <= totalSize + nonNull * prefix
}

/**
 * The sample's verdict: up to 1,000 values spread over the chunk, whether distinct bytes are at
 * most 90 % of their bytes. Byte values are told apart by their bytes (`ByteTable`, which hashes
 * at most 64 of them): hyparquet-writer keys each by an FNV-1a hash of all its bytes, so only two
 * different sampled values of equal hash (a 32-bit collision) could count otherwise, and calldata
 * and log data, mostly distinct, are no longer hashed whole.
 */
function sampleKeeps(values: DecodedArray, type: ParquetType, typeLength: number | undefined, prefix: number): boolean {
  const n = Math.min(values.length, SAMPLE_SIZE)
  const table = new ByteTable(n)
  const seen: Uint8Array[] = []
  const sizes = new Map<unknown, number>()
  let distinct = 0
  let total = 0
  for (let i = 0; i < n; i++) {
    const value = values[n === 1 ? 0 : Math.floor((i * (values.length - 1)) / (n - 1))]
    let size: number
    if (value instanceof Uint8Array) {
      size = estimateValueSize(value, type, typeLength) + prefix
      if (table.find(value, seen) < 0) {
        table.insert(seen.length)
        seen.push(value)
        distinct += size
      }
    } else {
      let known = sizes.get(value)
      if (known === undefined) {
        known = estimateValueSize(value, type, typeLength) + (value === null || value === undefined ? 0 : prefix)
        sizes.set(value, known)
        distinct += known
      }
      size = known
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECTION
}

/**
 * Open addressing over one array of slots that every table shares (a chunk's sample's, then its
 * dictionary's: never two at once); a chunk's own would be array-buffer memory, thousands of them
 * a unit. A slot holds an entry's index, -1 when empty.
 */
abstract class SlotTable {
  private static shared = new Int32Array(0)
  protected readonly slots: Int32Array
  protected readonly mask: number
  protected slot = 0

  constructor(values: number) {
    let size = 16
    while (size < values * 2) size *= 2
    if (SlotTable.shared.length < size) SlotTable.shared = new Int32Array(size)
    this.slots = SlotTable.shared.subarray(0, size).fill(-1)
    this.mask = size - 1
  }

  /** Puts `index` where the last `find`, which missed, ended. */
  insert(index: number): void {
    this.slots[this.slot] = index
  }
}

/** Byte values → dictionary index, equal bytes one entry. */
class ByteTable extends SlotTable {
  /** The index of `value`'s bytes, or -1, leaving the slot where `insert` puts them. */
  find(value: Uint8Array, dictionary: Uint8Array[]): number {
    let s = tableHash(value, null, 0, value.length) & this.mask
    for (let d = this.slots[s]; d >= 0; d = this.slots[s]) {
      if (bytesEqual(dictionary[d], value)) return d
      s = (s + 1) & this.mask
    }
    this.slot = s
    return -1
  }
}

/**
 * The rows of one packed byte chunk → entry, equal bytes one entry; an entry is named by a row
 * that holds it. Where the buffer is 4-byte aligned, values are read and compared a 32-bit word
 * at a time (a hash or an address is 8 or 5 words, not 32 or 20 bytes).
 */
class RangeTable extends SlotTable {
  private readonly v: FixedVector | BinaryVector
  private readonly words: Uint32Array | null

  constructor(values: number, v: FixedVector | BinaryVector) {
    super(values)
    this.v = v
    const { bytes } = v
    this.words = bytes.byteOffset % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2) : null
  }

  /** The entry of row `i`'s value (of the rows `rows` names), or -1, leaving the slot where `insert` puts it. */
  find(i: number, rows: readonly number[]): number {
    const { v, words } = this
    const { bytes } = v
    const start = rowStart(v, i)
    const n = rowEnd(v, i) - start
    let s = tableHash(bytes, words, start, start + n) & this.mask
    for (let d = this.slots[s]; d >= 0; d = this.slots[s]) {
      const r = rows[d]
      const at = rowStart(v, r)
      if (
        rowEnd(v, r) - at === n &&
        (words !== null && ((at | start) & 3) === 0 ? wordsEqual(bytes, words, at, start, n) : rangesEqual(bytes, at, bytes, start, n))
      )
        return d
      s = (s + 1) & this.mask
    }
    this.slot = s
    return -1
  }
}

/** u64 values (a packed chunk's words) → entry, equal values one entry; each entry keeps a row holding it. */
class WordTable extends SlotTable {
  private readonly rows: number[] = []

  /** The entry of row `i`'s value, or -1, leaving the slot where `insert` puts it. */
  find(words: Uint32Array, i: number): number {
    const lo = words[2 * i]
    const hi = words[2 * i + 1]
    let s = (Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> 0) & this.mask
    for (let d = this.slots[s]; d >= 0; d = this.slots[s]) {
      const r = this.rows[d]
      if (words[2 * r] === lo && words[2 * r + 1] === hi) return d
      s = (s + 1) & this.mask
    }
    this.slot = s
    return -1
  }

  /** Puts entry `index`, held by row `row`, where the last `find`, which missed, ended. */
  add(index: number, row: number): void {
    this.insert(index)
    this.rows[index] = row
  }
}

/**
 * The tables' hash of `bytes[start, end)`: at most its first and last 32 bytes and its length
 * (equality is checked in full), mixed four bytes at a time; `words` is the buffer as 32-bit
 * words when it is 4-byte aligned (the hash only spreads the slots).
 */
function tableHash(bytes: Uint8Array, words: Uint32Array | null, start: number, end: number): number {
  const n = end - start
  let h = Math.imul(0x811c9dc5 ^ n, 0x01000193)
  const head = start + Math.min(n, 32)
  h = mixWords(h, bytes, words, start, head)
  h = mixWords(h, bytes, words, Math.max(head, end - 32), end)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  return (h ^ (h >>> 13)) >>> 0
}

/**
 * `h` with `bytes[from, to)` mixed in as little-endian 32-bit words from `from` on, then the bytes
 * left: equal bytes mix alike wherever they lie (loaded whole when `from` is aligned and `words` given).
 */
function mixWords(h: number, bytes: Uint8Array, words: Uint32Array | null, from: number, to: number): number {
  let i = from
  if (words !== null && (i & 3) === 0) for (; i + 4 <= to; i += 4) h = Math.imul((h << 5) ^ (h >>> 27) ^ words[i >> 2], 0x9e3779b1)
  else {
    for (; i + 4 <= to; i += 4) {
      const w = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)
      h = Math.imul((h << 5) ^ (h >>> 27) ^ w, 0x9e3779b1)
    }
  }
  for (; i < to; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return h
}

/** `rangesEqual` of `bytes[a, a + n)` and `bytes[b, b + n)`, both 4-byte aligned: the odd bytes at the end, then whole words from the end. */
function wordsEqual(bytes: Uint8Array, words: Uint32Array, a: number, b: number, n: number): boolean {
  const whole = n & ~3
  for (let i = n - 1; i >= whole; i--) if (bytes[a + i] !== bytes[b + i]) return false
  const wa = a >> 2
  const wb = b >> 2
  for (let i = (whole >> 2) - 1; i >= 0; i--) if (words[wa + i] !== words[wb + i]) return false
  return true
}

/**
 * `chooseDictionary` over a packed chunk: the same verdicts, dictionary order and indexes, with
 * each dictionary entry named by the first row that holds it. Values are hashed and compared
 * where they lie, so a 1,024-row group of a lookup copy costs no view or BigInt a value.
 */
export function chooseVectorDictionary(
  v: PackedChunk,
  type: ParquetType,
  typeLength: number | undefined,
  encoding: Encoding | undefined,
  required: boolean,
): { dictionary?: number[]; indexes?: (number | undefined)[] | Int32Array } {
  if (encoding && encoding !== 'RLE_DICTIONARY') return {}
  if (required && v.valid !== null && v.valid.includes(0)) throw new Error('parquet required value is undefined')
  const forced = encoding === 'RLE_DICTIONARY'
  const prefix = type === 'BYTE_ARRAY' ? 4 : 0
  if (!forced && !vectorSampleKeeps(v, type, typeLength, prefix)) return {}

  const n = v.length
  const dictionary: number[] = []
  // without nulls, typed: each page's indexes are then a view of them, not a copy
  const indexes = v.valid === null ? new Int32Array(n) : new Array<number | undefined>(n)
  let dictSize = 0
  let totalSize = 0
  let nonNull = 0
  if (v.type === 'u64') {
    const table = new WordTable(n)
    for (let i = 0; i < n; i++) {
      if (v.valid !== null && v.valid[i] === 0) continue
      nonNull++
      const found = table.find(v.words, i)
      if (found >= 0) indexes[i] = found
      else {
        indexes[i] = dictionary.length
        table.add(dictionary.length, i)
        dictionary.push(i)
        dictSize += 8
      }
      totalSize += 8
    }
  } else {
    const table = new RangeTable(n, v)
    for (let i = 0; i < n; i++) {
      if (v.valid !== null && v.valid[i] === 0) continue
      nonNull++
      const size = rowEnd(v, i) - rowStart(v, i)
      const found = table.find(i, dictionary)
      totalSize += size
      if (found >= 0) indexes[i] = found
      else {
        indexes[i] = dictionary.length
        dictSize += size
        table.insert(dictionary.length)
        dictionary.push(i)
      }
    }
  }
  if (!forced && !dictionaryPays(dictionary.length, dictSize, nonNull, totalSize, prefix)) return {}
  return { dictionary, indexes }
}

/** `sampleKeeps` over a packed chunk: the same rows sampled, bytes told apart where they lie, integers by value; a null counts nothing. */
function vectorSampleKeeps(v: PackedChunk, type: ParquetType, typeLength: number | undefined, prefix: number): boolean {
  const length = v.length
  const n = Math.min(length, SAMPLE_SIZE)
  const words = v.type === 'u64' ? new WordTable(n) : undefined
  const bytes = v.type === 'u64' ? undefined : new RangeTable(n, v)
  const seen: number[] = []
  let distinct = 0
  let total = 0
  for (let k = 0; k < n; k++) {
    const i = n === 1 ? 0 : Math.floor((k * (length - 1)) / (n - 1))
    if (v.valid !== null && v.valid[i] === 0) continue
    if (v.type === 'u64') {
      if (words!.find(v.words, i) < 0) {
        words!.add(k, i)
        distinct += 8
      }
      total += 8
      continue
    }
    const size = (type === 'FIXED_LEN_BYTE_ARRAY' ? (typeLength ?? 0) : rowEnd(v, i) - rowStart(v, i)) + prefix
    if (bytes!.find(i, seen) < 0) {
      bytes!.insert(seen.length)
      seen.push(i)
      distinct += size
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECTION
}

/** The first row of each distinct non-null value among rows [start, end) of a byte column, in row order (a chunk's bloom filter hashes each once). */
export function distinctRows(v: FixedVector | BinaryVector, start: number, end: number): number[] {
  const table = new RangeTable(end - start, v)
  const rows: number[] = []
  for (let i = start; i < end; i++) {
    if (v.valid !== null && v.valid[i] === 0) continue
    if (table.find(i, rows) < 0) {
      table.insert(rows.length)
      rows.push(i)
    }
  }
  return rows
}

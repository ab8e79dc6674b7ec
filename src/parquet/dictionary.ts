/**
 * Whether a column chunk is dictionary encoded, and its dictionary and indexes: the decisions
 * and results of hyparquet-writer's `useDictionary` (no size cap), taken faster. It keyed a
 * `Map` by each byte value's object to find a hash already taken; that lookup cost more than
 * hashing 32 bytes again, and an ingest unit's lookup copies sample nearly every value of
 * their 1,024-row groups (12–14 % of a worker's CPU went here, BENCHMARKS.md). Here the
 * sample hashes each value (FNV-1a, as there, since colliding values count once in the
 * sample's estimate), and the dictionary of byte values is an open-addressing table over
 * typed arrays.
 */
import type { DecodedArray, Encoding, ParquetType } from 'hyparquet'
import { estimateValueSize } from 'hyparquet-writer/src/dictionary.js'
import { bytesEqual } from '../columns/compare.ts'

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
  // A dictionary and its bit-packed indexes must at least halve the plain bytes (as there, formula and all).
  const bitWidth = Math.ceil(Math.log2(dictionary.length))
  const indexSize = Math.ceil((nonNull * bitWidth) / 8)
  const plainSize = totalSize + nonNull * prefix
  const dictionaryValueSize = dictSize + dictionary.length * prefix
  if (!forced && 2 * (dictionaryValueSize + indexSize) > plainSize) return {}
  return { dictionary, indexes }
}

/** The sample's verdict: up to 1,000 values spread over the chunk, whether distinct bytes are at most 90 % of their bytes. */
function sampleKeeps(values: DecodedArray, type: ParquetType, typeLength: number | undefined, prefix: number): boolean {
  const n = Math.min(values.length, SAMPLE_SIZE)
  const hashes = SampleTable.reset()
  const sizes = new Map<unknown, number>()
  let distinct = 0
  let total = 0
  for (let i = 0; i < n; i++) {
    const value = values[n === 1 ? 0 : Math.floor((i * (values.length - 1)) / (n - 1))]
    let size: number
    if (value instanceof Uint8Array) {
      const slot = hashes.slot(fnv1a(value))
      size = hashes.sizes[slot]
      if (size < 0) {
        size = hashes.sizes[slot] = estimateValueSize(value, type, typeLength) + prefix
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

/** The sample's byte values by hash (as hyparquet-writer keys them), each with the size of its first: one table for every chunk. */
class SampleTable {
  private static table = new SampleTable()
  readonly keys = new Uint32Array(1 << 12)
  readonly sizes = new Int32Array(1 << 12)

  static reset(): SampleTable {
    SampleTable.table.sizes.fill(-1)
    return SampleTable.table
  }

  /** The slot of `hash`: its own, or the empty one (size -1) where it goes. */
  slot(hash: number): number {
    const mask = this.keys.length - 1
    let s = Math.imul(hash, 0x9e3779b1) >>> 20 // the top 12 bits
    while (this.sizes[s] >= 0 && this.keys[s] !== hash) s = (s + 1) & mask
    this.keys[s] = hash
    return s
  }
}

/** FNV-1a of the bytes: the sample's key, as hyparquet-writer takes it. */
function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return h >>> 0
}

/**
 * Byte values → dictionary index, open addressing, equal bytes one entry. One array of slots
 * serves every chunk (a chunk's own would be array-buffer memory, thousands of them a unit).
 */
class ByteTable {
  private static shared = new Int32Array(0)
  private readonly slots: Int32Array
  private readonly mask: number
  private slot = 0

  constructor(values: number) {
    let size = 16
    while (size < values * 2) size *= 2
    if (ByteTable.shared.length < size) ByteTable.shared = new Int32Array(size)
    this.slots = ByteTable.shared.subarray(0, size).fill(-1)
    this.mask = size - 1
  }

  /** The index of `value`'s bytes, or -1, leaving the slot where `insert` puts them. */
  find(value: Uint8Array, dictionary: Uint8Array[]): number {
    let s = tableHash(value) & this.mask
    for (let d = this.slots[s]; d >= 0; d = this.slots[s]) {
      if (bytesEqual(dictionary[d], value)) return d
      s = (s + 1) & this.mask
    }
    this.slot = s
    return -1
  }

  /** Puts `index` where the last `find`, which missed, ended. */
  insert(index: number): void {
    this.slots[this.slot] = index
  }
}

/** The table's hash: FNV-1a of at most the first and last 32 bytes and the length (equality is checked in full). */
function tableHash(bytes: Uint8Array): number {
  const n = bytes.length
  let h = Math.imul(0x811c9dc5 ^ n, 0x01000193)
  const head = Math.min(n, 32)
  for (let i = 0; i < head; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  for (let i = Math.max(head, n - 32); i < n; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return (h ^ (h >>> 15)) >>> 0
}

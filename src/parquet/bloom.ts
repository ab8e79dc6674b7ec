/**
 * Bloom filters with a faster hash. hyparquet-writer hashes every value with hyparquet's
 * xxhash64 in BigInt arithmetic, about 4 µs per 32-byte value: on a mainnet block (about
 * 2,000 bloom-filtered values) the largest single cost of writing Parquet. The Node
 * ingester gives `writePartition` xxhash-wasm's xxhash64 instead (`wasmXxhash64`, about
 * 0.3 µs), and `bloomFilterOf` builds each column chunk's filter exactly as
 * hyparquet-writer's BloomBuilder does (same distinct hashes, size and bits), so the
 * partition's bytes do not depend on which hash ran (test/parquet/bloom.test.ts).
 * xxhash-wasm compiles its module from bytes at run time, which production workerd
 * refuses: the Worker keeps the writer's own hashing.
 */
import type { SchemaElement } from 'hyparquet'
import { rowEnd, rowStart, type BinaryVector, type FixedVector } from '../columns/vector.ts'
import { hashParquetValue } from 'hyparquet/src/bloom.js'
import { optimalNumBytes, sbbfInsert } from 'hyparquet-writer/src/bloom.js'

/** xxhash64 with seed 0 of a value's bytes, as Parquet bloom filters hash a byte-array value. */
export type Hash64 = (bytes: Uint8Array) => bigint

/** BloomBuilder's defaults: one 32-byte block at least, 1 MiB at most. */
const MIN_BYTES = 32
const MAX_BYTES = 1024 * 1024

/** xxhash-wasm's xxhash64 (Node: it compiles its module from bytes). */
export async function wasmXxhash64(): Promise<Hash64> {
  const { default: xxhash } = await import('xxhash-wasm')
  const { h64Raw } = await xxhash()
  return bytes => h64Raw(bytes, 0n)
}

/**
 * The Split Block Bloom Filter of one column chunk's values, as BloomBuilder builds it;
 * undefined where it writes none (no value, or a value the column cannot hash). A
 * byte-array value goes through `hash` when hyparquet would hash its bytes as they are
 * (what a probe with an empty value tells); anything else through hyparquet's own
 * hashing. A value that is the same object (or primitive) as the one before it is not
 * hashed again: transformed rows share one array for a repeated hash or address.
 */
export function bloomFilterOf(values: ArrayLike<unknown>, element: SchemaElement, fpp: number, hash: Hash64): Uint32Array | undefined {
  const bytesHashed = hashesBytes(element)
  const hashes = new Set<bigint>()
  let previous: unknown = undefined
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (value === null || value === undefined || value === previous) continue
    previous = value
    const h = bytesHashed && value instanceof Uint8Array ? hash(value) : hashParquetValue(value, element)
    if (h === undefined) return undefined
    hashes.add(h)
  }
  return filterOf(hashes, fpp)
}

/**
 * `bloomFilterOf` for the values of a packed byte column at `rows` (`distinctRows`: the first
 * row of each distinct value), hashed where they lie: the same filter, since equal values hash
 * alike, with a hash a distinct value where the chunk's values had a view and a hash each.
 */
export function vectorBloomFilter(
  v: FixedVector | BinaryVector,
  rows: readonly number[],
  element: SchemaElement,
  fpp: number,
  hash: Hash64,
): Uint32Array | undefined {
  if (!hashesBytes(element)) return undefined // as there: a value the column cannot hash writes no filter
  const hashes = new Set<bigint>()
  for (const r of rows) hashes.add(hash(v.bytes.subarray(rowStart(v, r), rowEnd(v, r))))
  return filterOf(hashes, fpp)
}

/** Whether hyparquet hashes a byte value of this column as it is (what a probe with an empty value tells). */
const hashesBytes = (element: SchemaElement): boolean => hashParquetValue(new Uint8Array(element.type_length ?? 0), element) !== undefined

/** BloomBuilder's filter of these distinct hashes: none for none, or when it would pass 1 MiB. */
function filterOf(hashes: ReadonlySet<bigint>, fpp: number): Uint32Array | undefined {
  if (!hashes.size) return undefined
  let numBytes = optimalNumBytes(hashes.size, fpp)
  while (numBytes > MAX_BYTES && numBytes > MIN_BYTES) numBytes >>= 1
  if (numBytes > MAX_BYTES) return undefined
  const blocks = new Uint32Array(numBytes >> 2)
  for (const h of hashes) sbbfInsert(blocks, h)
  return blocks
}

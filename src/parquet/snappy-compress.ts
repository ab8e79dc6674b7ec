/**
 * Snappy compression of a page into a buffer the caller reuses: the same bytes as
 * hyparquet-writer's `snappyCompress` (snappyjs's compressor, MIT, Copyright (c) 2016 Zhipeng
 * Jia), which returns each page in a writer of its own, grown by doubling from 1 KiB. Those
 * buffers were most of the array-buffer memory an ingest unit allocated, and array-buffer
 * memory growing is what started most of its full collections (src/ingest/README.md, Memory).
 * Its input is read four bytes at a time through a DataView (hash keys, the match test, match
 * extension) rather than assembled byte by byte, and short literals are copied without a view:
 * the same matches and bytes, 2–2.7× faster on an ingest unit's pages (BENCHMARKS.md).
 */
import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js'

const MAX_HASH_TABLE_BITS = 14
const MAX_OFFSET = 0xffff
const INPUT_MARGIN = 15
const tables: Uint32Array[] = []

/** Appends `input` compressed (its length as a varint, then the elements) to `out`. */
export function snappyInto(out: ByteWriter, input: Uint8Array): void {
  const n = input.length
  out.ensure(32 + n + Math.ceil(n / 6))
  const dst = new Uint8Array(out.buffer)
  let op = out.index
  for (let v = n; ; v >>>= 7) {
    if ((v & ~0x7f) === 0) {
      dst[op++] = v
      break
    }
    dst[op++] = (v & 0x7f) | 0x80
  }
  op = compress(input, dst, op)
  out.offset += op - out.index
  out.index = op
}

const hashOf = (key: number, shift: number): number => Math.imul(key, 0x1e35a7bd) >>> shift

function literal(dst: Uint8Array, op: number, input: Uint8Array, ip: number, len: number): number {
  if (len <= 60) {
    dst[op++] = (len - 1) << 2
  } else {
    const value = len - 1
    const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4
    dst[op++] = (59 + bytes) << 2
    for (let i = 0; i < bytes; i++) dst[op++] = value >>> (i * 8)
  }
  if (len > 32) dst.set(input.subarray(ip, ip + len), op)
  else for (let k = 0; k < len; k++) dst[op + k] = input[ip + k]
  return op + len
}

function copyLessThan64(dst: Uint8Array, op: number, offset: number, len: number): number {
  if (len < 12 && offset < 2048) {
    dst[op++] = 1 + ((len - 4) << 2) + ((offset >>> 8) << 5)
    dst[op++] = offset & 0xff
  } else {
    dst[op++] = 2 + ((len - 1) << 2)
    dst[op++] = offset & 0xff
    dst[op++] = offset >>> 8
  }
  return op
}

function copy(dst: Uint8Array, op: number, offset: number, len: number): number {
  while (len >= 68) {
    op = copyLessThan64(dst, op, offset, 64)
    len -= 64
  }
  if (len > 64) {
    op = copyLessThan64(dst, op, offset, 60)
    len -= 60
  }
  return copyLessThan64(dst, op, offset, len)
}

/** snappyjs's `compressInput`, emitting into `dst` from `op`; returns where it ended. */
function compress(input: Uint8Array, dst: Uint8Array, op: number): number {
  const size = input.length
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength)
  let bits = 1
  while (1 << bits <= size && bits <= MAX_HASH_TABLE_BITS) bits++
  bits--
  const shift = 32 - bits
  const table = (tables[bits] ??= new Uint32Array(1 << bits))
  table.fill(0)

  let ip = 0
  let nextEmit = 0
  if (size >= INPUT_MARGIN) {
    const ipLimit = size - INPUT_MARGIN
    ip++
    let nextWord = view.getInt32(ip, true)
    outer: for (;;) {
      let skip = 32
      let nextIp = ip
      let candidate: number
      let word: number
      do {
        ip = nextIp
        word = nextWord
        const hash = hashOf(word, shift)
        const step = skip >>> 5
        skip++
        nextIp = ip + step
        if (ip > ipLimit) break outer
        // past the limit the next turn ends the search before it reads the word
        nextWord = nextIp <= ipLimit ? view.getInt32(nextIp, true) : 0
        candidate = table[hash]
        table[hash] = ip
      } while (ip - candidate > MAX_OFFSET || view.getInt32(candidate, true) !== word)

      op = literal(dst, op, input, nextEmit, ip - nextEmit)
      let w = 0
      do {
        const base = ip
        let matched = 4
        while (ip + matched + 4 <= size && view.getInt32(ip + matched, true) === view.getInt32(candidate + matched, true)) matched += 4
        while (ip + matched < size && input[ip + matched] === input[candidate + matched]) matched++
        ip += matched
        op = copy(dst, op, base - candidate, matched)
        nextEmit = ip
        if (ip >= ipLimit) break outer
        table[hashOf(view.getInt32(ip - 1, true), shift)] = ip - 1
        w = view.getInt32(ip, true)
        const current = hashOf(w, shift)
        candidate = table[current]
        table[current] = ip
      } while (ip - candidate <= MAX_OFFSET && view.getInt32(candidate, true) === w)
      ip++
      nextWord = view.getInt32(ip, true)
    }
  }
  if (nextEmit < size) op = literal(dst, op, input, nextEmit, size - nextEmit)
  return op
}

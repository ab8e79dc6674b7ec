/** The chunked writer partitions are written into: the same bytes as hyparquet-writer's ByteWriter, read back across its chunks. */
import { ByteWriter } from 'hyparquet-writer'
import { describe, expect, it } from 'vitest'
import { CHUNK_BYTES, ChunkedWriter } from '../../src/parquet/chunked-writer.ts'
import { rng } from '../query/lake.ts'

/** Byte-for-byte equality without vitest's element-by-element diff (megabytes here). */
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0

/** The same random appends into both writers: bytes of many sizes (some past a chunk), integers, varints. */
function writeBoth(seed: number, appends: number): [ChunkedWriter, ByteWriter] {
  const random = rng(seed)
  const chunked = new ChunkedWriter(16)
  const plain = new ByteWriter()
  for (let i = 0; i < appends; i++) {
    const pick = random()
    const size = pick < 0.02 ? CHUNK_BYTES + Math.floor(random() * 1000) : Math.floor(random() * (pick < 0.5 ? 40 : 5000))
    const bytes = new Uint8Array(size).fill(i & 255)
    bytes[0] = pick * 256
    const n = Math.floor(random() * 2 ** 31)
    for (const w of [chunked, plain]) {
      if (pick < 0.7) w.appendBytes(bytes)
      else if (pick < 0.8) w.appendUint32(n)
      else if (pick < 0.9) w.appendVarInt(n)
      else w.appendUint8(n & 255)
    }
  }
  return [chunked, plain]
}

describe('ChunkedWriter', () => {
  it('gives the bytes a ByteWriter gives for the same appends, in a buffer of exactly their size', () => {
    for (const seed of [1, 2, 3]) {
      const [chunked, plain] = writeBoth(seed, 400)
      const bytes = chunked.getBytes()
      expect(chunked.offset).toBe(plain.offset)
      expect(bytes.buffer.byteLength).toBe(plain.offset)
      expect(same(bytes, plain.getBytes())).toBe(true)
      expect(same(new Uint8Array(chunked.getBuffer()), plain.getBytes())).toBe(true)
    }
  })

  it('reads any range back, within a chunk or across several, and refuses bytes not written', () => {
    const [chunked, plain] = writeBoth(4, 300)
    const all = plain.getBytes()
    const random = rng(5)
    for (let i = 0; i < 500; i++) {
      const offset = Math.floor(random() * all.length)
      const length = Math.floor(random() * Math.min(all.length - offset, i % 2 ? 64 : 3 * CHUNK_BYTES))
      expect(same(chunked.read(offset, length), all.subarray(offset, offset + length))).toBe(true)
    }
    expect(same(chunked.read(0, all.length), all)).toBe(true)
    expect(() => chunked.read(all.length - 4, 8)).toThrow(RangeError)
    expect(() => chunked.read(-1, 2)).toThrow(RangeError)
  })

  it('gives no bytes when nothing was written', () => {
    expect(new ChunkedWriter().getBytes().length).toBe(0)
  })
})

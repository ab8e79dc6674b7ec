/** The chunked writer partitions are written into: the same bytes as hyparquet-writer's ByteWriter, its chunks reused once released. */
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

  it('hands its full-size chunks to the next writers once released, and the bytes it gave stay as they were', () => {
    const [first, plain] = writeBoth(4, 300)
    const bytes = first.getBytes()
    first.release()
    // a writer whose one chunk is exactly full gives that chunk away: it must not be handed on
    const exact = new ChunkedWriter(CHUNK_BYTES)
    exact.appendBytes(new Uint8Array(CHUNK_BYTES).fill(7))
    const given = exact.getBytes()
    exact.release()
    const [second] = writeBoth(6, 300)
    const again = second.getBytes()
    second.release()
    expect(same(bytes, plain.getBytes())).toBe(true)
    expect(given.every(b => b === 7)).toBe(true)
    expect(same(again, writeBoth(6, 300)[1].getBytes())).toBe(true)
  })

  it('gives no bytes when nothing was written', () => {
    expect(new ChunkedWriter().getBytes().length).toBe(0)
  })
})

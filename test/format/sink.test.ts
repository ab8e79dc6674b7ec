import { describe, expect, it } from 'vitest'
import { ByteSink, CHUNK_SIZE, LARGE_CHUNK_SIZE } from '../../src/format/sink.ts'

/** `n` bytes of a pattern, written 100 bytes at a time. */
function write(sink: ByteSink, n: number): Uint8Array {
  const all = Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) & 255)
  for (let at = 0; at < n; at += 100) sink.bytes(all.subarray(at, Math.min(n, at + 100)))
  return all
}

describe('ByteSink', () => {
  it('writes its own chunks in a buffer of CHUNK_SIZE, then of LARGE_CHUNK_SIZE, the bytes unchanged', () => {
    const sink = new ByteSink()
    const all = write(sink, 6 * LARGE_CHUNK_SIZE)
    const chunks = sink.flush()
    expect(Buffer.concat(chunks).equals(Buffer.from(all))).toBe(true)
    // Each chunk is its buffer, cut once the next write did not fit.
    const sizes = chunks.slice(0, -1).map(c => c.buffer.byteLength)
    expect(chunks.slice(0, -1).every(c => c.length > c.buffer.byteLength - 100)).toBe(true)
    expect(sizes).toEqual([CHUNK_SIZE, ...sizes.slice(1).map(() => LARGE_CHUNK_SIZE)])
    expect(sizes.length).toBe(6)
  })

  it('keeps to the buffers a chunk source gives, whatever the answer size', () => {
    const given: Uint8Array[] = []
    const sink = new ByteSink(CHUNK_SIZE, () => {
      given.push(new Uint8Array(CHUNK_SIZE))
      return given[given.length - 1]
    })
    const all = write(sink, 3 * LARGE_CHUNK_SIZE)
    const chunks = sink.flush()
    expect(Buffer.concat(chunks).equals(Buffer.from(all))).toBe(true)
    const buffers = new Set(given.map(g => g.buffer))
    expect(chunks.length).toBeGreaterThan(3 * (LARGE_CHUNK_SIZE / CHUNK_SIZE) - 1)
    expect(chunks.slice(0, -1).every(c => buffers.has(c.buffer as ArrayBuffer))).toBe(true)
  })

  it('hands a small answer out as a copy and writes on in the same first buffer', () => {
    const sink = new ByteSink()
    const first = write(sink, 1000)
    const [chunk] = sink.flush()
    expect(Buffer.from(chunk).equals(Buffer.from(first))).toBe(true)
    expect(chunk.buffer.byteLength).toBe(1000)
    write(sink, 2000)
    expect(sink.buf.length).toBe(CHUNK_SIZE)
  })
})

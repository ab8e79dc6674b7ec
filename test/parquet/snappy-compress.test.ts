/** `snappyInto` writes hyparquet-writer's `snappyCompress` bytes, appended to what its writer holds. */
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js'
import { snappyCompress } from 'hyparquet-writer/src/snappy.js'
import { snappyUncompress } from 'hyparquet'
import { describe, expect, it } from 'vitest'
import { snappyInto } from '../../src/parquet/snappy-compress.ts'
import { rng } from '../query/lake.ts'

/** Inputs from incompressible to runs: bytes drawn from `alphabet` symbols, in runs of up to `run`. */
function input(r: () => number, length: number, alphabet: number, run: number): Uint8Array {
  const out = new Uint8Array(length)
  for (let i = 0; i < length;) {
    const v = Math.floor(r() * alphabet)
    for (let k = Math.ceil(r() * run); k > 0 && i < length; k--) out[i++] = v
  }
  return out
}

describe('snappyInto', () => {
  it('writes the bytes snappyCompress returns, after what the writer holds', () => {
    const r = rng(5)
    const out = new ByteWriter()
    for (const length of [0, 1, 4, 14, 15, 16, 61, 300, 8192, 70_000, 200_000]) {
      for (const [alphabet, run] of [
        [256, 1],
        [4, 1],
        [256, 40],
        [1, 1],
      ]) {
        const data = input(r, length, alphabet, run)
        const expected = snappyCompress(data)
        const before = out.offset
        out.appendUint8(0xee)
        snappyInto(out, data)
        const written = out.getBytes().subarray(before + 1)
        expect(Buffer.compare(written, expected), `${length} bytes, ${alphabet} symbols, runs of ${run}`).toBe(0)
        const back = new Uint8Array(length)
        snappyUncompress(written, back)
        expect(Buffer.compare(back, data)).toBe(0)
      }
    }
  })

  it('reads an input that starts anywhere in its buffer', () => {
    // the compressor reads words through a DataView over the input's own bytes
    const r = rng(6)
    const whole = input(r, 70_000, 4, 3)
    for (const start of [1, 3, 4097]) {
      const data = whole.subarray(start, start + 60_000)
      const out = new ByteWriter()
      snappyInto(out, data)
      expect(Buffer.compare(out.getBytes(), snappyCompress(data.slice()))).toBe(0)
    }
  })
})

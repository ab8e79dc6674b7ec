import { snappyUncompress } from 'hyparquet'
import { snappyCompress } from 'hyparquet-writer/src/snappy.js'
import { describe, expect, it } from 'vitest'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { wasmSnappy } from '../../src/parquet/snappy.ts'
import snappyModule from '../../src/parquet/snappy.wasm'

/** Compressible bytes: runs of a few symbols with random noise, like Parquet pages. */
function sample(seed: number, length: number): Uint8Array {
  const r = mulberry32(seed)
  return Uint8Array.from({ length }, (_, i) => (r() < 0.2 ? Math.floor(r() * 256) : (i >> 5) & 7))
}

/** Incompressible bytes, like hashes: all literals. */
function random(seed: number, length: number): Uint8Array {
  const r = mulberry32(seed)
  return Uint8Array.from({ length }, () => Math.floor(r() * 256))
}

describe('wasmSnappy (the Worker decompressor, compiled at deploy time)', () => {
  const snappy = wasmSnappy(snappyModule)

  it('decompresses what a snappy compressor wrote, as hyparquet does, across memory growth', () => {
    for (const [seed, length, kind] of [
      [1, 0],
      [2, 1],
      [3, 8192],
      [4, 300_000],
      [5, 3_000_000],
      [6, 100],
      [8, 200_000, 'random'],
    ] as const) {
      const input = kind === 'random' ? random(seed, length) : sample(seed, length)
      const packed = snappyCompress(input)
      if (kind !== 'random') expect(packed.length).toBeLessThan(Math.max(16, input.length))
      // A view of the module's memory, valid until the next call: compared before it.
      const out = snappy(packed, input.length).slice()
      expect(out).toEqual(input)
      const reference = new Uint8Array(input.length)
      snappyUncompress(packed, reference)
      expect(out).toEqual(reference)
    }
  })

  it('refuses corrupt input instead of returning wrong bytes', () => {
    const packed = snappyCompress(sample(7, 5000))
    expect(() => snappy(packed.subarray(0, packed.length >> 1), 5000)).toThrow(/snappy|premature|eof/)
  })
})

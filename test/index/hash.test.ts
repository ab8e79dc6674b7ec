import { describe, expect, it } from 'vitest'
import { xxhash64 } from 'hyparquet/src/xxhash.js'
import { hashHex, valueKey } from '../../src/index/hash.ts'
import { mulberry32 } from '../../src/random.ts'

describe('XXH64 in 32-bit halves', () => {
  it('equals the BigInt reference (hyparquet, which Parquet bloom filters use) at every length up to 100', () => {
    const r = mulberry32(1)
    for (let len = 0; len <= 100; len++) {
      for (let t = 0; t < 5; t++) {
        const bytes = Uint8Array.from({ length: len }, () => Math.floor(r() * 256))
        const ref = xxhash64(bytes)
        expect(hashHex(bytes)).toBe(ref.toString(16).padStart(16, '0'))
        expect(valueKey(bytes)).toBe(Number(ref >> 12n))
      }
    }
  })

  it('keys text by its UTF-8 bytes', () => {
    expect(valueKey('0x1::coin::transfer')).toBe(valueKey(new TextEncoder().encode('0x1::coin::transfer')))
    expect(valueKey('a')).not.toBe(valueKey('b'))
  })
})

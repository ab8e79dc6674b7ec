import { describe, expect, it } from 'vitest'
import { hashHex, valueKey } from '../../src/index/hash.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'

/** MurmurHash3_x86_32 as published (one seed, written plainly), checked against its known vectors below. */
function murmur3(bytes: Uint8Array, seed: number): number {
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r))
  const scramble = (k: number) => Math.imul(rotl(Math.imul(k, 0xcc9e2d51), 15), 0x1b873593)
  let h = seed | 0
  let i = 0
  for (; i + 4 <= bytes.length; i += 4) {
    h ^= scramble(bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24))
    h = (Math.imul(rotl(h, 13), 5) + 0xe6546b64) | 0
  }
  let k = 0
  for (let j = bytes.length - 1; j >= i; j--) k = (k << 8) | bytes[j]
  if (bytes.length > i) h ^= scramble(k)
  h ^= bytes.length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

const text = (s: string) => new TextEncoder().encode(s)
const hex8 = (n: number) => n.toString(16).padStart(8, '0')

describe('the index hash', () => {
  it('has a reference MurmurHash3_x86_32 that gives the published test vectors', () => {
    expect(murmur3(new Uint8Array(0), 0)).toBe(0)
    expect(murmur3(new Uint8Array(0), 1)).toBe(0x514e28b7)
    expect(murmur3(new Uint8Array(0), 0xffffffff)).toBe(0x81f16f39)
    expect(murmur3(Uint8Array.of(0xff, 0xff, 0xff, 0xff), 0)).toBe(0x76293b50)
    expect(murmur3(Uint8Array.of(0x21, 0x43, 0x65, 0x87), 0)).toBe(0xf55b516b)
    expect(murmur3(Uint8Array.of(0x21, 0x43, 0x65, 0x87), 0x5082edee)).toBe(0x2362f9de)
    expect(murmur3(Uint8Array.of(0x21, 0x43, 0x65), 0)).toBe(0x7e4a8634)
    expect(murmur3(Uint8Array.of(0x21, 0x43), 0)).toBe(0xa0f7b07a)
    expect(murmur3(Uint8Array.of(0x21), 0)).toBe(0x72661cf4)
    expect(murmur3(Uint8Array.of(0, 0, 0, 0), 0)).toBe(0x2362f9de)
    expect(murmur3(Uint8Array.of(0, 0, 0), 0)).toBe(0x85f0b427)
    expect(murmur3(Uint8Array.of(0, 0), 0)).toBe(0x30f4c306)
    expect(murmur3(Uint8Array.of(0), 0)).toBe(0x514e28b7)
    expect(murmur3(text('Hello, world!'), 1234)).toBe(0xfaf6cdb3)
    expect(murmur3(text('The quick brown fox jumps over the lazy dog'), 0x9747b28c)).toBe(0x2fa826cd)
  })

  it('is MurmurHash3 under seeds 0 and 0x9747b28c at every length up to 100; the key is its top 52 bits', () => {
    const r = mulberry32(1)
    for (let len = 0; len <= 100; len++) {
      for (let t = 0; t < 5; t++) {
        const bytes = Uint8Array.from({ length: len }, () => Math.floor(r() * 256))
        const hi = murmur3(bytes, 0)
        const lo = murmur3(bytes, 0x9747b28c)
        expect(hashHex(bytes)).toBe(hex8(hi) + hex8(lo))
        expect(valueKey(bytes)).toBe(hi * 2 ** 20 + (lo >>> 12))
      }
    }
  })

  it('spreads non-random values (addresses that count up from zero) evenly over key prefixes', () => {
    const counts = new Array(64).fill(0)
    for (let i = 0; i < 64_000; i++) {
      const a = new Uint8Array(20)
      new DataView(a.buffer).setUint32(16, i)
      counts[Math.floor(valueKey(a) / 2 ** 46)]++
    }
    // 1,000 expected per prefix; a 5-sigma band
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(160)
  })

  it('keys text by its UTF-8 bytes', () => {
    expect(valueKey('0x1::coin::transfer')).toBe(valueKey(text('0x1::coin::transfer')))
    expect(valueKey('a')).not.toBe(valueKey('b'))
  })
})

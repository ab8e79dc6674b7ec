import { describe, expect, it } from 'vitest'
import { bytesToHex, hexToBytes } from '../../src/schema/hex.ts'

// Short strings go through the loop, long ones through Node's native decoder: both are covered.
const lengths = [0, 1, 20, 31, 32, 33, 255, 256, 1000]
const sample = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 97 + 13) & 0xff)

describe('hexToBytes', () => {
  it('round-trips bytes of every length, either case, with or without 0x', () => {
    for (const n of lengths) {
      const hex = bytesToHex(sample(n))
      expect(hexToBytes(hex), `${n} bytes`).toEqual(sample(n))
      expect(hexToBytes(hex.toUpperCase().replace('0X', '0x'))).toEqual(sample(n))
      expect(hexToBytes(hex.slice(2))).toEqual(sample(n))
    }
  })

  it('refuses odd lengths and any character that is not a hex digit, wherever it is', () => {
    for (const n of lengths.filter(n => n > 0)) {
      const hex = bytesToHex(sample(n))
      expect(() => hexToBytes(hex + '0'), `odd, ${n} bytes`).toThrow(/odd-length/)
      for (const at of [2, 3, hex.length - 2, hex.length - 1]) {
        for (const bad of ['g', ' ', 'é', '\u0130']) {
          const text = hex.slice(0, at) + bad + hex.slice(at + 1)
          expect(() => hexToBytes(text), `${JSON.stringify(bad)} at ${at} of ${n} bytes`).toThrow(/invalid hex/)
        }
      }
    }
  })

  it('gives a buffer of its own (not a view into a shared pool)', () => {
    const bytes = hexToBytes(bytesToHex(sample(1000)))
    expect(bytes.byteOffset).toBe(0)
    expect(bytes.buffer.byteLength).toBe(1000)
  })
})

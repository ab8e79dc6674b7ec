import { describe, expect, it } from 'vitest'
import { compareBytes } from '../../src/columns/compare.ts'
import { bytesToInt, bytesToU256, intToBytes, InvalidValueError, KINDS, u256ToBytes } from '../../src/schema/kinds.ts'

describe('the int kind', () => {
  const values = [
    0n,
    1n,
    -1n,
    255n,
    -256n,
    2n ** 255n - 1n,
    -(2n ** 255n),
    2n ** 256n - 1n,
    -(2n ** 256n - 1n),
    2n ** 263n - 1n,
    -(2n ** 263n),
  ]

  it('round-trips every int256, uint256 and difference of two uint256', () => {
    for (const n of values) expect(bytesToInt(intToBytes(n))).toBe(n)
    expect(() => intToBytes(2n ** 263n)).toThrow(RangeError)
    expect(() => intToBytes(-(2n ** 263n) - 1n)).toThrow(RangeError)
  })

  it('stores bytes whose unsigned order is numeric order (filters and statistics compare bytes)', () => {
    const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    const byBytes = [...values].sort((a, b) => compareBytes(intToBytes(a), intToBytes(b)))
    expect(byBytes).toEqual(sorted)
  })

  it('parses signed decimal and 0x-hex filter values and writes decimal text', () => {
    const int = KINDS.int
    expect(int.toText(int.parse('-42'))).toBe('-42')
    expect(int.toJson(int.parse('0x10'))).toBe('16')
    expect(int.toText(int.parse('-0x10'))).toBe('-16')
    expect(int.toText(int.parse((2n ** 256n - 1n).toString()))).toBe((2n ** 256n - 1n).toString())
    for (const bad of ['', ' 5', '+5', '1e3', '--1', '0x', '1.5', (2n ** 263n).toString()])
      expect(() => int.parse(bad)).toThrow(InvalidValueError)
  })
})

describe('u256ToBytes', () => {
  /** The byte-at-a-time reference: low 32 bytes, big-endian; zero for zero and below. */
  const reference = (n: bigint) => {
    const out = new Uint8Array(32)
    for (let i = 31; i >= 0 && n > 0n; i--, n >>= 8n) out[i] = Number(n & 0xffn)
    return out
  }

  it('matches the reference for every width, odd and even digit counts, past 256 bits and below zero', () => {
    const values = [
      0n,
      1n,
      15n,
      16n,
      255n,
      256n,
      4095n,
      2n ** 64n + 3n,
      2n ** 255n,
      2n ** 256n - 1n,
      2n ** 256n + 5n,
      2n ** 300n + 17n,
      -1n,
    ]
    for (let bits = 1; bits <= 256; bits += 7) values.push((2n ** BigInt(bits) - 1n) / 3n)
    for (const n of values) expect(u256ToBytes(n), String(n)).toEqual(reference(n))
    for (const n of values.filter(n => n >= 0n && n < 2n ** 256n)) expect(bytesToU256(u256ToBytes(n))).toBe(n)
  })
})

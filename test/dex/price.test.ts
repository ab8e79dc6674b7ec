import { describe, expect, it } from 'vitest'
import { PRICE_DIGITS, ratioToDecimal, reservesToPrice, sqrtPriceToPrice } from '../../src/dex/price.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { dyadicText, expectTruncation, longDivision, truncateText } from './decimal.ts'

// TickMath's bounds, from @uniswap/v3-core's TickMath.sol.
const MIN_SQRT_RATIO = 4295128739n
const MAX_SQRT_RATIO = 1461446703485210103287273052203988822378723970342n
const Q96 = 1n << 96n

/** A random bigint of up to `bits` bits, with a random length so every magnitude is hit. */
function randomBigint(random: () => number, bits: number): bigint {
  const length = 1 + Math.floor(random() * bits)
  let n = 0n
  for (let i = 0; i < length; i++) n = (n << 1n) | (random() < 0.5 ? 0n : 1n)
  return n | (1n << BigInt(length - 1))
}

describe('v3 price from sqrtPriceX96', () => {
  it('is (sqrtP / 2^96)² exactly when the expansion is short', () => {
    expect(sqrtPriceToPrice(Q96)).toBe('1')
    expect(sqrtPriceToPrice(3n * Q96)).toBe('9')
    expect(sqrtPriceToPrice(Q96 / 2n)).toBe('0.25')
    expect(sqrtPriceToPrice(Q96 / 64n)).toBe('0.000244140625')
    expect(sqrtPriceToPrice(Q96 * 1000n)).toBe('1000000')
  })

  it('equals the exact expansion truncated to PRICE_DIGITS significant digits', () => {
    const random = mulberry32(11)
    const samples = [
      MIN_SQRT_RATIO,
      MAX_SQRT_RATIO - 1n,
      Q96 + 1n,
      Q96 - 1n,
      ...Array.from({ length: 300 }, () => randomBigint(random, 160)),
    ]
    for (const s of samples) {
      const exact = dyadicText(s * s, 192)
      const text = sqrtPriceToPrice(s)
      expect(text).toBe(truncateText(exact, PRICE_DIGITS))
      expectTruncation(text, s * s, 1n << 192n, PRICE_DIGITS)
      if (exact.replace('.', '').replace(/^0+/, '').length <= PRICE_DIGITS) expect(text).toBe(exact)
    }
  })

  it('keeps every digit of the largest prices (integer part below 2^128)', () => {
    const text = sqrtPriceToPrice(MAX_SQRT_RATIO - 1n)
    const whole = (((MAX_SQRT_RATIO - 1n) ** 2n) >> 192n).toString()
    expect(text.split('.')[0]).toBe(whole)
  })
})

describe('v2 price from reserves', () => {
  it('is reserve1 / reserve0 by long division, truncated', () => {
    const random = mulberry32(7)
    for (let i = 0; i < 300; i++) {
      const r0 = randomBigint(random, 112)
      const r1 = randomBigint(random, 112)
      const text = reservesToPrice(r0, r1)!
      expect(text).toBe(longDivision(r1, r0, PRICE_DIGITS))
      expectTruncation(text, r1, r0, PRICE_DIGITS)
    }
  })

  it('is exact for terminating ratios and null for an empty reserve0', () => {
    expect(reservesToPrice(4n, 1n)).toBe('0.25')
    expect(reservesToPrice(8n, 1000n)).toBe('125')
    expect(reservesToPrice(1n, 0n)).toBe('0')
    expect(reservesToPrice(0n, 5n)).toBeNull()
  })
})

describe('ratioToDecimal', () => {
  it('truncates, never rounds', () => {
    expect(ratioToDecimal(2n, 3n)).toBe(`0.${'6'.repeat(PRICE_DIGITS)}`)
    expect(ratioToDecimal(2n, 3n, 3)).toBe('0.666')
    expect(ratioToDecimal(199n, 100n, 2)).toBe('1.9')
  })

  it('writes plain decimals at both ends of the range', () => {
    expect(ratioToDecimal(1n, 10n ** 50n)).toBe(`0.${'0'.repeat(49)}1`)
    expect(ratioToDecimal(10n ** 45n + 123n, 1n)).toBe(`1${'0'.repeat(45)}`)
    expect(ratioToDecimal(123456789n, 1n, 3)).toBe('123000000')
    expect(ratioToDecimal(0n, 7n)).toBe('0')
  })

  it('refuses a zero denominator or a negative numerator', () => {
    expect(() => ratioToDecimal(1n, 0n)).toThrow(RangeError)
    expect(() => ratioToDecimal(-1n, 2n)).toThrow(RangeError)
  })
})

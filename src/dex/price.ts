/**
 * A swap's price as exact decimal text: token1 per token0 in raw units (no decimals applied,
 * which needs token metadata the swap row does not depend on). The value is an exact rational
 * (v3: sqrtPriceX96² / 2^192; v2: reserve1 / reserve0), written as plain decimal text with the
 * first PRICE_DIGITS significant digits of its exact expansion, truncated, never rounded:
 * every digit shown is a true digit, the text is exact whenever the expansion has at most
 * PRICE_DIGITS significant digits, and otherwise text ≤ price < text + one unit in its last
 * place (relative error below 10^-(PRICE_DIGITS-1)).
 */

/**
 * Significant digits kept: more than either rational's inputs carry (a uint112 reserve has 34
 * digits) and every v3 price's integer part (below 2^128, 39 digits), so no digit of an
 * integer price is lost.
 */
export const PRICE_DIGITS = 40

const digitCount = (n: bigint): number => n.toString().length

/**
 * num/den (num ≥ 0, den > 0) as plain decimal text (no exponent, no trailing zeros after the
 * point), truncated to `digits` significant digits.
 */
export function ratioToDecimal(num: bigint, den: bigint, digits = PRICE_DIGITS): string {
  if (den <= 0n || num < 0n || digits < 1) throw new RangeError(`ratioToDecimal(${num}, ${den}, ${digits})`)
  if (num === 0n) return '0'
  // Choose the scale s with 10^(digits-1) ≤ floor(num·10^s / den) < 10^digits.
  let s = digits - (digitCount(num) - digitCount(den)) - 1
  const scaled = (shift: number): bigint => (shift >= 0 ? (num * 10n ** BigInt(shift)) / den : num / (den * 10n ** BigInt(-shift)))
  let t = scaled(s)
  const low = 10n ** BigInt(digits - 1)
  while (t < low) t = scaled(++s)
  while (t >= low * 10n) t = scaled(--s)
  if (s <= 0) return (t * 10n ** BigInt(-s)).toString()
  const padded = t.toString().padStart(s + 1, '0')
  const whole = padded.slice(0, padded.length - s)
  const fraction = padded.slice(padded.length - s).replace(/0+$/, '')
  return fraction ? `${whole}.${fraction}` : whole
}

const Q192 = 1n << 192n

/** A v3 pool's price from its sqrt price in Q64.96: (sqrtPriceX96 / 2^96)². */
export const sqrtPriceToPrice = (sqrtPriceX96: bigint): string => ratioToDecimal(sqrtPriceX96 * sqrtPriceX96, Q192)

/** A v2 pair's price from its reserves: reserve1 / reserve0; null for an empty reserve0. */
export const reservesToPrice = (reserve0: bigint, reserve1: bigint): string | null =>
  reserve0 === 0n ? null : ratioToDecimal(reserve1, reserve0)

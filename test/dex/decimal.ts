/**
 * Decimal text checks written independently of src/dex/price.ts: string arithmetic on exact
 * expansions, and a bound check on any text against the rational it claims to truncate.
 */
import { expect } from 'vitest'

/** The first `digits` significant digits of a plain decimal string, the rest dropped (zeros kept in the integer part). */
export function truncateText(exact: string, digits: number): string {
  const [whole, fraction = ''] = exact.split('.')
  const all = whole + fraction
  const first = all.search(/[1-9]/)
  if (first < 0) return '0'
  const kept = all.slice(0, first + digits).padEnd(all.length, '0')
  const w = kept.slice(0, whole.length).replace(/^0+(?=\d)/, '')
  const f = kept.slice(whole.length).replace(/0+$/, '')
  return f ? `${w}.${f}` : w
}

/** num / 2^k as its exact (finite) decimal expansion: num·5^k / 10^k. */
export function dyadicText(num: bigint, k: number): string {
  const digits = (num * 5n ** BigInt(k)).toString().padStart(k + 1, '0')
  const whole = digits.slice(0, digits.length - k)
  const fraction = digits.slice(digits.length - k).replace(/0+$/, '')
  return fraction ? `${whole}.${fraction}` : whole
}

/** num/den by long division, stopping after `significant` significant digits or an exact end. */
export function longDivision(num: bigint, den: bigint, significant: number): string {
  const whole = num / den
  let rest = num % den
  let seen = whole === 0n ? 0 : whole.toString().length
  if (seen >= significant) return truncateText(whole.toString(), significant)
  let fraction = ''
  while (rest !== 0n && seen < significant) {
    rest *= 10n
    const d = rest / den
    rest %= den
    fraction += d.toString()
    if (seen > 0 || d !== 0n) seen++
  }
  fraction = fraction.replace(/0+$/, '')
  return fraction ? `${whole}.${fraction}` : whole.toString()
}

/** Asserts text ≤ num/den < text + one unit in the last of `digits` significant places, and at most `digits` significant digits. */
export function expectTruncation(text: string, num: bigint, den: bigint, digits: number): void {
  expect(text).toMatch(/^(0|[1-9]\d*)(\.\d*[1-9])?$/)
  const [whole, fraction = ''] = text.split('.')
  const scale = 10n ** BigInt(fraction.length)
  const value = BigInt(whole + fraction)
  const significant = (whole + fraction).replace(/^0+/, '').replace(/0+$/, '').length
  expect(significant).toBeLessThanOrEqual(digits)
  // One unit in the `digits`-th significant place, as a multiple of 1/scale·10^extra.
  const leading = value === 0n ? 0 : value.toString().length
  const extra = Math.max(0, digits - leading)
  const ulp = 10n ** BigInt(Math.max(0, leading - digits))
  const lo = value * 10n ** BigInt(extra)
  const den2 = scale * 10n ** BigInt(extra)
  expect(lo * den <= num * den2).toBe(true)
  expect(num * den2 < (lo + ulp) * den).toBe(true)
}

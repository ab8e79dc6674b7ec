import { describe, expect, it } from 'vitest'
import { BARE_VALUES, JSON_VALUES, putHex, putQuantity, putU64Decimal, putU64Hex, type PlacedValue } from '../../src/format/text.ts'
import { ByteSink } from '../../src/format/sink.ts'
import { fixedVector, vectorOf, type BinaryVector, type FixedVector, type U64Vector, type Vector } from '../../src/columns/vector.ts'
import { KINDS, type Kind, type StoredValue } from '../../src/schema/kinds.ts'
import { rng, u256 } from './cases.ts'

/** Marks the bytes a writer leaves alone, to see that it wrote only its text and its slack. */
const UNTOUCHED = 0xee

/**
 * Runs a placed writer at an odd offset of a buffer with `room` bytes for it, and returns
 * its text; fails if it ends past its room or wrote outside it.
 */
function written(room: number, write: (out: Uint8Array, view: DataView, p: number) => number): string {
  const out = new Uint8Array(1 + room + 8).fill(UNTOUCHED)
  const end = write(out, new DataView(out.buffer), 1)
  expect(end - 1).toBeLessThanOrEqual(room)
  expect(out[0]).toBe(UNTOUCHED)
  expect([...out.subarray(1 + room)].every(b => b === UNTOUCHED)).toBe(true)
  return Buffer.from(out.subarray(1, end)).toString('latin1')
}

/** Row i's text by a kind's placed value, in the room it asks for. */
function valueText(value: PlacedValue, v: Vector, i: number): string {
  const bytes = value.binary ? (v as BinaryVector).offsets[i + 1] - (v as BinaryVector).offsets[i] : 0
  return written(value.room + 2 * bytes, (out, view, p) => value.write(out, view, p, v, i))
}

/** Every power of 2, 10 and 16 in u64 range, and its neighbours. */
const BOUNDARIES = [
  ...new Set(
    [2n, 10n, 16n]
      .flatMap(base => {
        const out: bigint[] = []
        for (let p = 1n; p < 2n ** 64n; p *= base) out.push(p - 1n, p, p + 1n)
        return out
      })
      .concat([0n, 2n ** 64n - 1n])
      .filter(n => n >= 0n && n < 2n ** 64n),
  ),
]

describe('u64 text', () => {
  const v = vectorOf('u64int', BOUNDARIES) as U64Vector

  it('boundaries reach both sides of 2^32, where the 32-bit path ends', () => {
    expect(BOUNDARIES).toContain(2n ** 32n - 1n)
    expect(BOUNDARIES).toContain(2n ** 32n)
  })

  it('decimal is exact at every digit-count boundary', () => {
    BOUNDARIES.forEach((n, i) => expect(written(20, (out, view, p) => putU64Decimal(out, view, p, v, i))).toBe(n.toString()))
  })

  it('hex is minimal at every digit-count boundary', () => {
    BOUNDARIES.forEach((n, i) => expect(written(18, (out, view, p) => putU64Hex(out, view, p, v, i))).toBe('0x' + n.toString(16)))
  })
})

describe('byte text', () => {
  it('hex writes every byte value', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i)
    const hex = (bytes: Uint8Array, start = 0, end = bytes.length) =>
      written(2 + 2 * (end - start), (out, view, p) => putHex(out, view, p, bytes, start, end))
    expect(hex(all)).toBe('0x' + Buffer.from(all).toString('hex'))
    expect(hex(new Uint8Array(0))).toBe('0x')
    expect(hex(all, 10, 13)).toBe('0x0a0b0c')
    expect(hex(all, 10, 14)).toBe('0x0a0b0c0d')
  })

  const quantity = (bytes: Uint8Array, start = 0, end = bytes.length) =>
    written(2 + 2 * (end - start), (out, view, p) => putQuantity(out, view, p, bytes, start, end))

  it('quantity drops leading zero bytes and a leading zero digit', () => {
    const cases: [bigint, string][] = [
      [0n, '0x0'],
      [1n, '0x1'],
      [15n, '0xf'],
      [16n, '0x10'],
      [256n, '0x100'],
      [2n ** 64n, '0x10000000000000000'],
      [2n ** 256n - 1n, '0x' + 'f'.repeat(64)],
    ]
    for (const [n, text] of cases) expect(quantity(u256(n))).toBe(text)
  })

  it('quantity reads only its range of a shared buffer', () => {
    const shared = Uint8Array.of(0xff, 0, 0, 0x0a, 0xbc, 0xff)
    expect(quantity(shared, 1, 5)).toBe('0xabc')
    expect(quantity(shared, 1, 3)).toBe('0x0')
  })
})

describe('BARE_VALUES and JSON_VALUES', () => {
  it('match KINDS toText and toJson for random values of every bare kind, null rows among them', () => {
    const r = rng(42)
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(r() * 256))
    const sample: Partial<Record<Kind, () => StoredValue>> = {
      u64hex: () => BigInt(Math.floor(r() * 2 ** 52)) * BigInt(1 + Math.floor(r() * 4096)),
      u64int: () => BigInt(Math.floor(r() * 2 ** 52)) * BigInt(1 + Math.floor(r() * 4096)),
      u256hex: () => {
        const b = bytes(32)
        b.fill(0, 0, Math.floor(r() * 33))
        return b
      },
      u256pad: () => bytes(32),
      int: () => bytes(33),
      hash: () => bytes(32),
      address: () => bytes(20),
      address32: () => bytes(32),
      bytes: () => bytes(Math.floor(r() * 100)),
      bool: () => r() < 0.5,
    }
    expect(Object.keys(sample).sort()).toEqual(Object.keys(BARE_VALUES).sort())
    expect(Object.keys(sample).sort()).toEqual(Object.keys(JSON_VALUES).sort())
    for (const [kind, make] of Object.entries(sample) as [keyof typeof BARE_VALUES, () => StoredValue][]) {
      const values = Array.from({ length: 300 }, (_, i) => (i % 7 === 3 ? null : make()))
      const v = vectorOf(kind, values)
      values.forEach((x, i) => {
        if (x === null) return
        expect(valueText(BARE_VALUES[kind], v, i)).toBe(KINDS[kind].toText(x))
        expect(JSON.parse(valueText(JSON_VALUES[kind], v, i))).toEqual(KINDS[kind].toJson(x))
      })
    }
  })
})

describe('fixed kinds from words', () => {
  it('write the same from 32-bit words as from bytes, and read bytes where words do not line up', () => {
    const r = rng(7)
    for (const kind of ['u256pad', 'hash', 'address', 'address32', 'int'] as const) {
      const width = KINDS[kind].width!
      const values = Array.from({ length: 50 }, () => Uint8Array.from({ length: width }, () => Math.floor(r() * 256)))
      const aligned = vectorOf(kind, values) as FixedVector
      expect(aligned.words === null).toBe(width % 4 !== 0)
      const shifted = new Uint8Array(aligned.bytes.length + 1).subarray(1)
      shifted.set(aligned.bytes)
      const unaligned = fixedVector(width, shifted, null)
      expect(unaligned.words).toBeNull()
      for (const table of [BARE_VALUES, JSON_VALUES])
        values.forEach((x, i) => {
          expect(valueText(table[kind], aligned, i)).toBe(valueText(table[kind], unaligned, i))
          if (kind !== 'int') expect(valueText(BARE_VALUES[kind], aligned, i)).toBe('0x' + Buffer.from(x).toString('hex'))
        })
    }
  })
})

describe('ByteSink', () => {
  it('keeps bytes in order across chunk cuts, large blocks and UTF-8 text', () => {
    const sink = new ByteSink(16)
    const big = Uint8Array.from({ length: 100 }, (_, i) => i)
    sink.ascii('abc')
    sink.bytes(big)
    sink.utf8('ü🚀x'.repeat(10))
    sink.byte(33)
    const first = sink.take()
    sink.ascii('tail')
    const all = Buffer.concat([...first, ...sink.flush()])
    expect(all).toEqual(Buffer.concat([Buffer.from('abc'), big, Buffer.from('ü🚀x'.repeat(10) + '!tail')]))
    expect(sink.flush()).toEqual([])
  })
})

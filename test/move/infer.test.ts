import { describe, expect, it } from 'vitest'
import { argumentCandidates, combinations, guesses } from '../../src/move/infer.ts'
import { bytesToHex } from '../../src/schema/hex.ts'

const hexes = (v: unknown) => argumentCandidates(v).map(bytesToHex)

describe('argumentCandidates', () => {
  it('reads a decimal string as u64, u128, u256, then a String', () => {
    expect(hexes('1')).toEqual([
      '0x0100000000000000',
      '0x01000000000000000000000000000000',
      '0x0100000000000000000000000000000000000000000000000000000000000000',
      '0x0131',
    ])
  })

  it('reads a JSON number as the small integer types it fits', () => {
    expect(hexes(300)).toEqual(['0x2c01', '0x2c010000'])
    expect(hexes(-1)).toEqual(['0xff', '0xffff', '0xffffffff'])
  })

  it('prefers an address for 64 hex digits and bytes for shorter even hex', () => {
    const a = '0x' + 'ab'.repeat(32)
    expect(hexes(a)[0]).toBe(a)
    expect(hexes(a)[1]).toBe('0x20' + 'ab'.repeat(32))
    expect(hexes('0x0100')[0]).toBe('0x020100')
    expect(hexes('0x0100')[1]).toBe('0x' + '0100'.padStart(64, '0'))
    // odd length: only an address (or the text itself)
    expect(hexes('0x1')).toEqual(['0x' + '1'.padStart(64, '0'), '0x03307831'])
  })

  it('gives an empty vector or an empty option a single encoding', () => {
    expect(hexes([])).toEqual(['0x00'])
    expect(hexes({ vec: [] })).toEqual(['0x00'])
    expect(hexes([[], []])).toEqual(['0x020000'])
  })

  it('unifies the element types of a vector, empty inner vectors included', () => {
    const g = guesses([[], ['7']])
    expect(g[0]).toEqual({ t: 'vector', of: { t: 'vector', of: { t: 'u64' } } })
    expect(hexes([[], ['7']])[0]).toBe('0x0200010700000000000000')
    expect(guesses([1, 'x'])).toEqual([])
  })

  it('keeps struct fields in JSON order', () => {
    expect(hexes({ inner: '0x' + '11'.repeat(32) })[0]).toBe('0x' + '11'.repeat(32))
    // bool then u8, u16 or u32
    expect(hexes({ a: true, b: 2 })).toEqual(['0x0102', '0x010200', '0x0102000000'])
  })
})

describe('combinations', () => {
  it('yields all first choices first, then by the sum of ranks', () => {
    expect([
      ...combinations(
        [
          ['a', 'b'],
          ['x', 'y'],
        ],
        10,
      ),
    ]).toEqual([
      ['a', 'x'],
      ['a', 'y'],
      ['b', 'x'],
      ['b', 'y'],
    ])
  })

  it('stops at the limit and yields nothing when an argument has no candidate', () => {
    expect([
      ...combinations(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        4,
      ),
    ]).toHaveLength(4)
    expect([...combinations([[1], []], 10)]).toEqual([])
    expect([...combinations([], 10)]).toEqual([[]])
  })
})

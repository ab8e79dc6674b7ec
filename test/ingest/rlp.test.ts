import { describe, expect, it } from 'vitest'
import { quantityBytes, rlpEncode, rlpRaw, uintBytes } from '../../src/ingest/rlp.ts'

const text = (s: string) => new TextEncoder().encode(s)
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

// Vectors from the RLP section of the Ethereum yellow paper / ethereum.org docs.
describe('rlpEncode', () => {
  it('encodes the documented examples', () => {
    expect(hex(rlpEncode(text('dog')))).toBe('83646f67')
    expect(hex(rlpEncode([text('cat'), text('dog')]))).toBe('c88363617483646f67')
    expect(hex(rlpEncode(new Uint8Array(0)))).toBe('80')
    expect(hex(rlpEncode([]))).toBe('c0')
    expect(hex(rlpEncode(uintBytes(0n)))).toBe('80')
    expect(hex(rlpEncode(Uint8Array.of(0)))).toBe('00')
    expect(hex(rlpEncode(uintBytes(15n)))).toBe('0f')
    expect(hex(rlpEncode(uintBytes(1024n)))).toBe('820400')
    expect(hex(rlpEncode([[], [[]], [[], [[]]]]))).toBe('c7c0c1c0c3c0c1c0')
    const lorem = 'Lorem ipsum dolor sit amet, consectetur adipisicing elit'
    expect(hex(rlpEncode(text(lorem)))).toBe('b838' + Buffer.from(lorem).toString('hex'))
  })

  it('uses a long list prefix past 55 bytes of payload', () => {
    const items = Array.from({ length: 20 }, () => text('dog'))
    const out = rlpEncode(items)
    expect(out[0]).toBe(0xf8)
    expect(out[1]).toBe(80)
    expect(out.length).toBe(82)
  })

  it('splices raw items in unchanged', () => {
    const inner = rlpEncode([text('cat')])
    expect(hex(rlpEncode([rlpRaw(inner), text('dog')]))).toBe(hex(rlpEncode([[text('cat')], text('dog')])))
  })
})

describe('quantityBytes', () => {
  it('gives the minimal big-endian bytes of any quantity: odd and even digit counts, leading zeros, either case', () => {
    for (const q of [
      '0x0',
      '0x00',
      '0x1',
      '0x0f',
      '0x100',
      '0xABC',
      '0x00abcd',
      '0x' + 'f'.repeat(63),
      '0x' + '1'.repeat(64),
      '0x' + '0'.repeat(70) + '7',
    ])
      expect(hex(quantityBytes(q)), q).toBe(hex(uintBytes(BigInt(q))))
  })

  it('refuses a quantity with a character that is not a hex digit', () => {
    for (const q of ['0x1g', '0xg1', '0x12 ', '0x1é', '0x0z00']) expect(() => quantityBytes(q), q).toThrow(/invalid hex/)
  })
})

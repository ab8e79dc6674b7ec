import { describe, expect, it } from 'vitest'
import { hexData, hexQuantity, rlpEncode, rlpRaw, uintBytes } from '../../src/ingest/rlp.ts'

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

describe('hex items', () => {
  it('encode a quantity as its minimal bytes: odd and even digit counts, leading zeros, either case, one byte below 0x80 as itself', () => {
    for (const q of [
      '0x0',
      '0x00',
      '0x1',
      '0x7f',
      '0x80',
      '0x0f',
      '0x100',
      '0xABC',
      '0x00abcd',
      '0x' + 'f'.repeat(63),
      '0x' + '1'.repeat(64),
      '0x' + '0'.repeat(70) + '7',
    ])
      expect(hex(rlpEncode(hexQuantity(q))), q).toBe(hex(rlpEncode(uintBytes(BigInt(q)))))
  })

  it('encode data as its bytes, leading zeros kept, short and long (the native decoder), nested in lists', () => {
    for (const n of [0, 1, 2, 31, 55, 56, 255, 256, 300, 5000]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + (n === 1 ? 5 : 200)) & 0xff)
      const text = '0x' + Buffer.from(bytes).toString('hex')
      expect(hex(rlpEncode(hexData(text))), `${n} bytes`).toBe(hex(rlpEncode(bytes)))
      expect(hex(rlpEncode([hexData(text), [hexData(text.toUpperCase().replace('0X', '0x'))]], 2)), `${n} bytes in a typed list`).toBe(
        '02' + hex(rlpEncode([bytes, [bytes]])),
      )
    }
  })

  it('refuse text that is not hex, wherever the bad character is, and data of odd length', () => {
    for (const q of ['0x1g', '0xg1', '0x12 ', '0x1é', '0x0z00']) expect(() => rlpEncode(hexQuantity(q)), q).toThrow(/invalid hex/)
    const long = '0x' + 'ab'.repeat(400)
    for (const d of ['0xzz', long.slice(0, 300) + 'g' + long.slice(301), long.slice(0, -1) + 'é'])
      expect(() => rlpEncode([hexData(d)])).toThrow(/invalid hex/)
    expect(() => hexData('0xabc')).toThrow(/odd-length/)
  })
})

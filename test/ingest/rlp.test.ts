import { describe, expect, it } from 'vitest'
import { hexData, hexQuantity, rlpEncode, RlpWriter, uintBytes, type RlpItem } from '../../src/ingest/rlp.ts'

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

describe('RlpWriter', () => {
  const enc = (f: (w: RlpWriter) => void, type?: number) => hex(new RlpWriter().encode(f, type))
  const long = '0x' + 'ab'.repeat(70)
  const cases: [string, RlpItem, (w: RlpWriter) => void][] = [
    ['a one-byte string below 0x80', hexQuantity('0x7f'), w => w.hexQuantity('0x7f')],
    ['a one-byte string of 0x80', hexQuantity('0x80'), w => w.hexQuantity('0x80')],
    ['one digit', hexQuantity('0x5'), w => w.hexQuantity('0x5')],
    ['zero', hexQuantity('0x0'), w => w.hexQuantity('0x0')],
    ['leading zeros', hexQuantity('0x000400'), w => w.hexQuantity('0x000400')],
    ['capital digits', hexQuantity('0xABC'), w => w.hexQuantity('0xABC')],
    ['data with leading zeros', hexData('0x0001'), w => w.hexData('0x0001')],
    ['a single data byte below 0x80', hexData('0x00'), w => w.hexData('0x00')],
    ['empty data', hexData('0x'), w => w.hexData('0x')],
    ['a long string', hexData(long), w => w.hexData(long)],
    ['bytes', Uint8Array.of(1, 2, 0x90), w => w.bytes(Uint8Array.of(1, 2, 0x90))],
    [
      'nested lists, one past 55 bytes',
      [hexQuantity('0x1'), [hexData(long), [[]], Uint8Array.of(0x81)], []],
      w => {
        w.begin()
        w.hexQuantity('0x1')
        w.begin()
        w.hexData(long)
        w.begin()
        w.begin()
        w.end()
        w.end()
        w.bytes(Uint8Array.of(0x81))
        w.end()
        w.begin()
        w.end()
        w.end()
      },
    ],
  ]

  it('writes what rlpEncode writes of the same items, with or without a type byte', () => {
    for (const [what, item, write] of cases) {
      expect(enc(write), what).toBe(hex(rlpEncode(item)))
      expect(enc(write, 2), what).toBe(hex(rlpEncode(item, 2)))
    }
  })

  it('refuses odd-length data, digits that are not hex, and a list left open or closed twice', () => {
    expect(() => enc(w => w.hexData('0x123'))).toThrow(/odd-length/)
    expect(() => enc(w => w.hexData('0x12zz'))).toThrow()
    expect(() => enc(w => w.hexQuantity('0xg1'))).toThrow()
    expect(() => enc(w => w.begin())).toThrow(/not ended/)
    expect(() => enc(w => w.end())).toThrow(/not begun/)
  })
})

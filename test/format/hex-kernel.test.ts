/**
 * The hex kernel against the table writers of text.ts: every width it takes (16 bytes and
 * more, the tail written from the value's last 16 bytes), every length of a binary value
 * (below 16 a byte at a time), every byte value, nulls skipped, quoted and bare; and a
 * value too big for the module's memory, which makes it grow within a block.
 */
import { describe, expect, it } from 'vitest'
import { fixedVector, type BinaryVector } from '../../src/columns/vector.ts'
import { HexKernel, hexModuleFromFile, KERNEL_TEXT, OUT } from '../../src/format/hex-kernel.ts'
import { jsonFields } from '../../src/format/json.ts'
import { recordWriter, rowsWriter } from '../../src/format/record.ts'
import { ByteSink, fieldColumns } from '../../src/format/sink.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { packed, rng } from './cases.ts'

const module = await hexModuleFromFile()
const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

/** What the kernel wrote for `rows` rows at slots of `slot` bytes from OUT, each up to its position. */
function written(kernel: HexKernel, rows: number, slot: number): string[] {
  return Array.from({ length: rows }, (_, r) => Buffer.from(kernel.bytes.subarray(OUT + r * slot, kernel.pos[r])).toString('latin1'))
}

describe('HexKernel', () => {
  it('writes fixed values of every width from 16 bytes, every byte value among them, quoted or bare, skipping nulls', () => {
    const kernel = new HexKernel(module)
    const r = rng(5)
    for (const width of [16, 17, 20, 31, 32, 33, 48, 64]) {
      const rows = 256
      const bytes = Uint8Array.from({ length: rows * width }, (_, i) => (i < 256 ? i : Math.floor(r() * 256)))
      const valid = Uint8Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? 0 : 1))
      const v = fixedVector(width, bytes, valid)
      for (const quoted of [false, true]) {
        const slot = 2 * width + 8
        for (let k = 0; k < rows; k++) kernel.pos[k] = OUT + k * slot
        kernel.fixed(v, 0, rows, OUT + rows * slot, quoted)
        const q = quoted ? '"' : ''
        const expected = Array.from({ length: rows }, (_, k) =>
          valid[k] === 0 ? '' : `${q}0x${hexOf(bytes.subarray(k * width, (k + 1) * width))}${q}`,
        )
        expect(written(kernel, rows, slot), `width ${width}, quoted ${quoted}`).toEqual(expected)
      }
    }
  })

  it('writes binary values of every length from 0 to 70 bytes, from any row on', () => {
    const kernel = new HexKernel(module)
    const r = rng(9)
    const lengths = Array.from({ length: 71 }, (_, n) => n)
    const offsets = Int32Array.from({ length: lengths.length + 1 }, (_, i) => lengths.slice(0, i).reduce((a, b) => a + b, 0))
    const bytes = Uint8Array.from({ length: offsets[lengths.length] }, (_, i) => (i < 256 ? 255 - i : Math.floor(r() * 256)))
    const v: BinaryVector = { type: 'binary', length: lengths.length, offsets, bytes, text: false, valid: null }
    for (const from of [0, 1, 40]) {
      const rows = lengths.length - from
      const slot = 2 * 70 + 8
      for (let k = 0; k < rows; k++) kernel.pos[k] = OUT + k * slot
      kernel.binary(v, from, rows, OUT + rows * slot, true)
      const expected = Array.from({ length: rows }, (_, k) => `"0x${hexOf(bytes.subarray(offsets[from + k], offsets[from + k + 1]))}"`)
      expect(written(kernel, rows, slot), `from ${from}`).toEqual(expected)
    }
  })

  it('grows its memory for a block bigger than it holds, and writes the same bytes as the table writers', () => {
    const fields: FieldDecl[] = [
      { name: 'data', kind: 'bytes' },
      { name: 'hash', kind: 'hash', nullable: true },
    ]
    const big = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7) & 255)
    const hash = Uint8Array.from({ length: 32 }, (_, i) => i * 8)
    const batch = packed(fields, { length: 3, columns: { data: [Uint8Array.of(1), big, new Uint8Array(0)], hash: [hash, null, hash] } })
    const cols = fieldColumns(batch, fields)
    const texts = jsonFields(fields, '')
    const reference = new ByteSink(1 << 20)
    const one = recordWriter(texts, '}\n')
    for (let i = 0; i < 3; i++) one(reference, cols, i)
    const expected = Buffer.concat(reference.flush())
    const kernel = new HexKernel(module)
    const before = kernel.bytes.length
    const sink = new ByteSink(1 << 20)
    rowsWriter(texts, '}\n', kernel)(sink, cols, 0, 3)
    expect(kernel.bytes.length).toBeGreaterThan(before + 2 * big.length)
    expect(Buffer.concat(sink.flush()).equals(expected)).toBe(true)
    expect(JSON.parse(expected.toString().split('\n')[1])).toEqual({ data: KINDS.bytes.toJson(big), hash: null })
  })

  it('leaves a writer whose key is longer than the kernel takes to the table writers, with the same bytes', () => {
    const fields: FieldDecl[] = [
      { name: 'k'.repeat(KERNEL_TEXT), kind: 'hash' },
      { name: 'short', kind: 'address' },
    ]
    const batch = packed(fields, {
      length: 2,
      columns: {
        [fields[0].name]: [new Uint8Array(32).fill(7), new Uint8Array(32)],
        short: [new Uint8Array(20).fill(255), new Uint8Array(20)],
      },
    })
    const cols = fieldColumns(batch, fields)
    const texts = jsonFields(fields, '')
    const reference = new ByteSink()
    rowsWriter(texts, '}\n')(reference, cols, 0, 2)
    const kernel = new HexKernel(module)
    const sink = new ByteSink()
    rowsWriter(texts, '}\n', kernel)(sink, cols, 0, 2)
    expect(Buffer.concat(sink.flush()).equals(Buffer.concat(reference.flush()))).toBe(true)
    // Nothing was written in the kernel's memory: its records start at OUT.
    expect(kernel.bytes.subarray(OUT, OUT + 64).every(b => b === 0)).toBe(true)
  })
})

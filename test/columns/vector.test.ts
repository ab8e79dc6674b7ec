/**
 * The encoders read packed vectors directly: these cases pin what that reading
 * must get right beyond plain values: a vector of the wrong layout, u64 values
 * past the 32-bit fast path, vectors longer than their batch, and slices that
 * share memory with a larger vector (binary offsets not starting at 0).
 */
import { describe, expect, it } from 'vitest'
import { tableFromIPC } from 'apache-arrow'
import { encodeRows, FORMATS, type Format } from '../../src/format/encode.ts'
import { BatchShapeError } from '../../src/format/sink.ts'
import { type RowBatch, sliceBatch } from '../../src/columns/batch.ts'
import { sliceVector, takeVector, valuesOf, vectorOf, type U64Vector, type Vector, type VectorMemory } from '../../src/columns/vector.ts'
import { randomBytes, rng } from '../query/lake.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { ALL_KINDS, makeBatches, packed, plainRows } from '../format/cases.ts'
import { collect, fromArray, readAll } from '../format/decode.ts'

const encoded = (format: Format, fields: readonly FieldDecl[], batches: RowBatch[]) =>
  collect(encodeRows(format, fields, fromArray(batches)))
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8')

/** Rows `[start, end)` of a vector as a view that keeps binary offsets as they are (not rebased to 0). */
function unrebasedSlice(v: Vector, start: number, end: number): Vector {
  if (v.type !== 'binary') return sliceVector(v, start, end)
  const valid = v.valid === null ? null : v.valid.subarray(start, end)
  return { ...v, length: end - start, offsets: v.offsets.subarray(start, end + 1), valid }
}

describe('vector layout', () => {
  const mismatches: { field: FieldDecl; vector: Vector }[] = [
    { field: { name: 'n', kind: 'u64int' }, vector: vectorOf('string', ['1', '2']) },
    { field: { name: 'h', kind: 'hash' }, vector: vectorOf('address', [new Uint8Array(20), new Uint8Array(20)]) },
    { field: { name: 'b', kind: 'bytes', nullable: true }, vector: vectorOf('hash', [new Uint8Array(32), null]) },
    { field: { name: 'f', kind: 'bool' }, vector: vectorOf('u64hex', [1n, 0n]) },
  ]
  for (const format of FORMATS) {
    it(`${format}: a vector of another layout than the field's kind is a BatchShapeError naming the field`, async () => {
      for (const { field, vector } of mismatches) {
        const ok = { name: 'ok', kind: 'u64int' } as const
        const batch = { length: 2, columns: { ok: vectorOf('u64int', [1n, 2n]), [field.name]: vector } }
        const { error } = await readAll(encodeRows(format, [ok, field], fromArray([batch])))
        expect(error).toBeInstanceOf(BatchShapeError)
        expect(String(error)).toContain(`"${field.name}"`)
      }
    })
  }
})

describe('u64 values past 32 bits', () => {
  const fields: FieldDecl[] = [
    { name: 'n', kind: 'u64int' },
    { name: 'h', kind: 'u64hex' },
  ]
  const values = [2n ** 32n - 1n, 2n ** 32n, 2n ** 32n + 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 64n - 1n]
  const batch = packed(fields, { length: values.length, columns: { n: values, h: values } })

  it('json writes them exactly', async () => {
    expect(text(await encoded('json', fields, [batch]))).toBe(
      '[{"n":4294967295,"h":"0xffffffff"},{"n":4294967296,"h":"0x100000000"},{"n":4294967297,"h":"0x100000001"},' +
        '{"n":9007199254740992,"h":"0x20000000000000"},{"n":9007199254740993,"h":"0x20000000000001"},' +
        '{"n":18446744073709551615,"h":"0xffffffffffffffff"}]',
    )
  })

  it('csv and json_stream write them exactly', async () => {
    expect(text(await encoded('csv', fields, [batch]))).toBe(
      'n,h\n4294967295,0xffffffff\n4294967296,0x100000000\n4294967297,0x100000001\n' +
        '9007199254740992,0x20000000000000\n9007199254740993,0x20000000000001\n18446744073709551615,0xffffffffffffffff\n',
    )
    expect(text(await encoded('json_stream', fields, [batch])).split('\n')[4]).toBe('{"n":9007199254740993,"h":"0x20000000000001"}')
  })

  it('arrow keeps them as the same 64-bit integers', async () => {
    const table = tableFromIPC(await encoded('arrow', fields, [batch]))
    expect([...table.getChild('n')!]).toEqual(values)
    expect([...table.getChild('h')!]).toEqual(values)
  })
})

describe('vectors sharing memory', () => {
  const [plain] = makeBatches(ALL_KINDS, [12], 21)
  const full = packed(ALL_KINDS, plain)

  for (const format of FORMATS) {
    it(`${format}: only batch.length rows of longer vectors are written`, async () => {
      const longer = { length: 5, columns: full.columns }
      const exact = packed(ALL_KINDS, plainRows(plain, 0, 5))
      const out = await encoded(format, ALL_KINDS, [longer])
      expect(Buffer.from(out)).toEqual(Buffer.from(await encoded(format, ALL_KINDS, [exact])))
    })

    it(`${format}: a slice from row > 0 encodes as the same rows packed on their own`, async () => {
      const exact = packed(ALL_KINDS, plainRows(plain, 4, 10))
      const sliced = sliceBatch(full, 4, 10)
      const unrebased: RowBatch = {
        length: 6,
        columns: Object.fromEntries(Object.entries(full.columns).map(([k, v]) => [k, unrebasedSlice(v, 4, 12)])),
      }
      const offsets = unrebased.columns.string
      expect(offsets.type === 'binary' && offsets.offsets[0]).toBeGreaterThan(0)
      const want = Buffer.from(await encoded(format, ALL_KINDS, [exact]))
      expect(Buffer.from(await encoded(format, ALL_KINDS, [sliced]))).toEqual(want)
      expect(Buffer.from(await encoded(format, ALL_KINDS, [unrebased]))).toEqual(want)
    })
  }
})

describe('text values', () => {
  it('a string starting with a byte order mark keeps it', async () => {
    const fields: FieldDecl[] = [{ name: 's', kind: 'string' }]
    const s = '\uFEFFtext'
    const batch = packed(fields, { length: 1, columns: { s: [s] } })
    expect(text(await encoded('json', fields, [batch]))).toBe(`[{"s":${JSON.stringify(s)}}]`)
    expect(text(await encoded('csv', fields, [batch]))).toBe(`s\n${s}\n`)
  })
})

describe('vectorOf', () => {
  it('keeps u64 values at both ends of the range and refuses one past either, rather than keeping its low 64 bits', () => {
    expect(Array.from((vectorOf('u64int', [0n, 2n ** 64n - 1n, null]) as U64Vector).values)).toEqual([0n, 2n ** 64n - 1n, 0n])
    expect(() => vectorOf('u64hex', [2n ** 64n])).toThrow('u64hex value out of the u64 range: 18446744073709551616')
    expect(() => vectorOf('u64int', [-1n])).toThrow(RangeError)
  })
})

describe('takeVector', () => {
  it('gathers the rows asked for, in their order, from vectors of every layout, aligned to 4 bytes or not', () => {
    const r = rng(11)
    const kinds = [
      ['address', () => randomBytes(r, 20)],
      ['hash', () => randomBytes(r, 32)],
      ['int', () => randomBytes(r, 33)],
      ['bytes', () => randomBytes(r, Math.floor(r() * 90))],
      ['u64int', () => BigInt(Math.floor(r() * 2 ** 50))],
      ['string', () => Math.floor(r() * 1e9).toString(36)],
      ['bool', () => r() < 0.5],
    ] as const
    for (const [kind, make] of kinds) {
      const values = Array.from({ length: 300 }, () => (r() < 0.1 ? null : make()))
      const whole = vectorOf(kind, values)
      // a slice from row 3 starts at a byte offset no multiple of 4 for 33-byte values, of 4 for the rest
      for (const [v, base] of [
        [whole, 0],
        [sliceVector(whole, 3, 300), 3],
      ] as const) {
        const rows = Array.from({ length: 500 }, () => base + Math.floor(r() * (300 - base)))
        expect(valuesOf(takeVector(v, rows, base)), `${kind} from ${base}`).toEqual(rows.map(i => values[i]))
        // Into lent memory holding other bytes, from a buffer's start or not: the same values, and the vector owns it.
        const owned: [Vector, Uint8Array[]][] = []
        const memory: VectorMemory = {
          take: length => new Uint8Array(length + 16).fill(0xee).subarray(r() < 0.5 ? 0 : 8),
          owns: (vector, buffers) => owned.push([vector, buffers]),
        }
        const taken = takeVector(v, rows, base, memory)
        expect(valuesOf(taken), `${kind} from ${base}, in lent memory`).toEqual(rows.map(i => values[i]))
        expect(owned.map(([vector]) => vector)).toEqual([taken])
      }
    }
  })
})

describe('text vectors', () => {
  it('hold the UTF-8 TextEncoder writes, lone surrogates as U+FFFD, with nulls between', () => {
    const values = ['', 'plain', '\ufeffbom', 'é中𝄞', '\ud800 lone', 'end \udfff', null, '{"a":"0x1"}', undefined, 'x'.repeat(5000)]
    const v = vectorOf('string', values)
    if (v.type !== 'binary') throw new Error('a string vector is binary')
    const encoder = new TextEncoder()
    values.forEach((x, i) => {
      const expected = typeof x === 'string' ? encoder.encode(x) : new Uint8Array(0)
      expect(Buffer.compare(v.bytes.subarray(v.offsets[i], v.offsets[i + 1]), expected), String(i)).toBe(0)
    })
    expect(v.offsets[values.length]).toBe(v.bytes.length)
    expect(() => vectorOf('json', ['{}', 3 as unknown as string])).toThrow('expected a string for a json value, got number')
  })
})

/**
 * The record writer under every chunk size: records are written into a reservation made
 * once per record (again after a value written through the sink), with word stores that
 * may run up to three bytes past their text. Small sinks cut chunks inside records and
 * inside values, and the text must come out whole all the same. The rows writer (a block
 * of records a column at a time) must give the record writer's bytes, whatever the rows,
 * blocks and chunks, and so must it with hex written by the kernel (src/format/hex-kernel.ts).
 */
import { describe, expect, it } from 'vitest'
import { jsonFields, jsonRecordWriter, jsonRowsWriter } from '../../src/format/json.ts'
import { HexKernel, hexModuleFromFile } from '../../src/format/hex-kernel.ts'
import { recordWriter, rowsWriter, type FieldText } from '../../src/format/record.ts'
import { BatchShapeError, ByteSink, fieldColumns } from '../../src/format/sink.ts'
import { BARE_VALUES } from '../../src/format/text.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { ALL_KINDS, makeBatches, packed } from './cases.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'

/** Every record of `rows` rows of every kind, written by `jsonRecordWriter` into a sink of `chunk` bytes. */
function jsonLines(fields: readonly FieldDecl[], rows: number, chunk: number): string[] {
  const [plain] = makeBatches(fields, [rows], 5)
  const batch = packed(fields, plain)
  const sink = new ByteSink(chunk)
  const write = jsonRecordWriter(fields, '}\n')
  const cols = fieldColumns(batch, fields)
  for (let i = 0; i < rows; i++) write(sink, cols, i)
  const text = Buffer.concat(sink.flush()).toString('utf8')
  return text.split('\n').slice(0, -1)
}

/** Every kind, and the same with the sink-written kinds first: the room after them must count the binary values' bytes. */
const LAYOUTS: (readonly FieldDecl[])[] = [
  ALL_KINDS,
  [...ALL_KINDS.filter(f => f.kind === 'string' || f.kind === 'json'), ...ALL_KINDS.filter(f => f.kind !== 'string' && f.kind !== 'json')],
]

describe('recordWriter', () => {
  for (const [n, fields] of LAYOUTS.entries()) {
    it(`writes every kind, nulls and escaped text among them, whole at every chunk size (layout ${n + 1})`, () => {
      const [plain] = makeBatches(fields, [40], 5)
      const expected = Array.from({ length: 40 }, (_, i) =>
        Object.fromEntries(
          fields.map(f => {
            const v = plain.columns[f.name][i]
            return [f.name, v === null ? null : KINDS[f.kind].toJson(v)]
          }),
        ),
      )
      const reference = jsonLines(fields, 40, 64 * 1024)
      expect(reference.map(line => JSON.parse(line))).toEqual(expected)
      for (const chunk of [1, 2, 3, 4, 5, 7, 16, 31, 64, 100, 333]) expect(jsonLines(fields, 40, chunk)).toEqual(reference)
    })
  }

  for (const order of [
    ['text', 'data'],
    ['data', 'text'],
  ]) {
    it(`counts a long binary value in a record's room (${order.join(', ')})`, () => {
      const kinds = { text: 'string', data: 'bytes' } as const
      const fields: FieldDecl[] = order.map(name => ({ name, kind: kinds[name as keyof typeof kinds] }))
      const data = Uint8Array.from({ length: 1500 }, (_, i) => i & 255)
      const batch = packed(fields, { length: 2, columns: { text: ['a', 'é"'], data: [data, data.subarray(7)] } })
      const write = jsonRecordWriter(fields, '}\n')
      const cols = fieldColumns(batch, fields)
      for (const chunk of [1, 16, 100, 3000]) {
        const sink = new ByteSink(chunk)
        write(sink, cols, 0)
        write(sink, cols, 1)
        const lines = Buffer.concat(sink.flush()).toString('utf8').split('\n')
        expect(lines.slice(0, 2).map((l: string) => JSON.parse(l))).toEqual([
          { text: 'a', data: KINDS.bytes.toJson(data) },
          { text: 'é"', data: KINDS.bytes.toJson(data.subarray(7)) },
        ])
      }
    })
  }

  it('fails a batch with a null in a field declared never null, naming it', () => {
    const fields: FieldDecl[] = [{ name: 'n', kind: 'u64int' }]
    const write = recordWriter([{ name: 'n', prefix: '', value: BARE_VALUES.u64int }], '\n')
    const batch = packed(fields, { length: 2, columns: { n: [1n, null] } })
    const sink = new ByteSink()
    const cols = fieldColumns(batch, fields)
    write(sink, cols, 0)
    expect(() => write(sink, cols, 1)).toThrow(BatchShapeError)
    expect(() => write(sink, cols, 1)).toThrow('"n"')
  })

  it('writes a null as the field says, and a record as its prefixes and ending frame it', () => {
    const fields: FieldDecl[] = [
      { name: 'a', kind: 'address', nullable: true },
      { name: 'b', kind: 'bool' },
    ]
    const write = recordWriter(
      [
        { name: 'a', prefix: '<', value: BARE_VALUES.address, nullText: 'nothing' },
        { name: 'b', prefix: '|', value: BARE_VALUES.bool },
      ],
      '>\n',
    )
    const address = Uint8Array.from({ length: 20 }, (_, i) => i)
    const batch = packed(fields, { length: 2, columns: { a: [address, null], b: [true, false] } })
    const sink = new ByteSink(3)
    const cols = fieldColumns(batch, fields)
    write(sink, cols, 0)
    write(sink, cols, 1)
    expect(Buffer.concat(sink.flush()).toString()).toBe(`<${KINDS.address.toText(address)}|true>\n<nothing|false>\n`)
  })

  it('refuses record text it cannot store as ASCII words', () => {
    expect(() => recordWriter([{ name: 'x', prefix: '"ü":', value: BARE_VALUES.bool }], '\n')).toThrow('printable ASCII')
  })
})

/** The kinds written at positions (string and json go through the sink). */
const PLACED = ALL_KINDS.filter(f => f.kind !== 'string' && f.kind !== 'json')

/** CSV's texts of a field list (bare values, nulls empty), as csv.ts lays them out. */
const csvTexts = (fields: readonly FieldDecl[]): FieldText[] =>
  fields.map((f, j) => ({
    name: f.name,
    prefix: j === 0 ? '' : ',',
    value: BARE_VALUES[f.kind as keyof typeof BARE_VALUES],
    ...(f.nullable ? { nullText: '' } : {}),
  }))

const kernel = new HexKernel(await hexModuleFromFile())

describe('rowsWriter', () => {
  const rows = 700
  for (const [name, fields] of [
    ['every placed kind', PLACED],
    ['binary values first', [...PLACED.filter(f => f.kind === 'bytes'), ...PLACED.filter(f => f.kind !== 'bytes')]],
  ] as const)
    for (const [format, texts, end] of [
      ['JSON', jsonFields(fields, ','), '}\n'],
      ['CSV', csvTexts(fields), '\n'],
    ] as const)
      for (const hex of [undefined, kernel])
        it(`gives the record writer's bytes over blocks, ranges and chunk sizes (${name}, ${format}${hex ? ', hex kernel' : ''})`, () => {
          const [plain] = makeBatches(fields, [rows], 11)
          const cols = fieldColumns(packed(fields, plain), fields)
          const one = recordWriter(texts, end)
          const reference = new ByteSink(1 << 20)
          for (let i = 0; i < rows; i++) one(reference, cols, i)
          const expected = Buffer.concat(reference.flush())
          expect(expected.toString().split('\n')).toHaveLength(rows + 1)
          const write = rowsWriter(texts, end, hex)
          for (const chunk of [1, 7, 100, 5000, 64 * 1024, 1 << 20])
            for (const cuts of [
              [0, rows],
              [0, 1, 255, 256, 257, 513, rows],
              [0, 300, 300, 699, rows],
            ]) {
              const sink = new ByteSink(chunk)
              for (let k = 1; k < cuts.length; k++) write(sink, cols, cuts[k - 1], cuts[k])
              expect(Buffer.concat(sink.flush()).equals(expected), `chunk ${chunk}, cuts ${cuts.join(' ')}`).toBe(true)
            }
        })

  it('writes a record at a time where a value goes through the sink, with the same bytes', () => {
    const [plain] = makeBatches(ALL_KINDS, [300], 3)
    const cols = fieldColumns(packed(ALL_KINDS, plain), ALL_KINDS)
    const reference = new ByteSink(1 << 20)
    const one = jsonRecordWriter(ALL_KINDS, '}\n')
    for (let i = 0; i < 300; i++) one(reference, cols, i)
    const expected = Buffer.concat(reference.flush())
    for (const chunk of [5, 333, 1 << 20]) {
      const sink = new ByteSink(chunk)
      const write = jsonRowsWriter(ALL_KINDS, '}\n')
      write(sink, cols, 0, 17)
      write(sink, cols, 17, 300)
      expect(Buffer.concat(sink.flush()).equals(expected)).toBe(true)
    }
  })

  it('fails a block with a null in a field declared never null, naming it', () => {
    const fields: FieldDecl[] = [{ name: 'n', kind: 'u64int' }]
    const write = rowsWriter([{ name: 'n', prefix: '', value: BARE_VALUES.u64int }], '\n')
    const batch = packed(fields, { length: 3, columns: { n: [1n, 2n, null] } })
    const cols = fieldColumns(batch, fields)
    const sink = new ByteSink()
    write(sink, cols, 0, 2)
    expect(Buffer.concat(sink.flush()).toString()).toBe('1\n2\n')
    expect(() => write(new ByteSink(), cols, 0, 3)).toThrow(BatchShapeError)
    expect(() => write(new ByteSink(), cols, 0, 3)).toThrow('"n"')
  })
})

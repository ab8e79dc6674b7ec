/**
 * One contract for the four output formats: every case is encoded in every
 * format, read back with an independent reader (JSON.parse, line split, a strict
 * CSV reader, apache-arrow's tableFromIPC) and compared with the records computed
 * from the input; then the formats are compared with one another.
 */
import { describe, expect, it } from 'vitest'
import { tableFromIPC, vectorFromArray } from 'apache-arrow'
import { encodeRows, contentTypeOf, FORMATS, type Format } from '../../src/format/encode.ts'
import { EVM_DATASETS, logs } from '../../src/datasets/evm.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { ALL_KINDS, JSON_TEXTS, KIND_LIST, NASTY_STRINGS, U256_EXTREMES, makeBatches, packed, u256, type PlainBatch } from './cases.ts'
import { DECODERS, collect, concat, expectedRecords, fromArray, parseCsv, readAll, type Canonical } from './decode.ts'
import type { RowBatch } from '../../src/columns/batch.ts'

interface Case {
  name: string
  fields: readonly FieldDecl[]
  batches: PlainBatch[]
}

const U256_FIELDS: FieldDecl[] = [
  { name: 'quantity', kind: 'u256hex' },
  { name: 'padded', kind: 'u256pad' },
  { name: 'quantity_opt', kind: 'u256hex', nullable: true },
]

const TEXT_FIELDS: FieldDecl[] = [
  { name: 'text', kind: 'string' },
  { name: 'doc', kind: 'json', nullable: true },
  { name: 'note', kind: 'string', nullable: true },
]

const longText = 'ä,"\n🚀'.repeat(40_000)
const LONG_FIELDS: FieldDecl[] = [
  { name: 'data', kind: 'bytes' },
  { name: 'text', kind: 'string' },
  { name: 'doc', kind: 'json' },
]

const CASES: Case[] = [
  { name: 'no batches', fields: ALL_KINDS, batches: [] },
  { name: 'only empty batches', fields: ALL_KINDS, batches: makeBatches(ALL_KINDS, [0, 0, 0]) },
  { name: 'every kind, nulls in every nullable kind', fields: ALL_KINDS, batches: makeBatches(ALL_KINDS, [66]) },
  {
    name: 'uint256 extremes',
    fields: U256_FIELDS,
    batches: [
      {
        length: U256_EXTREMES.length,
        columns: {
          quantity: U256_EXTREMES.map(u256),
          padded: U256_EXTREMES.map(u256),
          quantity_opt: U256_EXTREMES.map((n, i) => (i % 2 ? null : u256(n))),
        },
      },
    ],
  },
  {
    name: 'long binary and long strings',
    fields: LONG_FIELDS,
    batches: [
      {
        length: 2,
        columns: {
          data: [Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7) & 255), new Uint8Array(0)],
          text: [longText, 'short'],
          doc: [JSON.stringify({ text: longText, list: Array.from({ length: 5000 }, (_, i) => i) }), '{}'],
        },
      },
    ],
  },
  {
    name: 'strings needing escaping',
    fields: TEXT_FIELDS,
    batches: [
      {
        length: NASTY_STRINGS.length,
        columns: {
          text: NASTY_STRINGS,
          doc: NASTY_STRINGS.map((_, i) => (i % 5 === 4 ? null : JSON_TEXTS[i % JSON_TEXTS.length])),
          note: NASTY_STRINGS.map((s, i) => (i % 2 ? null : s)),
        },
      },
    ],
  },
  {
    name: 'many batches',
    fields: ALL_KINDS,
    batches: makeBatches(
      ALL_KINDS,
      Array.from({ length: 40 }, (_, i) => (i * 7) % 23),
      7,
    ),
  },
  ...EVM_DATASETS.map(d => ({ name: `${d.name} declaration`, fields: d.fields, batches: makeBatches(d.fields, [150, 0, 83], 3) })),
]

/** Fails any run-time code generation, as production workerd does. */
async function withoutCodeGeneration<T>(run: () => Promise<T>): Promise<T> {
  const g = globalThis as { Function: FunctionConstructor; eval: typeof eval }
  const original = { Function: g.Function, eval: g.eval }
  const refuse = () => {
    throw new EvalError('code generation from strings refused')
  }
  g.Function = new Proxy(original.Function, { construct: refuse, apply: refuse })
  g.eval = refuse as typeof eval
  try {
    return await run()
  } finally {
    g.Function = original.Function
    g.eval = original.eval
  }
}

/** All bytes of batches given as plain values, packed into vectors. */
function encodePlain(format: Format, fields: readonly FieldDecl[], batches: readonly PlainBatch[]): Promise<Uint8Array> {
  return collect(encodeRows(format, fields, fromArray(batches.map(b => packed(fields, b)))))
}

async function encode(format: Format, c: Case): Promise<Uint8Array> {
  const run = () => encodePlain(format, c.fields, c.batches)
  return format === 'arrow' ? withoutCodeGeneration(run) : run()
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8')
const END_OF_STREAM = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]

describe('encoder contract', () => {
  for (const c of CASES) {
    describe(c.name, () => {
      const expected = expectedRecords(c.fields, c.batches)

      for (const format of FORMATS) {
        it(`${format} decodes to the input records`, async () => {
          const bytes = await encode(format, c)
          expect(DECODERS[format](bytes, c.fields)).toEqual(expected)
        })
      }

      it('all formats give the same records', async () => {
        const decoded: Canonical[][] = []
        for (const format of FORMATS) decoded.push(DECODERS[format](await encode(format, c), c.fields))
        for (const d of decoded.slice(1)) expect(d).toEqual(decoded[0])
        expect(decoded[0]).toHaveLength(c.batches.reduce((n, b) => n + b.length, 0))
      })
    })
  }

  it('empty input gives valid empty output in every format', async () => {
    const empty = CASES[0]
    expect(text(await encode('json', empty))).toBe('[]')
    expect(await encode('json_stream', empty)).toHaveLength(0)
    expect(text(await encode('csv', empty))).toBe(ALL_KINDS.map(f => f.name).join(',') + '\n')
    const arrow = await encode('arrow', empty)
    expect([...arrow.subarray(-8)]).toEqual(END_OF_STREAM)
    const table = tableFromIPC(arrow)
    expect(table.numRows).toBe(0)
    expect(table.schema.fields.map(f => f.name)).toEqual(ALL_KINDS.map(f => f.name))
  })

  it('json and csv values are those of KINDS toJson and toText', async () => {
    const c = CASES[2]
    const rows = expectedRecords(c.fields, c.batches).map((_, i) => i)
    const b = c.batches[0]
    const json = JSON.parse(text(await encode('json', c)))
    expect(json).toEqual(
      rows.map(i =>
        Object.fromEntries(
          c.fields.map(f => {
            const v = b.columns[f.name][i]
            return [f.name, v === null ? null : KINDS[f.kind].toJson(v)]
          }),
        ),
      ),
    )
    const [, ...cells] = parseCsv(text(await encode('csv', c)))
    expect(cells.map(r => r.map(cell => (cell.text === '' && !cell.quoted ? null : cell.text)))).toEqual(
      rows.map(i =>
        c.fields.map(f => {
          const v = b.columns[f.name][i]
          return v === null ? null : KINDS[f.kind].toText(v)
        }),
      ),
    )
  })

  it('json writes u64 numbers with all their digits', async () => {
    const fields: FieldDecl[] = [{ name: 'n', kind: 'u64int' }]
    const out = text(await encodePlain('json', fields, [{ length: 2, columns: { n: [2n ** 64n - 1n, 2n ** 53n + 1n] } }]))
    expect(out).toBe('[{"n":18446744073709551615},{"n":9007199254740993}]')
  })

  it('json embeds json fields verbatim, on one line', async () => {
    const fields: FieldDecl[] = [{ name: 'doc', kind: 'json' }]
    const docs = ['{"n":12345678901234567890}', '[\n  1,\r\n  2\n]']
    const out = text(await encodePlain('json', fields, [{ length: 2, columns: { doc: docs } }]))
    expect(out).toBe('[{"doc":{"n":12345678901234567890}},{"doc":[1,2]}]')
  })

  it('json_stream writes one record per line, each ended by a newline', async () => {
    const c = CASES[5]
    const out = text(await encode('json_stream', c))
    expect(out.split('\n')).toHaveLength(NASTY_STRINGS.length + 1)
    expect(out.endsWith('\n')).toBe(true)
  })

  it('csv keeps null and the empty string apart', async () => {
    const fields: FieldDecl[] = [
      { name: 's', kind: 'string', nullable: true },
      { name: 'n', kind: 'u64int' },
    ]
    const out = text(await encodePlain('csv', fields, [{ length: 2, columns: { s: ['', null], n: [1n, 2n] } }]))
    expect(out).toBe('s,n\n"",1\n,2\n')
  })

  it('arrow schema comes from the declaration: one type per kind, nullability as declared', async () => {
    const want: Record<string, string> = {
      u64hex: 'Uint64',
      u64int: 'Uint64',
      u256hex: 'FixedSizeBinary[32]',
      u256pad: 'FixedSizeBinary[32]',
      int: 'Decimal[76e0]',
      hash: 'FixedSizeBinary[32]',
      address: 'FixedSizeBinary[20]',
      address32: 'FixedSizeBinary[32]',
      bytes: 'Binary',
      bool: 'Bool',
      string: 'Utf8',
      json: 'Utf8',
    }
    expect(Object.keys(want).sort()).toEqual([...KIND_LIST].sort())
    // All-null columns: a schema inferred from values could not know these types.
    const fields = ALL_KINDS.filter(f => f.nullable)
    const columns = Object.fromEntries(fields.map(f => [f.name, [null, null]]))
    const table = tableFromIPC(await encodePlain('arrow', fields, [{ length: 2, columns }]))
    expect(table.schema.fields.map(f => [f.name, String(f.type), f.nullable])).toEqual(fields.map(f => [f.name, want[f.kind], true]))
    for (const d of EVM_DATASETS) {
      const schema = tableFromIPC(await encode('arrow', { name: d.name, fields: d.fields, batches: [] })).schema
      expect(schema.fields.map(f => [f.name, String(f.type), f.nullable])).toEqual(
        d.fields.map(f => [f.name, want[f.kind], f.nullable === true]),
      )
    }
  })

  it('arrow writes one record batch per row batch', async () => {
    const c = CASES[6]
    const table = tableFromIPC(await encode('arrow', c))
    expect(table.batches.map(b => b.numRows)).toEqual(c.batches.map(b => b.length))
  })

  it('arrow encoding generates no code from strings (the guard does catch apache-arrow builders)', async () => {
    await expect(withoutCodeGeneration(async () => vectorFromArray([1, 2, null]))).rejects.toThrow(/code generation/)
    for (const c of CASES) await expect(encode('arrow', c)).resolves.toBeInstanceOf(Uint8Array)
  })
})

describe('contentTypeOf', () => {
  it('gives the Accept value the spec lists for each format', () => {
    expect(FORMATS.map(contentTypeOf)).toEqual([
      'application/json',
      'application/jsonstream',
      'text/csv',
      'application/vnd.apache.arrow.stream',
    ])
  })
})

describe('streaming', () => {
  const fields = logs.fields
  const plain = makeBatches(fields, [40, 40, 40, 40], 5)
  const batches: RowBatch[] = plain.map(b => packed(fields, b))

  /** A source that counts the batches taken and whether it was released. */
  function counted(fail?: { after: number; error: Error }) {
    const state = { taken: 0, released: false }
    async function* source() {
      try {
        for (const b of batches) {
          if (fail && state.taken === fail.after) throw fail.error
          state.taken++
          yield b
        }
      } finally {
        state.released = true
      }
    }
    return { state, source: source() }
  }

  for (const format of FORMATS) {
    describe(format, () => {
      it('reads a batch only when the consumer pulls', async () => {
        const { state, source } = counted()
        const reader = encodeRows(format, fields, source).getReader()
        await new Promise(resolve => setTimeout(resolve, 10))
        expect(state.taken).toBe(0)
        await reader.read()
        expect(state.taken).toBe(1)
        await reader.read()
        expect(state.taken).toBeLessThanOrEqual(2)
        await reader.cancel()
      })

      it('errors the stream, never ends it, when the batches fail mid-stream', async () => {
        const boom = new Error('partition read failed')
        const { state, source } = counted({ after: 2, error: boom })
        const { chunks, error } = await readAll(encodeRows(format, fields, source))
        expect(error).toBe(boom)
        expect(state.taken).toBe(2)
        const out = concat(chunks)
        expect(out.length).toBeGreaterThan(0)
        if (format === 'json') expect(text(out).trimEnd().endsWith(']')).toBe(false)
        if (format === 'arrow') expect([...out.subarray(-8)]).not.toEqual(END_OF_STREAM)
      })

      it('errors the stream when the first batch fails', async () => {
        const boom = new Error('manifest missing')
        const { source } = counted({ after: 0, error: boom })
        const { chunks, error } = await readAll(encodeRows(format, fields, source))
        expect(error).toBe(boom)
        if (format === 'json') expect(text(concat(chunks))).not.toContain(']')
      })

      it('errors the stream and releases the source when a batch contradicts the declaration', async () => {
        const badPlain = structuredClone(plain[1])
        badPlain.columns.block_hash[3] = null
        const bad = packed(fields, badPlain)
        const state = { released: false }
        async function* source() {
          try {
            yield batches[0]
            yield bad
            yield batches[2]
          } finally {
            state.released = true
          }
        }
        const { chunks, error } = await readAll(encodeRows(format, fields, source()))
        expect(String(error)).toMatch(/non-nullable field "block_hash"/)
        expect(state.released).toBe(true)
        if (format === 'json') expect(text(concat(chunks)).endsWith(']')).toBe(false)
      })

      it('errors the stream when a declared column is missing', async () => {
        const { block_hash: _, ...columns } = batches[0].columns
        const { error } = await readAll(encodeRows(format, fields, fromArray([{ length: batches[0].length, columns }])))
        expect(String(error)).toMatch(/no column "block_hash"/)
      })

      it('releases the source when the consumer cancels', async () => {
        const { state, source } = counted()
        const reader = encodeRows(format, fields, source).getReader()
        await reader.read()
        await reader.cancel()
        expect(state.released).toBe(true)
        expect(state.taken).toBeLessThan(batches.length)
      })

      it('writes a large batch in chunks of about 64 KiB', async () => {
        const big = packed(fields, makeBatches(fields, [4000], 9)[0])
        const { chunks, error } = await readAll(encodeRows(format, fields, fromArray([big])))
        expect(error).toBeUndefined()
        const total = chunks.reduce((n, c) => n + c.length, 0)
        expect(total).toBeGreaterThan(256 * 1024)
        // Only the opening bytes, the batch's remainder and the closing bytes may come short;
        // and in Arrow, what precedes each column buffer handed out without a copy.
        const allowed = 3 + (format === 'arrow' ? fields.length : 0)
        expect(chunks.filter(c => c.length < 60 * 1024).length).toBeLessThanOrEqual(allowed)
        expect(chunks.length).toBeGreaterThan(1)
      })
    })
  }
})

/**
 * Input cases shared by the encoder contract suite: batches over every kind,
 * made deterministically by the test as plain values, then packed into vectors.
 */
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { intToBytes, KINDS, type Kind, type StoredValue } from '../../src/schema/kinds.ts'
import { batchOf, type RowBatch } from '../../src/columns/batch.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'

/** Every kind of the vocabulary, from the vocabulary itself. */
export const KIND_LIST = Object.keys(KINDS) as Kind[]

/** Every kind twice: required (`<kind>`) and nullable (`<kind>_opt`). */
export const ALL_KINDS: readonly FieldDecl[] = KIND_LIST.flatMap(kind => [
  { name: kind, kind },
  { name: `${kind}_opt`, kind, nullable: true },
])

/** Small seeded generator, so a failing case can be replayed. */
export const rng = mulberry32

export function u256(n: bigint): Uint8Array {
  return Uint8Array.from(Buffer.from(n.toString(16).padStart(64, '0'), 'hex'))
}

export const U64_EXTREMES = [0n, 1n, 15n, 16n, 255n, 0xffffffffn, 0x100000000n, 2n ** 53n + 1n, 2n ** 64n - 1n]
export const U256_EXTREMES = [0n, 1n, 15n, 16n, 2n ** 64n, 2n ** 128n + 5n, 2n ** 256n - 1n]
/** Signed values every format can write (Arrow's decimal256 bounds them to int256). */
export const INT_EXTREMES = [0n, -1n, 1n, -(2n ** 255n), 2n ** 255n - 1n, -(2n ** 64n), 2n ** 64n, -123456789012345678901234567890n]

/** Strings a text format must escape or quote. */
export const NASTY_STRINGS = [
  '',
  'plain',
  'comma, inside',
  'quote " inside',
  '""',
  'line\nbreak',
  'cr\ronly',
  'cr\rand\r\ncrlf',
  'tab\tand\\backslash/slash',
  'ünïcödé ✓ 漢字 🚀',
  '\u0001\u001f control',
  ' leading and trailing ',
  'a,"b",\nc',
  '\u2028\u2029 separators',
  'delete \u007f kept',
  'null',
  '0x1234',
]

/** JSON texts a json field may hold: nested, with escapes, spread over lines. */
export const JSON_TEXTS = [
  '{"a":1}',
  '[]',
  '{"address":"0x00000000000000000000000000000000000000aa","storageKeys":["0x01","0x02"]}',
  '[{"s":"quote \\" comma , newline \\n"},null,true,1.5e3]',
  '{\n  "pretty": [\n    1,\n    2\n  ]\n}',
  '"just a string"',
  '12345678901234567890',
  'null',
]

function bytesOf(r: () => number, n: number): Uint8Array {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256)
  return b
}

/** A value of a kind for row i; varied so extremes and escapes all occur. */
export function valueOf(kind: Kind, i: number, r: () => number): StoredValue {
  switch (kind) {
    case 'u64hex':
    case 'u64int':
      return i % 2 === 0 ? U64_EXTREMES[(i / 2) % U64_EXTREMES.length] : BigInt(Math.floor(r() * 2 ** 48))
    case 'u256hex':
    case 'u256pad':
      return i % 2 === 0 ? u256(U256_EXTREMES[(i / 2) % U256_EXTREMES.length]) : bytesOf(r, 32)
    case 'int':
      return intToBytes(i % 2 === 0 ? INT_EXTREMES[(i / 2) % INT_EXTREMES.length] : BigInt(Math.floor((r() - 0.5) * 2 ** 52)))
    case 'hash':
    case 'address32':
      return bytesOf(r, 32)
    case 'address':
      return bytesOf(r, 20)
    case 'bytes':
      return bytesOf(r, Math.floor(r() * 80))
    case 'bool':
      return r() < 0.5
    case 'string':
      return NASTY_STRINGS[i % NASTY_STRINGS.length]
    case 'json':
      return JSON_TEXTS[i % JSON_TEXTS.length]
  }
}

/**
 * A batch as plain values per column: what a case means, kept apart from the
 * vectors it is packed into so expected output never comes from the packing.
 */
export interface PlainBatch {
  length: number
  columns: Record<string, (StoredValue | null)[]>
}

/** A plain batch packed into vectors, as the engine hands batches out. */
export function packed(fields: readonly FieldDecl[], b: PlainBatch): RowBatch {
  return batchOf(fields, b.columns, b.length)
}

/** Rows `[start, end)` of a plain batch. */
export function plainRows(b: PlainBatch, start: number, end: number): PlainBatch {
  return { length: end - start, columns: Object.fromEntries(Object.entries(b.columns).map(([k, col]) => [k, col.slice(start, end)])) }
}

/**
 * Batches of the given sizes over `fields`; nullable fields are null in every
 * third row (and wholly null in a field named `raw`, like the spec's).
 */
export function makeBatches(fields: readonly FieldDecl[], sizes: readonly number[], seed = 1): PlainBatch[] {
  const r = rng(seed)
  let row = 0
  return sizes.map(length => {
    const columns: PlainBatch['columns'] = {}
    for (const f of fields) columns[f.name] = []
    for (let i = 0; i < length; i++, row++) {
      for (const f of fields) {
        const isNull = f.nullable && (f.virtual === 'null' || (row + f.name.length) % 3 === 0)
        columns[f.name].push(isNull ? null : valueOf(f.kind, row, r))
      }
    }
    return { length, columns }
  })
}

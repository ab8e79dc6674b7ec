/**
 * The page decoder against hyparquet, on partitions written by `writePartition` for the
 * real dataset declarations: every stored column, every row group, whole chunks,
 * random row windows and page runs picked with the offset index. Each row group of a
 * file gets its own value and null pattern, so every column has dictionary and PLAIN
 * chunks, pages with and without nulls and (nullable columns) an all-null chunk.
 */
import { parquetReadObjects, readOffsetIndex, type ColumnMetaData, type FileMetaData, type OffsetIndex } from 'hyparquet'
import { describe, expect, it } from 'vitest'
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { moveTransactions } from '../../src/datasets/move.ts'
import { dexSwaps } from '../../src/datasets/dex.ts'
import { intToBytes, KINDS } from '../../src/schema/kinds.ts'
import {
  decodeCodes,
  decodeDictionary,
  decodeHybrid,
  gatherHybrid,
  decodePageRows,
  decodePages,
  UnsupportedPageError,
  type ChunkLayout,
} from '../../src/parquet/pages.ts'
import { storedFields, writePartition, type LayoutOptions } from '../../src/parquet/write.ts'
import { shapeOf, valuesOf, type Vector, type VectorMemory } from '../../src/columns/vector.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { columnOf, type DatasetDecl, type FieldDecl } from '../../src/schema/dataset.ts'
import type { StoredValue } from '../../src/schema/kinds.ts'
import { makePools, plain, randomBytes, type Pools } from '../query/lake.ts'
import type { ColumnBatch } from '../../src/columns/batch.ts'

type Rng = () => number
type PageLocation = OffsetIndex['page_locations'][number]

/** A row group's data: few repeated values (a dictionary) or all-distinct ones (PLAIN), and where nulls go. */
interface GroupSpec {
  rows: number
  values: 'repeated' | 'distinct'
  nulls: 'none' | 'some' | 'runs' | 'all'
}

interface Variant {
  name: string
  layout: LayoutOptions
  groups: GroupSpec[]
}

const VARIANTS: Variant[] = [
  {
    // The last group holds 12 rows: booleans of a chunk of 16 values or fewer are written PLAIN.
    name: '300-row groups, 512-byte pages',
    layout: { rowGroupSize: 300, pageSize: 512 },
    groups: [
      { rows: 300, values: 'repeated', nulls: 'some' },
      { rows: 300, values: 'distinct', nulls: 'none' },
      { rows: 300, values: 'repeated', nulls: 'runs' },
      { rows: 300, values: 'distinct', nulls: 'all' },
      { rows: 300, values: 'distinct', nulls: 'some' },
      { rows: 300, values: 'repeated', nulls: 'none' },
      { rows: 12, values: 'distinct', nulls: 'some' },
    ],
  },
  {
    // Booleans take an eighth of a byte each: only pages this small give them several pages.
    name: '2,000-row groups, 128-byte pages',
    layout: { rowGroupSize: 2_000, pageSize: 128 },
    groups: [
      { rows: 2_000, values: 'repeated', nulls: 'runs' },
      { rows: 2_000, values: 'distinct', nulls: 'some' },
    ],
  },
]

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]

const U64_REPEATED = [0n, 1n, 255n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 32n + 7n, 2n ** 53n - 1n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n]
const TEXTS = ['', 'a', 'é', 'naïve café', '日本語のテキスト', '🙂 emoji 🚀', 'Ωμέγα', 'x'.repeat(700)]
/** Signed amounts as stored (33-byte two's complement). */
const INTS = [0n, 1n, -1n, 2n ** 255n, -(2n ** 200n) + 3n].map(n => intToBytes(n))
const JSONS = ['{}', '[]', '{"a":1}', '{"name":"Zoë","tags":["日本","🙂"]}', JSON.stringify({ long: 'y'.repeat(900) })]

/** A random u64 of a random magnitude: byte-sized, above 2^32, around 2^53, up to 2^64 - 1. */
function randomU64(r: Rng): bigint {
  const bits = pick(r, [16, 32, 33, 53, 54, 64])
  const x = (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32))
  return x & ((1n << BigInt(bits)) - 1n)
}

/** Non-ASCII text of 1 to 3 code units per character, surrogate pairs included. */
function randomText(r: Rng, i: number): string {
  const chars = Array.from({ length: Math.floor(r() * 12) }, () => pick(r, ['a', 'Z', ' ', 'é', 'ß', '中', '語', '🙂', '𝄞', '"', '\\']))
  return `${chars.join('')}#${i}`
}

function repeatedValue(f: FieldDecl, r: Rng, pools: Pools, bytesPool: Uint8Array[]): StoredValue {
  switch (f.kind) {
    case 'u64hex':
    case 'u64int':
      return pick(r, U64_REPEATED)
    case 'bytes':
      return pick(r, bytesPool)
    case 'bool':
      throw new Error('booleans are generated as runs')
    case 'string':
      return pick(r, TEXTS)
    case 'json':
      return pick(r, JSONS)
    case 'int':
      return pick(r, INTS)
    default: {
      const w = f.kind === 'address' ? 20 : 32
      return pick(r, r() < 0.5 ? pools.hot.get(w)! : pools.warm.get(w)!)
    }
  }
}

function distinctValue(f: FieldDecl, r: Rng, i: number): StoredValue {
  switch (f.kind) {
    case 'u64hex':
    case 'u64int':
      return randomU64(r)
    case 'bytes': {
      const x = r()
      return randomBytes(
        r,
        x < 0.1 ? 0 : x < 0.7 ? 1 + Math.floor(r() * 40) : x < 0.95 ? 100 + Math.floor(r() * 600) : 1_500 + Math.floor(r() * 1_500),
      )
    }
    case 'bool':
      return r() < 0.5
    case 'string':
      return randomText(r, i)
    case 'json':
      return JSON.stringify({ i, text: randomText(r, i), n: Math.floor(r() * 1e6) })
    case 'u256hex':
    case 'u256pad': {
      const b = randomBytes(r, 32)
      b.fill(0, 0, Math.floor(r() * 33))
      return b
    }
    default:
      return randomBytes(r, KINDS[f.kind].width!)
  }
}

function isNullAt(spec: GroupSpec, r: Rng, i: number): boolean {
  if (spec.nulls === 'none') return false
  if (spec.nulls === 'all') return true
  if (spec.nulls === 'runs') return Math.floor(i / 37) % 3 === 0
  return r() < 0.3
}

/** A batch of every stored column of `dataset`, row group by row group per `groups`. */
function batchOf(dataset: DatasetDecl, groups: readonly GroupSpec[], r: Rng): ColumnBatch {
  const pools = makePools(r)
  const bytesPool = [new Uint8Array(0), randomBytes(r, 1), randomBytes(r, 32), randomBytes(r, 600), randomBytes(r, 2_000)]
  const columns: Record<string, (StoredValue | null)[]> = {}
  let length = 0
  for (const f of storedFields(dataset)) {
    const out: (StoredValue | null)[] = []
    for (const spec of groups) {
      let run = r() < 0.5
      for (let i = 0; i < spec.rows; i++) {
        if (f.nullable && isNullAt(spec, r, i)) {
          out.push(null)
        } else if (f.kind === 'bool' && spec.values === 'repeated') {
          if (r() < 0.05) run = !run
          out.push(run)
        } else {
          out.push(spec.values === 'repeated' ? repeatedValue(f, r, pools, bytesPool) : distinctValue(f, r, out.length))
        }
      }
    }
    columns[columnOf(f)] = out
    length = out.length
  }
  return { length, columns }
}

/** One column chunk, cut as a scanner fetches it. */
interface Chunk {
  field: FieldDecl
  layout: ChunkLayout
  meta: ColumnMetaData
  /** First row of the group in the file. */
  groupStart: number
  rows: number
  /** The data pages. */
  data: Uint8Array
  /** The dictionary page (when there is one) and the data pages. */
  whole: Uint8Array
  dictionary: Vector | undefined
  /** Pages per the offset index; null for a chunk of one page (the writer indexes only several). */
  pages: PageLocation[] | null
}

function chunksOf(dataset: DatasetDecl, bytes: Uint8Array, metadata: FileMetaData, memory?: VectorMemory): Chunk[] {
  const out: Chunk[] = []
  let groupStart = 0
  for (const rg of metadata.row_groups) {
    for (const field of storedFields(dataset)) {
      const column = rg.columns.find(c => c.meta_data?.path_in_schema[0] === columnOf(field))!
      const meta = column.meta_data!
      const layout: ChunkLayout = {
        shape: shapeOf(field.kind),
        optional: field.nullable === true,
        codec: meta.codec,
        ...(memory ? { memory } : {}),
      }
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset)
      const dataStart = Number(meta.data_page_offset)
      const end = start + Number(meta.total_compressed_size)
      const dictionary = meta.dictionary_page_offset === undefined ? undefined : decodeDictionary(layout, bytes.subarray(start, dataStart))
      let pages: PageLocation[] | null = null
      if (column.offset_index_offset !== undefined) {
        const view = new DataView(bytes.buffer, bytes.byteOffset + Number(column.offset_index_offset), column.offset_index_length!)
        pages = readOffsetIndex({ view, offset: 0 }).page_locations
      }
      out.push({
        field,
        layout,
        meta,
        groupStart,
        rows: Number(rg.num_rows),
        data: bytes.subarray(dataStart, end),
        whole: bytes.subarray(start, end),
        dictionary,
        pages,
      })
    }
    groupStart += Number(rg.num_rows)
  }
  return out
}

/** hyparquet's values per column, as comparable plain data (hex for bytes, decimal for u64, null for nulls). */
async function referenceColumns(dataset: DatasetDecl, bytes: Uint8Array): Promise<Record<string, unknown[]>> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer
  const rows = await parquetReadObjects({ file, utf8: false })
  const out: Record<string, unknown[]> = {}
  for (const f of storedFields(dataset)) out[columnOf(f)] = rows.map(row => comparable(row[columnOf(f)] as StoredValue | null | undefined))
  return out
}

/** Rows that are null hold zeros (u64, fixed, bool) or no bytes (binary), as the vector layout promises. */
function nullSlotsNotEmpty(v: Vector): number {
  if (!v.valid) return 0
  let bad = 0
  for (let i = 0; i < v.length; i++) {
    if (v.valid[i]) continue
    if (v.type === 'u64' && v.values[i] !== 0n) bad++
    if (v.type === 'bool' && v.values[i] !== 0) bad++
    if (v.type === 'fixed' && v.bytes.subarray(i * v.width, (i + 1) * v.width).some(b => b !== 0)) bad++
    if (v.type === 'binary' && v.offsets[i + 1] !== v.offsets[i]) bad++
  }
  return bad
}

/** A value as plain data, as `plain` of test/query/lake.ts gives it but faster: the tests compare millions. */
function comparable(v: StoredValue | null | undefined): unknown {
  if (v instanceof Uint8Array) return '0x' + Buffer.from(v.buffer, v.byteOffset, v.length).toString('hex')
  return plain(v)
}

/** The first row where two columns of plain values differ (toEqual on every window is slow). */
function firstDifference(actual: unknown[], expected: unknown[]): { row: number; actual: unknown; expected: unknown } | null {
  let row = actual.findIndex((x, i) => x !== expected[i])
  if (row < 0 && actual.length !== expected.length) row = Math.min(actual.length, expected.length)
  return row < 0 ? null : { row, actual: actual[row], expected: expected[row] }
}

function expectRows(v: Vector, expected: unknown[], what: string): void {
  expect(v.length, what).toBe(expected.length)
  expect(firstDifference(valuesOf(v).map(comparable), expected), what).toBeNull()
  expect(v.valid === null, `${what}: valid is null exactly when no row is null`).toBe(!expected.includes(null))
  expect(nullSlotsNotEmpty(v), `${what}: null slots`).toBe(0)
  if (v.type === 'binary') expect([v.offsets[0], v.offsets[v.length]], `${what}: offsets`).toEqual([0, v.bytes.length])
}

/** Group-relative first row of each page, and the row after the last. */
function pageBounds(c: Chunk): number[] {
  return [...(c.pages ?? [{ first_row_index: 0n }]).map(p => Number(p.first_row_index)), c.rows]
}

/** Windows `[from, to)` (group-relative) at random, around page bounds, and empty ones. */
function windowsOf(c: Chunk, r: Rng, count: number): [number, number][] {
  const bounds = pageBounds(c)
  const near = () => Math.min(c.rows, Math.max(0, pick(r, bounds) + pick(r, [-1, 0, 0, 1])))
  const any = () => Math.floor(r() * (c.rows + 1))
  const out: [number, number][] = [
    [0, 0],
    [c.rows, c.rows],
    [0, 1],
    [c.rows - 1, c.rows],
  ]
  while (out.length < count) {
    const x = r()
    const a = x < 0.4 ? near() : any()
    const b = x < 0.1 ? a : x < 0.6 ? near() : any()
    out.push(a <= b ? [a, b] : [b, a])
  }
  return out
}

interface Seen {
  dictionary: Set<string>
  plain: Set<string>
  rle: Set<string>
  multiPage: Set<string>
  allNull: Set<string>
  someNull: Set<string>
}

/** Compares every chunk of a file with hyparquet's values; records which chunk shapes occurred. */
function checkFile(
  dataset: DatasetDecl,
  bytes: Uint8Array,
  metadata: FileMetaData,
  reference: Record<string, unknown[]>,
  r: Rng,
  seen: Seen,
  memory?: VectorMemory,
): void {
  for (const c of chunksOf(dataset, bytes, metadata, memory)) {
    const column = columnOf(c.field)
    const expected = reference[column].slice(c.groupStart, c.groupStart + c.rows)
    const at = `${dataset.name}.${column}, group from row ${c.groupStart}`
    const encodings = c.meta.encodings
    if (encodings.includes('RLE_DICTIONARY')) seen.dictionary.add(column)
    else if (encodings.includes('RLE')) seen.rle.add(column)
    else seen.plain.add(column)
    expect(c.dictionary !== undefined, `${at}: a dictionary page exactly when dictionary-encoded`).toBe(
      encodings.includes('RLE_DICTIONARY'),
    )
    if (c.pages && c.pages.length > 1) seen.multiPage.add(column)
    if (expected.every(x => x === null)) seen.allNull.add(column)
    else if (expected.includes(null)) seen.someNull.add(column)

    expectRows(decodePages(c.layout, c.data, 0, 0, c.rows, c.dictionary), expected, `${at}: whole chunk`)
    const codes = decodeCodes(c.layout, c.data, 0, 0, c.rows)
    expect(codes !== null, `${at}: codes exactly when dictionary-encoded`).toBe(c.dictionary !== undefined)
    if (codes && c.dictionary) {
      const dictionary = valuesOf(c.dictionary).map(comparable)
      expect(
        firstDifference(
          Array.from(codes, k => (k < 0 ? null : dictionary[k])),
          expected,
        ),
        `${at}: codes name the values`,
      ).toBeNull()
    }
    expectRows(
      decodePages(c.layout, c.whole, c.groupStart, c.groupStart, c.groupStart + c.rows, c.dictionary),
      expected,
      `${at}: whole chunk, dictionary page included, file rows`,
    )

    for (const density of [0.02, 0.3, 0.9]) {
      const picks = Array.from({ length: c.rows }, (_, i) => i).filter(() => r() < density)
      const base = r() < 0.5 ? 0 : c.groupStart
      expectRows(
        decodePageRows(
          c.layout,
          c.data,
          base,
          base,
          base + c.rows,
          Int32Array.from(picks, i => base + i),
          c.dictionary,
        ),
        picks.map(i => expected[i]),
        `${at}: ${picks.length} picked rows of the chunk`,
      )
    }

    for (const [a, b] of windowsOf(c, r, 24)) {
      const base = r() < 0.5 ? 0 : c.groupStart
      expectRows(decodePages(c.layout, c.data, base, base + a, base + b, c.dictionary), expected.slice(a, b), `${at}: rows [${a}, ${b})`)
    }

    if (!c.pages) continue
    const bounds = pageBounds(c)
    const last = c.pages.length - 1
    const runs: [number, number][] = [
      [0, last],
      [last, last],
      [0, 0],
    ]
    for (let i = 0; i < 6; i++) {
      const p0 = Math.floor(r() * c.pages.length)
      runs.push([p0, Math.min(last, p0 + Math.floor(r() * 4))])
    }
    for (const [p0, p1] of runs) {
      const start = Number(c.pages[p0].offset)
      const bytesOfRun = bytes.subarray(start, Number(c.pages[p1].offset) + c.pages[p1].compressed_page_size)
      const [first, end] = [bounds[p0], bounds[p1 + 1]]
      const base = c.groupStart
      const run = `${at}: pages ${p0}-${p1}`
      expectRows(decodePages(c.layout, bytesOfRun, base + first, base + first, base + end, c.dictionary), expected.slice(first, end), run)
      const a = first + Math.floor(r() * (end - first + 1))
      const b = a + Math.floor(r() * (end - a + 1))
      expectRows(
        decodePages(c.layout, bytesOfRun, base + first, base + a, base + b, c.dictionary),
        expected.slice(a, b),
        `${run}, rows [${a}, ${b})`,
      )
      /** The rows at `picks` (ascending indexes of `expected`), decoded as picked rows. */
      const expectPicked = (picks: number[], what: string) =>
        expectRows(
          decodePageRows(
            c.layout,
            bytesOfRun,
            base + first,
            base + first,
            base + end,
            Int32Array.from(picks, i => base + i),
            c.dictionary,
          ),
          picks.map(i => expected[i]),
          `${run}, ${what}`,
        )
      const picks = Array.from({ length: end - first }, (_, i) => first + i).filter(() => r() < 0.2)
      expectPicked(picks, `${picks.length} picked rows`)
      // Picks in one run (a block range's rows): a PLAIN page's values are copied from it, not gathered first.
      expectPicked(
        Array.from({ length: b - a }, (_, i) => a + i),
        `rows [${a}, ${b}) picked`,
      )
      expect(
        () => decodePages(c.layout, bytesOfRun, base + first, base + first, base + end + 1, c.dictionary),
        `${run}: a row past the pages`,
      ).toThrow()
      if (p0 > 0)
        expect(
          () => decodePages(c.layout, bytesOfRun, base + first, base + first - 1, base + end, c.dictionary),
          `${run}: a row before the pages`,
        ).toThrow()
    }
  }
}

/** Memory that lends buffers holding an earlier answer's bytes (0xa5 throughout, and longer than asked), as a pool's idle ones do. */
function staleMemory(): VectorMemory & { lent: number; owned: number } {
  const memory = {
    lent: 0,
    owned: 0,
    take(length: number) {
      memory.lent++
      return new Uint8Array(length + 24).fill(0xa5)
    },
    owns() {
      memory.owned++
    },
  }
  return memory
}

/** dex_swaps for its `int` amounts: 33 bytes wide, the one fixed width that is not whole words. */
const DATASETS = [blocks, transactions, logs, moveTransactions, dexSwaps]

describe('decodePages against hyparquet, on written partitions', () => {
  for (const [d, dataset] of DATASETS.entries()) {
    it(`decodes every column of ${dataset.name} (${dataset.family}) like hyparquet`, async () => {
      const seen: Seen = {
        dictionary: new Set(),
        plain: new Set(),
        rle: new Set(),
        multiPage: new Set(),
        allNull: new Set(),
        someNull: new Set(),
      }
      const coverage = { empty: false, long: false, above32: false, above53: false, nonAscii: false }
      for (const [v, variant] of VARIANTS.entries()) {
        const r = mulberry32(1_000 * d + v + 1)
        const batch = batchOf(dataset, variant.groups, r)
        const { bytes, metadata } = writePartition(dataset, batch, { from: 0, to: 1 }, variant.layout)
        expect(metadata.row_groups.map(g => Number(g.num_rows))).toEqual(variant.groups.map(g => g.rows))
        const reference = await referenceColumns(dataset, bytes)
        for (const [column, values] of Object.entries(batch.columns)) {
          expect(firstDifference(reference[column], values.map(comparable)), `hyparquet reads back ${column} as written`).toBeNull()
        }
        for (const f of storedFields(dataset)) {
          for (const x of batch.columns[columnOf(f)]) {
            if (x instanceof Uint8Array && f.kind === 'bytes') {
              coverage.empty ||= x.length === 0
              coverage.long ||= x.length > 512
            }
            if (typeof x === 'bigint') {
              coverage.above32 ||= x > 2n ** 32n && x < 2n ** 53n
              coverage.above53 ||= x > 2n ** 53n
            }
            if (typeof x === 'string') coverage.nonAscii ||= /[^\x00-\x7f]/.test(x)
          }
        }
        // Every other file decodes into lent memory: the same values, and null rows still zero.
        const memory = v % 2 === 1 ? staleMemory() : undefined
        checkFile(dataset, bytes, metadata, reference, r, seen, memory)
        if (memory) expect([memory.lent > 0, memory.owned > 0], 'vectors were built in lent memory').toEqual([true, true])
      }

      const withBytes = dataset.fields.some(f => f.kind === 'bytes')
      expect(coverage).toMatchObject({ above32: true, above53: true, ...(withBytes ? { empty: true, long: true } : {}) })
      if (dataset.fields.some(f => f.kind === 'string' || f.kind === 'json')) expect(coverage.nonAscii).toBe(true)
      for (const f of storedFields(dataset)) {
        const column = columnOf(f)
        if (f.kind === 'bool') {
          expect([seen.rle.has(column), seen.plain.has(column)], `${column}: RLE and PLAIN booleans`).toEqual([true, true])
        } else {
          expect([seen.dictionary.has(column), seen.plain.has(column)], `${column}: dictionary and PLAIN chunks`).toEqual([true, true])
        }
        expect(seen.multiPage.has(column), `${column}: a chunk of several pages`).toBe(true)
        if (f.nullable)
          expect([seen.someNull.has(column), seen.allNull.has(column)], `${column}: chunks with some and all rows null`).toEqual([
            true,
            true,
          ])
      }
    })
  }
})

describe('decodePages errors', () => {
  const r = mulberry32(7)
  const { bytes, metadata } = writePartition(logs, batchOf(logs, VARIANTS[0].groups.slice(0, 2), r), { from: 0, to: 1 }, VARIANTS[0].layout)
  const chunks = chunksOf(logs, bytes, metadata)

  it('refuses rows beyond the pages given', () => {
    const c = chunks.find(c => c.pages && c.pages.length > 2)!
    expect(() => decodePages(c.layout, c.data, 0, 0, c.rows + 1, c.dictionary)).toThrow(/asked for/)
    expect(() => decodePages(c.layout, c.data, 10, 0, 5, c.dictionary)).toThrow(/asked for/)
    const firstPage = c.data.subarray(0, Number(c.pages![1].offset) - Number(c.pages![0].offset))
    expect(() => decodePages(c.layout, firstPage, 0, 0, Number(c.pages![1].first_row_index) + 1, c.dictionary)).toThrow(/asked for/)
  })

  it('refuses a data page as a dictionary page', () => {
    const c = chunks.find(c => c.dictionary)!
    expect(() => decodeDictionary(c.layout, c.data)).toThrow(UnsupportedPageError)
  })
})

/** A reference RLE / bit-packed hybrid encoder, bit by bit. */
class HybridWriter {
  readonly bytes: number[] = []
  readonly values: number[] = []
  readonly width: number

  constructor(width: number) {
    this.width = width
  }

  private varint(n: number): void {
    while (n >= 0x80) {
      this.bytes.push((n & 0x7f) | 0x80)
      n = Math.floor(n / 128)
    }
    this.bytes.push(n)
  }

  rle(value: number, count: number): void {
    this.varint(count * 2)
    for (let i = 0; i < Math.ceil(this.width / 8); i++) this.bytes.push(Math.floor(value / 2 ** (8 * i)) & 0xff)
    for (let i = 0; i < count; i++) this.values.push(value)
  }

  /** Bit-packs `values`, padded with zeros to groups of 8 (only the last run may be padded). */
  packed(values: number[]): void {
    const groups = Math.ceil(values.length / 8)
    this.varint(groups * 2 + 1)
    const bits: number[] = []
    for (let i = 0; i < groups * 8; i++) {
      const v = values[i] ?? 0
      for (let b = 0; b < this.width; b++) bits.push(Math.floor(v / 2 ** b) % 2)
    }
    for (let i = 0; i < bits.length; i += 8) {
      let byte = 0
      for (let b = 0; b < 8; b++) byte |= bits[i + b] << b
      this.bytes.push(byte)
    }
    this.values.push(...values)
  }
}

describe('decodeHybrid', () => {
  for (const width of [1, 3, 8, 17, 24, 31]) {
    it(`decodes RLE and bit-packed runs of ${width}-bit values`, () => {
      const r = mulberry32(width)
      const max = 2 ** width - 1
      const value = () => pick(r, [0, max, Math.floor(r() * (max + 1)), Math.floor(r() * (max + 1))])
      const w = new HybridWriter(width)
      w.rle(max, 3)
      w.packed(Array.from({ length: 8 }, value))
      w.rle(0, 200)
      w.packed(Array.from({ length: 8 * 20 }, value))
      for (let i = 0; i < 30; i++) {
        if (r() < 0.5) w.rle(value(), 1 + Math.floor(r() * (r() < 0.1 ? 400 : 20)))
        else w.packed(Array.from({ length: 8 * (1 + Math.floor(r() * (r() < 0.1 ? 40 : 4))) }, value))
      }
      w.packed(Array.from({ length: 5 }, value))
      const prefix = [0xff, 0xee, 0xdd]
      const bytes = Uint8Array.from([...prefix, ...w.bytes, 0xab])
      const end = prefix.length + w.bytes.length
      const n = w.values.length

      const out = new Int32Array(n)
      decodeHybrid(bytes, prefix.length, end, width, out, n)
      expect(Array.from(out)).toEqual(w.values)

      for (const count of [0, 1, 3, 11, 203, Math.floor(n / 2), n - 1]) {
        const part = new Int32Array(count + 2).fill(-1)
        decodeHybrid(bytes, prefix.length, end, width, part, count)
        expect(Array.from(part.subarray(0, count)), `first ${count} values`).toEqual(w.values.slice(0, count))
        expect(Array.from(part.subarray(count)), 'nothing written past count').toEqual([-1, -1])
      }
      if (width <= 8) {
        const small = new Uint8Array(n)
        decodeHybrid(bytes, prefix.length, end, width, small, n)
        expect(Array.from(small)).toEqual(w.values)
      }
      expect(() => decodeHybrid(bytes, prefix.length, end, width, new Int32Array(n + 8 * 10), n + 8 * 10)).toThrow(/RLE run ended/)

      // gatherHybrid reads only the values asked for: every density, the first and last value
      for (const density of [0.005, 0.1, 0.7, 1]) {
        const at = Int32Array.from(Array.from({ length: n }, (_, i) => i).filter(i => i === 0 || i === n - 1 || r() < density))
        const got = new Int32Array(at.length).fill(-1)
        gatherHybrid(bytes, prefix.length, end, width, at, got)
        expect(Array.from(got), `${at.length} values picked`).toEqual(Array.from(at, i => w.values[i]))
      }
      expect(() => gatherHybrid(bytes, prefix.length, end, width, Int32Array.of(3, n + 8 * 10), new Int32Array(2))).toThrow(/RLE run ended/)
    })
  }
})

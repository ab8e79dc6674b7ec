/**
 * The declarations are the single source of truth: every field of the spec is declared with
 * the spec's output type, and every derivation (Parquet schema, filters, JSON, CSV, Arrow)
 * covers every field of every dataset.
 */
import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { EVM_DATASETS, blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { MOVE_DATASETS } from '../../src/datasets/move.ts'
import { DEX_DATASETS, dexTokens } from '../../src/datasets/dex.ts'
import { columnOf, isStored, type DatasetDecl, type FieldDecl } from '../../src/schema/dataset.ts'
import { KINDS, type Kind, type StoredValue } from '../../src/schema/kinds.ts'
import { batchOf, type RowBatch } from '../../src/columns/batch.ts'
import { parquetSchemaOf, storedFields } from '../../src/parquet/write.ts'
import { arrowSchemaOf } from '../../src/format/arrow.ts'
import { encodeRows } from '../../src/format/encode.ts'
import { sharedPath } from '../support/shared.ts'

const ALL: DatasetDecl[] = [...EVM_DATASETS, ...DEX_DATASETS, dexTokens, ...MOVE_DATASETS]

/** A record table of the spec: [field, type] rows under the given heading. */
function specTable(heading: string): [string, string][] {
  const spec = fs.readFileSync(sharedPath('spec', 'service-spec.md'), 'utf8')
  const start = spec.indexOf(heading)
  expect(start).toBeGreaterThan(0)
  const section = spec.slice(start + heading.length, spec.indexOf('\n### ', start + heading.length))
  return section
    .split('\n')
    .filter(l => l.startsWith('| ') && !l.startsWith('| Field') && !l.startsWith('|---'))
    .map(l => l.split('|').map(c => c.trim()))
    .map(cells => [cells[1], cells[2]])
}

/** The kinds that print as the spec's type. */
const SPEC_TYPE_KINDS: Record<string, Kind[]> = {
  integer: ['u64int'],
  'hex string': ['u64hex', 'u256hex', 'u256pad', 'bytes'],
  'hash string': ['hash'],
  'address string': ['address'],
  'address string or null': ['address'],
  'hash string or null': ['hash'],
  boolean: ['bool'],
  'null or string': ['string'],
}

describe('EVM declarations match the spec', () => {
  for (const [dataset, heading] of [
    [blocks, '### Block record (EVM)'],
    [transactions, '### Transaction record (EVM)'],
    [logs, '### Log record (EVM)'],
  ] as const) {
    it(`${dataset.name}: every spec field, in order, with its output type`, () => {
      const table = specTable(heading)
      const defaults = dataset.fields.filter(f => !f.extra)
      expect(defaults.map(f => f.name)).toEqual(table.map(([name]) => name))
      for (const [name, type] of table) {
        const field = dataset.fields.find(f => f.name === name)!
        expect(SPEC_TYPE_KINDS[type], `${name}: ${type}`).toContain(field.kind)
        if (type.endsWith('or null') || type.startsWith('null or')) expect(field.nullable, name).toBe(true)
      }
    })
  }

  it('keeps the spec conventions the issue names', () => {
    const kind = (d: DatasetDecl, n: string) => d.fields.find(f => f.name === n)
    expect(kind(transactions, 'value')?.kind).toBe('u256pad')
    expect(kind(transactions, 'raw')).toMatchObject({ virtual: 'null', nullable: true })
    for (const d of EVM_DATASETS) expect(kind(d, 'block_number')?.kind).toBe('u64hex')
    for (const n of ['v', 'type', 'transaction_index']) expect(kind(transactions, n)?.kind).toBe('u64int')
    expect(kind(blocks, 'timestamp')?.kind).toBe('u64int')
    expect(kind(transactions, 'to')?.nullable).toBe(true)
  })

  it('stores the extras peers ask for, outside the default field set', () => {
    const extra = (d: DatasetDecl) => d.fields.filter(f => f.extra).map(f => f.name)
    expect(extra(transactions)).toEqual(
      expect.arrayContaining(['block_timestamp', 'y_parity', 'access_list', 'chain_id', 'max_fee_per_blob_gas', 'blob_versioned_hashes']),
    )
    expect(extra(logs)).toContain('block_timestamp')
    expect(extra(blocks)).toEqual(
      expect.arrayContaining(['withdrawals_root', 'blob_gas_used', 'excess_blob_gas', 'parent_beacon_block_root']),
    )
  })
})

describe('every derivation covers every field of every dataset', () => {
  for (const dataset of ALL) {
    it(`${dataset.name}: names, range key and order columns are declared`, () => {
      const names = dataset.fields.map(f => f.name)
      expect(new Set(names).size).toBe(names.length)
      const columns = new Set(storedFields(dataset).map(columnOf))
      expect(columns.has(dataset.rangeKey)).toBe(true)
      for (const c of dataset.orderBy) expect(columns.has(c), c).toBe(true)
    })

    it(`${dataset.name}: Parquet schema has one typed column per stored field`, () => {
      const schema = parquetSchemaOf(dataset)
      const stored = storedFields(dataset)
      expect(schema[0].num_children).toBe(stored.length)
      for (const f of stored) {
        const element = schema.find(e => e.name === columnOf(f))!
        expect(element.type).toBe(KINDS[f.kind].parquet.type)
        expect(element.repetition_type).toBe(f.nullable ? 'OPTIONAL' : 'REQUIRED')
        if (KINDS[f.kind].width) expect(element.type_length).toBe(KINDS[f.kind].width)
      }
      for (const f of dataset.fields.filter(f => !isStored(f))) expect(schema.some(e => e.name === f.name)).toBe(false)
    })

    it(`${dataset.name}: Arrow schema lists every field with its nullability`, () => {
      const schema = arrowSchemaOf(dataset.fields)
      expect(schema.fields.map(f => f.name)).toEqual(dataset.fields.map(f => f.name))
      schema.fields.forEach((f, i) => expect(f.nullable).toBe(Boolean(dataset.fields[i].nullable)))
    })

    it(`${dataset.name}: CSV header and JSON keys are the field names`, async () => {
      const one = (f: FieldDecl) => (f.nullable ? null : sample(f.kind))
      const batch: RowBatch = batchOf(dataset.fields, Object.fromEntries(dataset.fields.map(f => [f.name, [one(f)]])), 1)
      const text = async (format: 'csv' | 'json') =>
        new Response(
          encodeRows(
            format,
            dataset.fields,
            (async function* () {
              yield batch
            })(),
          ),
        ).text()
      expect((await text('csv')).split('\n')[0]).toBe(dataset.fields.map(f => f.name).join(','))
      expect(Object.keys(JSON.parse(await text('json'))[0])).toEqual(dataset.fields.map(f => f.name))
    })

    it(`${dataset.name}: filter operators parse a value for every filterable kind`, () => {
      for (const f of dataset.fields) {
        const spec = KINDS[f.kind]
        if (spec.operators.length === 0) {
          expect(() => spec.parse('x')).toThrow()
          continue
        }
        expect(spec.toJson(spec.parse(sampleText(f.kind)))).toBeDefined()
      }
    })
  }
})

function sample(kind: Kind): StoredValue {
  return kind === 'json' ? '{}' : KINDS[kind].parse(sampleText(kind))
}

function sampleText(kind: Kind): string {
  switch (kind) {
    case 'u64hex':
    case 'u64int':
    case 'u256hex':
    case 'u256pad':
    case 'int':
      return '0x10'
    case 'hash':
    case 'address32':
      return '0x' + '11'.repeat(32)
    case 'address':
      return '0x' + '22'.repeat(20)
    case 'bytes':
      return '0x00ff'
    case 'bool':
      return 'true'
    default:
      return '{}'
  }
}

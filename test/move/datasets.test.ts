import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import { moveDecodedTransactions, moveTransactions, MOVE_DATASETS } from '../../src/datasets/move.ts'
import { parquetSchemaOf, storedFields } from '../../src/parquet/write.ts'
import { columnOf, type FieldDecl } from '../../src/schema/dataset.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { sharedPath } from '../support/shared.ts'

/** The spec's Move record, read from the spec itself: [field, type] in order. */
function specRecord(): [string, string][] {
  const spec = fs.readFileSync(sharedPath('spec', 'service-spec.md'), 'utf8')
  const section = spec.slice(spec.indexOf('### Transaction record (Move-VM chains'), spec.indexOf('Payload object:'))
  return [...section.matchAll(/^\| (\w+) \| ([^|]+?) \|/gm)].filter(m => m[1] !== 'Field').map(m => [m[1], m[2]])
}

function specDecodedAdditions(): string[] {
  const spec = fs.readFileSync(sharedPath('spec', 'service-spec.md'), 'utf8')
  const line = /Additional fields, all nullable and null in cases seen: ([^.]+)\./.exec(spec)
  return line ? line[1].split(',').map(s => s.trim()) : []
}

const KIND_OF_SPEC_TYPE: Record<string, string> = {
  integer: 'u64int',
  'hex string': 'u64hex',
  'hash string': 'hash',
  'address string': 'address32',
  string: 'string',
  array: 'json',
  object: 'json',
  'null or integer': 'u64int',
}

const defaults = (fields: readonly FieldDecl[]) => fields.filter(f => !f.extra)

describe('Move dataset declarations', () => {
  it('lists the spec record in order with its types', () => {
    const record = specRecord()
    expect(record).toHaveLength(24)
    expect(defaults(moveTransactions.fields).map(f => f.name)).toEqual(record.map(([name]) => name))
    for (const [name, type] of record) {
      const f = moveTransactions.fields.find(x => x.name === name)!
      // 'hex string' is a quantity (block_number) except for the authenticator, which is BCS bytes.
      expect([name, f.kind]).toEqual([name, name === 'authenticator' ? 'bytes' : KIND_OF_SPEC_TYPE[type]])
      if (type.startsWith('null or')) expect(f.nullable).toBe(true)
    }
    expect(moveTransactions.fields.find(f => f.name === 'chain')?.virtual).toBe('chain')
  })

  it('declares the decoded record: hex quantities, chain_id, and the additional fields', () => {
    const hexed = [
      'transaction_index',
      'version',
      'gas_used',
      'sequence_number',
      'max_gas_amount',
      'gas_unit_price',
      'expiration_timestamp_secs',
    ]
    const expected = [
      ...specRecord().map(([name]) => (name === 'tx_chain_id' ? 'chain_id' : name)),
      ...specDecodedAdditions(),
      'entry_function_decoded',
    ]
    expect(specDecodedAdditions()).toHaveLength(20)
    expect(
      defaults(moveDecodedTransactions.fields)
        .map(f => f.name)
        .sort(),
    ).toEqual(expected.sort())
    for (const name of hexed) expect(moveDecodedTransactions.fields.find(f => f.name === name)?.kind).toBe('u64hex')
    expect(moveDecodedTransactions.fields.find(f => f.name === 'timestamp')?.kind).toBe('u64int')
    expect(moveDecodedTransactions.fields.find(f => f.name === 'chain_id')).toMatchObject({ kind: 'u64int', column: 'tx_chain_id' })
    for (const name of specDecodedAdditions()) expect(moveDecodedTransactions.fields.find(f => f.name === name)?.nullable).toBe(true)
  })

  it('shares one storage: both declarations derive the same Parquet schema', () => {
    for (const d of MOVE_DATASETS)
      expect(d).toMatchObject({ family: 'move', storage: 'move_transactions', rangeKey: 'version', orderBy: ['version'] })
    expect(parquetSchemaOf(moveDecodedTransactions)).toEqual(parquetSchemaOf(moveTransactions))
  })

  it('maps the block number and transaction index onto the version column', () => {
    for (const d of MOVE_DATASETS) {
      expect(columnOf(d.fields.find(f => f.name === 'block_number')!)).toBe('version')
      expect(columnOf(d.fields.find(f => f.name === 'transaction_index')!)).toBe('version')
      expect(storedFields(d).filter(f => columnOf(f) === 'version')).toHaveLength(1)
    }
  })

  it('uses only known kinds and unique output names', () => {
    for (const d of MOVE_DATASETS) {
      expect(new Set(d.fields.map(f => f.name)).size).toBe(d.fields.length)
      for (const f of d.fields) expect(KINDS[f.kind]).toBeDefined()
    }
  })
})

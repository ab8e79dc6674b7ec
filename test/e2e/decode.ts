/**
 * Reads every output format of the API back into spec records (the API's JSON
 * shape), using only the spec types of test/e2e/reference.ts, so the four formats
 * and third-party readers can be compared with the JSON output and the reference.
 *
 * Arrow carries typed columns, not the spec's text. How each spec type is sent in
 * Arrow and read back to the JSON value:
 *
 * | spec type                       | Arrow type              | back to JSON                     |
 * |---------------------------------|-------------------------|----------------------------------|
 * | int (JSON number)               | Uint64                  | the number                       |
 * | u64 (hex quantity)              | Uint64                  | `0x` + minimal hex               |
 * | u256 (hex quantity)             | FixedSizeBinary[32]     | big-endian → `0x` + minimal hex  |
 * | pad (`value`), hash             | FixedSizeBinary[32]     | `0x` + 64 hex digits             |
 * | address                         | FixedSizeBinary[20]     | `0x` + 40 hex digits             |
 * | bytes                           | Binary                  | `0x` + hex                       |
 * | bool                            | Bool                    | the boolean                      |
 * | string, json                    | Utf8                    | the text; json parsed            |
 *
 * Nullable fields are nullable Arrow fields; null is null everywhere.
 */
import { tableFromIPC } from 'apache-arrow'
import { parseCsv } from '../format/decode.ts'
import type { SpecField, SpecRecord, SpecType } from './reference.ts'

/** The Arrow type (as apache-arrow prints it) that carries each spec type. */
export const ARROW_TYPE: Record<SpecType, string> = {
  int: 'Uint64',
  u64: 'Uint64',
  u256: 'FixedSizeBinary[32]',
  pad: 'FixedSizeBinary[32]',
  hash: 'FixedSizeBinary[32]',
  address: 'FixedSizeBinary[20]',
  bytes: 'Binary',
  bool: 'Bool',
  string: 'Utf8',
  json: 'Utf8',
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
const hexOf = (bytes: Uint8Array) => '0x' + Buffer.from(bytes).toString('hex')

function checkKeys(records: SpecRecord[], fields: readonly SpecField[], format: string): SpecRecord[] {
  const names = fields.map(x => x.name).join(',')
  records.forEach((r, i) => {
    if (Object.keys(r).join(',') !== names) throw new Error(`${format} record ${i} has keys ${Object.keys(r).join(',')}, expected ${names}`)
  })
  return records
}

/** `format=json`: one JSON array. */
export function fromJson(bytes: Uint8Array, fields: readonly SpecField[]): SpecRecord[] {
  const parsed = JSON.parse(text(bytes))
  if (!Array.isArray(parsed)) throw new Error('json output is not an array')
  return checkKeys(parsed, fields, 'json')
}

/** `format=json_stream`: one JSON object per line, each line ended by `\n`. */
export function fromJsonLines(bytes: Uint8Array, fields: readonly SpecField[]): SpecRecord[] {
  const t = text(bytes)
  if (t === '') return []
  if (!t.endsWith('\n')) throw new Error('json_stream output does not end with a newline')
  return checkKeys(
    t
      .slice(0, -1)
      .split('\n')
      .map((line: string) => JSON.parse(line)),
    fields,
    'json_stream',
  )
}

/** One CSV cell's text (null for a null cell) as the JSON value of its field. */
export function fromCell(type: SpecType, cell: string | null): unknown {
  if (cell === null) return null
  switch (type) {
    case 'int':
      if (!/^[0-9]+$/.test(cell)) throw new Error(`int cell ${JSON.stringify(cell)}`)
      return Number(cell)
    case 'bool':
      if (cell !== 'true' && cell !== 'false') throw new Error(`bool cell ${JSON.stringify(cell)}`)
      return cell === 'true'
    case 'json':
      return JSON.parse(cell)
    default:
      return cell
  }
}

/** A row of cells as a record. */
export const fromCells = (cells: readonly (string | null)[], fields: readonly SpecField[]): SpecRecord =>
  Object.fromEntries(fields.map((x, j) => [x.name, fromCell(x.type, cells[j])]))

/** `format=csv`: a header row of the field names, then one row per record; an unquoted empty cell is null. */
export function fromCsv(bytes: Uint8Array, fields: readonly SpecField[]): SpecRecord[] {
  const [header, ...rows] = parseCsv(text(bytes))
  const names = header.map(c => c.text).join(',')
  if (names !== fields.map(x => x.name).join(',')) throw new Error(`csv header ${names}`)
  return rows.map((cells, i) => {
    if (cells.length !== fields.length) throw new Error(`csv row ${i} has ${cells.length} cells`)
    return fromCells(
      cells.map(c => (c.text === '' && !c.quoted ? null : c.text)),
      fields,
    )
  })
}

function fromArrowValue(type: SpecType, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (type) {
    case 'int':
      return Number(v as bigint)
    case 'u64':
      return '0x' + (v as bigint).toString(16)
    case 'u256':
      return '0x' + BigInt(hexOf(v as Uint8Array)).toString(16)
    case 'pad':
    case 'hash':
    case 'address':
    case 'bytes':
      return hexOf(v as Uint8Array)
    case 'json':
      return JSON.parse(v as string)
    default:
      return v
  }
}

/** `format=arrow`: an Arrow IPC stream whose schema is checked against ARROW_TYPE and nullability. */
export function fromArrow(bytes: Uint8Array, fields: readonly SpecField[]): SpecRecord[] {
  const table = tableFromIPC(bytes)
  const schema = table.schema.fields.map(x => `${x.name}:${String(x.type)}${x.nullable ? '?' : ''}`)
  const want = fields.map(x => `${x.name}:${ARROW_TYPE[x.type]}${x.nullable ? '?' : ''}`)
  if (schema.join(',') !== want.join(',')) throw new Error(`arrow schema ${schema.join(',')}, expected ${want.join(',')}`)
  const columns = fields.map(x => table.getChild(x.name)!)
  return Array.from({ length: table.numRows }, (_, i) =>
    Object.fromEntries(fields.map((x, j) => [x.name, fromArrowValue(x.type, columns[j].get(i))])),
  )
}

/** The decoder of each `format=` value. */
export const READERS = {
  json: fromJson,
  json_stream: fromJsonLines,
  csv: fromCsv,
  arrow: fromArrow,
} as const

/** The `format=` values. */
export type FormatName = keyof typeof READERS

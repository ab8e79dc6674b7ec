/**
 * Filter cases generated from the reference records: for every field of every
 * dataset, equality with a value that exists (in each of its text forms), a list of
 * two existing values and one absent, the order operators on numbers in decimal
 * and hex, `%00` on nullable fields, and the refusals (an order operator on a field
 * without order, `%00` on a field that is never null, any filter on a JSON field).
 * Each case carries what to expect: the reference filtered in plain JS, or a 400
 * naming the parameter.
 */
import { isDeepStrictEqual } from 'node:util'
import {
  matches,
  NUL,
  NUMERIC_TYPES,
  ORDERED_TYPES,
  SPEC_FIELDS,
  type DatasetName,
  type Op,
  type SpecField,
  type SpecRecord,
} from './reference.ts'

/** One filter parameter of a case. */
export interface Filter {
  /** The parameter name, e.g. `value__gte`. */
  name: string
  field: SpecField
  op: Op
  /** Values as the server sees them after URL decoding (`NUL` for `%00`). */
  texts: string[]
}

/** A request's filters and what it must give back. */
export interface FilterCase {
  dataset: DatasetName
  filters: Filter[]
  /** The query-string part of the filters, as sent. */
  query: string
  /** The records that must come back, in order; or the parameter a 400 must name. */
  expect: { records: SpecRecord[] } | { refused: string }
}

const SUFFIX: Record<Op, string> = { eq: '', in: '__in', gte: '__gte', lte: '__lte' }

const encode = (texts: readonly string[]) => texts.map(encodeURIComponent).join(',')

function filter(field: SpecField, op: Op, texts: string[]): Filter {
  return { name: field.name + SUFFIX[op], field, op, texts }
}

function rowsCase(dataset: DatasetName, rows: readonly SpecRecord[], filters: Filter[]): FilterCase {
  return {
    dataset,
    filters,
    query: filters.map(x => `${x.name}=${encode(x.texts)}`).join('&'),
    expect: { records: rows.filter(r => filters.every(x => matches(x.field, x.op, x.texts, r))) },
  }
}

function refusedCase(dataset: DatasetName, x: Filter): FilterCase {
  return { dataset, filters: [x], query: `${x.name}=${encode(x.texts)}`, expect: { refused: x.name } }
}

/** The non-null values of a field, distinct and in order (numbers by value). */
function distinctValues(field: SpecField, rows: readonly SpecRecord[]): unknown[] {
  const key = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v))
  const seen = new Map<string, unknown>()
  for (const r of rows) if (r[field.name] !== null) seen.set(key(r[field.name]), r[field.name])
  const values = [...seen.values()]
  if (NUMERIC_TYPES.has(field.type))
    return values.sort((a, b) => (BigInt(a as string) < BigInt(b as string) ? -1 : BigInt(a as string) > BigInt(b as string) ? 1 : 0))
  return values.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
}

/** The text forms of one value a filter must accept alike: decimal and hex numbers, upper-case hex digits. */
function textForms(field: SpecField, v: unknown): string[] {
  if (NUMERIC_TYPES.has(field.type)) {
    const n = BigInt(v as string | number)
    const forms = [n.toString(), '0x' + n.toString(16)]
    return field.type === 'pad' ? [...forms, v as string] : forms
  }
  if (field.type === 'hash' || field.type === 'address' || field.type === 'bytes') return ['0x' + (v as string).slice(2).toUpperCase()]
  return [String(v)]
}

/** A value of the field's type that no record holds (undefined for bool: both values may exist). */
function absentValue(field: SpecField, values: readonly unknown[]): string | undefined {
  const has = new Set(values.map(v => String(v).toLowerCase()))
  const firstAbsent = (candidates: string[]) => candidates.find(c => !has.has(c.toLowerCase()))
  switch (field.type) {
    case 'int':
    case 'u64':
    case 'u256':
    case 'pad':
      return (values.reduce<bigint>((m, v) => (BigInt(v as string) > m ? BigInt(v as string) : m), 0n) + 1n).toString()
    case 'hash':
      return firstAbsent(['0x' + 'ee'.repeat(32), '0x' + 'dd'.repeat(32)])
    case 'address':
      return firstAbsent(['0x' + 'ee'.repeat(20), '0x' + 'dd'.repeat(20)])
    case 'bytes':
      return firstAbsent(['0xeeee', '0xdddd'])
    case 'string':
      return firstAbsent(['absent', 'missing'])
    default:
      return undefined
  }
}

const at = <T>(xs: readonly T[], q: number): T => xs[Math.min(xs.length - 1, Math.floor(xs.length * q))]

/** Every case of one field. */
function fieldCases(dataset: DatasetName, field: SpecField, rows: readonly SpecRecord[]): FilterCase[] {
  if (field.type === 'json') return [refusedCase(dataset, filter(field, 'eq', ['1']))]
  const values = distinctValues(field, rows)
  const absent = absentValue(field, values)
  const out: FilterCase[] = []
  const some = values.length ? at(values, 0.5) : undefined

  // F=v: every text form of one existing value (or an absent one when the field is always null).
  for (const t of some === undefined ? [absent!] : textForms(field, some)) out.push(rowsCase(dataset, rows, [filter(field, 'eq', [t])]))

  // F__in=a,b,absent
  const listed =
    field.type === 'bool'
      ? ['false', 'true']
      : [...new Set([values[0], values[values.length - 1]].filter(v => v !== undefined))].map(v => textForms(field, v)[0])
  out.push(rowsCase(dataset, rows, [filter(field, 'in', absent === undefined ? listed : [...listed, absent])]))

  if (ORDERED_TYPES.has(field.type)) {
    const forms = some === undefined ? [NUMERIC_TYPES.has(field.type) ? '0' : (absent ?? 'a')] : textForms(field, some)
    for (const op of ['gte', 'lte'] as const) for (const t of forms) out.push(rowsCase(dataset, rows, [filter(field, op, [t])]))
    if (values.length > 2) {
      const low = textForms(field, at(values, 0.25))[0]
      const high = textForms(field, at(values, 0.75)).at(-1)!
      out.push(rowsCase(dataset, rows, [filter(field, 'gte', [low]), filter(field, 'lte', [high])]))
    }
  } else {
    out.push(refusedCase(dataset, filter(field, 'gte', [some === undefined ? (absent ?? 'true') : textForms(field, some)[0]])))
  }

  if (field.nullable) {
    out.push(rowsCase(dataset, rows, [filter(field, 'eq', [NUL])]))
    out.push(rowsCase(dataset, rows, [filter(field, 'in', [NUL])]))
    if (some !== undefined) out.push(rowsCase(dataset, rows, [filter(field, 'in', [NUL, textForms(field, some)[0]])]))
  } else {
    out.push(refusedCase(dataset, filter(field, 'in', [NUL])))
  }
  return out
}

/** Every case of every field of a dataset, extra fields included. */
export function filterCases(dataset: DatasetName, rows: readonly SpecRecord[]): FilterCase[] {
  return SPEC_FIELDS[dataset].flatMap(field => fieldCases(dataset, field, rows))
}

const show = (v: unknown) => {
  const s = JSON.stringify(v)
  return s !== undefined && s.length > 80 ? s.slice(0, 77) + '...' : s
}

/**
 * The differences between the records a request gave and those expected, field by
 * field and in order, each line naming `what` (the request). Empty when they agree.
 */
export function differences(what: string, got: readonly SpecRecord[], want: readonly SpecRecord[], max = 5): string[] {
  const out: string[] = []
  if (got.length !== want.length) out.push(`${what}: ${got.length} records, expected ${want.length}`)
  for (let i = 0; i < Math.min(got.length, want.length) && out.length < max; i++) {
    const names = new Set([...Object.keys(want[i]), ...Object.keys(got[i])])
    for (const name of names) {
      if (out.length >= max) break
      if (!isDeepStrictEqual(got[i][name], want[i][name])) {
        out.push(`${what}: record ${i} field ${name} is ${show(got[i][name])}, expected ${show(want[i][name])}`)
      }
    }
  }
  return out
}

/**
 * Query-string parsing and validation for the data endpoints: a pure function from
 * the parameters, the dataset and the host's chains to a `QuerySpec`. Every refusal
 * is a 400 naming the parameter. Filters are derived from the dataset declaration:
 * each field's kind decides which operators it takes and how a value parses.
 */
import type { Chain } from '../chains/registry.ts'
import { findChain } from '../chains/registry.ts'
import type { DatasetDecl, FieldDecl } from '../schema/dataset.ts'
import { InvalidValueError, KINDS, parseUnsigned, type Operator, type StoredValue } from '../schema/kinds.ts'
import type { Predicate, QuerySpec } from '../query/types.ts'
import { invalidParameter, quote } from './errors.ts'
import { hostsOf } from './hosts.ts'

/** Most values one `F__in` list may hold. */
export const MAX_IN_VALUES = 1_000
/** Largest `limit`: a limited result is held in memory until its resume point is known. */
export const MAX_LIMIT = 10_000
/** Largest block range `format=json` serves (it is one JSON array; the other formats stream any range). */
export const MAX_JSON_BLOCK_RANGE = 10_000

/** The `%00` marker: a filter value that is exactly NUL selects null. */
export const NULL_MARKER = '\u0000'

/** Parameters that are not filters. `format` is read by content negotiation. */
const RESERVED = new Set(['chains', 'from_block', 'to_block', 'fields', 'limit', 'format'])

/** Move chains: 'version' is the block number, and a transaction's kind has two more names. */
const MOVE_PARAM_ALIASES: Record<string, string> = { from_version: 'from_block', to_version: 'to_block' }
const MOVE_FIELD_ALIASES: Record<string, string> = { transaction_type: 'kind', type: 'kind' }

const SUFFIXES: Record<string, Operator> = { in: 'in', gte: 'gte', lte: 'lte' }
const OPERATOR_SYNTAX: Record<Operator, string> = { eq: 'F=', in: 'F__in=', gte: 'F__gte=', lte: 'F__lte=' }

export interface ParseContext {
  dataset: DatasetDecl
  /** The chains the request's host serves (all of one family). */
  chains: readonly Chain[]
  /** Every chain of the registry, to say where another host's chain is served. */
  allChains?: readonly Chain[]
}

/** Each parameter once: a repeated name (or two aliases of one name) is refused. */
function singleValues(params: URLSearchParams, canonical: (name: string) => string): Map<string, { name: string; value: string }> {
  const out = new Map<string, { name: string; value: string }>()
  for (const [name, value] of params) {
    const key = canonical(name)
    const seen = out.get(key)
    if (seen) {
      const how = seen.name === name ? `${name} is given more than once` : `${seen.name} and ${name} name the same filter`
      throw invalidParameter(name, `${how}; give it once (lists go in one comma-separated __in value)`, 'duplicate_parameter')
    }
    out.set(key, { name, value })
  }
  return out
}

/** Splits `name__op` into a field and an operator (`eq` without a suffix), resolving Move aliases. */
export function splitFilterName(name: string, dataset: DatasetDecl): { field: string; op: Operator } {
  const m = /^(.+?)__([a-z]+)$/.exec(name)
  const raw = m && SUFFIXES[m[2]] ? { field: m[1], op: SUFFIXES[m[2]] } : { field: name, op: 'eq' as Operator }
  const has = (n: string) => dataset.fields.some(f => f.name === n)
  const alias = dataset.family === 'move' ? MOVE_FIELD_ALIASES[raw.field] : undefined
  return alias && !has(raw.field) && has(alias) ? { field: alias, op: raw.op } : raw
}

function canonicalName(name: string, dataset: DatasetDecl): string {
  const param = dataset.family === 'move' ? (MOVE_PARAM_ALIASES[name] ?? name) : name
  if (RESERVED.has(param)) return param
  const { field, op } = splitFilterName(name, dataset)
  return `${field}__${op}`
}

/** The one chain a request names, within the host's chains. */
export function parseChain(value: string | undefined, ctx: Pick<ParseContext, 'chains' | 'allChains'>): Chain {
  const valid = ctx.chains.map(c => `${c.code} (${c.id}, ${c.name})`).join(', ')
  if (value === undefined || value.trim() === '')
    throw invalidParameter('chains', `chains is required; valid values: ${valid}`, 'missing_parameter')
  if (value.includes(',')) throw invalidParameter('chains', `one chain per request; valid values: ${valid}`)
  const family = ctx.chains[0]?.family ?? 'evm'
  const chain = findChain(family, value, ctx.chains)
  if (chain) return chain
  // Ids collide across families: name every chain the value could mean, each with its host.
  const elsewhere = (ctx.allChains ?? []).filter(c => !ctx.chains.includes(c) && findChain(c.family, value, [c]))
  const hint = elsewhere.length ? ` (${elsewhere.map(c => `${c.code} is served at ${hostsOf(c)}`).join('; ')})` : ''
  throw invalidParameter('chains', `unknown chain ${quote(value)} on this host${hint}; valid values: ${valid}`)
}

/** A range bound: decimal, 0x-hex or `latest` (any case). */
export function parseBlockBound(value: string | undefined, parameter: string): number | 'latest' {
  if (value === undefined || value.toLowerCase() === 'latest') return 'latest'
  try {
    return Number(parseUnsigned(value, BigInt(Number.MAX_SAFE_INTEGER)))
  } catch (err) {
    if (err instanceof InvalidValueError)
      throw invalidParameter(parameter, `${parameter}: expected a block number (decimal or 0x-hex) or latest, got ${quote(value)}`)
    throw err
  }
}

/** `fields=a,b,c`: output fields in the order given, extras included; default: every non-extra field. */
export function parseFields(value: string | undefined, dataset: DatasetDecl): FieldDecl[] {
  if (value === undefined) return dataset.fields.filter(f => !f.extra)
  const out: FieldDecl[] = []
  for (const raw of value.split(',')) {
    const name = raw.trim()
    const field = dataset.fields.find(f => f.name === name)
    if (!field) {
      throw invalidParameter(
        'fields',
        `unknown field ${quote(raw)} in fields; fields of ${dataset.path}: ${dataset.fields.map(f => f.name).join(', ')}`,
      )
    }
    if (!out.includes(field)) out.push(field)
  }
  return out
}

/** `limit=`: a positive decimal integer up to MAX_LIMIT. */
export function parseLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  if (!/^[0-9]{1,16}$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIMIT) {
    throw invalidParameter('limit', `limit: expected a whole number from 1 to ${MAX_LIMIT}, got ${quote(value)}`)
  }
  return Number(value)
}

/** One filter parameter, validated against the field's kind and normalised. */
export function parsePredicate(name: string, value: string, dataset: DatasetDecl): Predicate {
  const { field: fieldName, op } = splitFilterName(name, dataset)
  const field = dataset.fields.find(f => f.name === fieldName)
  if (!field) {
    const known = dataset.fields.find(f => name.startsWith(f.name + '__'))
    throw invalidParameter(
      name,
      known
        ? `unknown operator in ${name}; filters are ${Object.values(OPERATOR_SYNTAX).join(', ')}`
        : `unknown parameter ${quote(name)}: ${dataset.path} has no field ${quote(fieldName)}`,
      'unknown_parameter',
    )
  }
  const kind = KINDS[field.kind]
  if (!kind.operators.includes(op)) {
    const allowed = kind.operators.map(o => OPERATOR_SYNTAX[o].replace('F', field.name))
    throw invalidParameter(name, allowed.length ? `${field.name} takes only ${allowed.join(', ')}` : `${field.name} cannot be filtered`)
  }
  const texts = op === 'in' ? value.split(',') : [value]
  if (texts.length > MAX_IN_VALUES)
    throw invalidParameter(name, `${name} has ${texts.length} values; at most ${MAX_IN_VALUES}`, 'too_many_values')
  const values = texts.map((text): StoredValue | null => {
    if (text === NULL_MARKER) {
      if (op !== 'eq' && op !== 'in')
        throw invalidParameter(name, `${name}: null (%00) only works with ${field.name}= and ${field.name}__in=`)
      if (!field.nullable) throw invalidParameter(name, `${name}: ${field.name} is never null`)
      return null
    }
    try {
      return kind.parse(text)
    } catch (err) {
      if (!(err instanceof InvalidValueError)) throw err
      const hint = field.name === 'chain' ? ' (the chain is chosen with chains=)' : ''
      throw invalidParameter(name, `${name}: ${err.message.length > 200 ? err.message.slice(0, 200) + '…' : err.message}${hint}`)
    }
  })
  const allowed = field.values
  if (allowed && (op === 'eq' || op === 'in')) {
    const outside = values.find(v => v !== null && !allowed.includes(String(v)))
    if (outside !== undefined)
      throw invalidParameter(name, `${name}: ${quote(String(outside))} is not a ${field.name}; the values are ${allowed.join(', ')}`)
  }
  return { field, op, values }
}

/**
 * Turns a data endpoint's query string into a QuerySpec. `format` is left to
 * negotiation; a from_block above to_block, an unknown parameter or a bad value
 * is a 400 naming the parameter.
 */
export function parseDataQuery(params: URLSearchParams, ctx: ParseContext): QuerySpec {
  const { dataset } = ctx
  const byKey = singleValues(params, name => canonicalName(name, dataset))
  const get = (key: string) => byKey.get(key)
  const chain = parseChain(get('chains')?.value, ctx)
  const fromParam = get('from_block')
  const toParam = get('to_block')
  const from = parseBlockBound(fromParam?.value, fromParam?.name ?? 'from_block')
  const to = parseBlockBound(toParam?.value, toParam?.name ?? 'to_block')
  if (typeof from === 'number' && typeof to === 'number' && from > to) {
    throw invalidParameter(
      fromParam?.name ?? 'from_block',
      `${fromParam?.name ?? 'from_block'} (${from}) is above ${toParam?.name ?? 'to_block'} (${to})`,
      'invalid_range',
    )
  }
  const fields = parseFields(get('fields')?.value, dataset)
  const limit = parseLimit(get('limit')?.value)
  const predicates: Predicate[] = []
  for (const [key, { name, value }] of byKey) {
    if (RESERVED.has(key)) continue
    predicates.push(parsePredicate(name, value, dataset))
  }
  return { chain, dataset, from, to, predicates, fields, ...(limit === undefined ? {} : { limit }) }
}

/** Blocks in a resolved range, for the json range limit. */
export const blockCount = (range: readonly [number, number]): number => range[1] - range[0] + 1

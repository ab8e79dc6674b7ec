/**
 * Argument bytes without an ABI. The REST JSON of an argument leaves a few
 * encodings possible (a decimal string is a u64, u128, u256 or a String; `0x…` is
 * an address, bytes or a String…); the transaction hash tells which one the chain
 * signed. This lists the candidates, most likely first; `bcs.ts` keeps the one
 * whose hash matches. Used when a module's ABI is missing or no longer fits.
 */
import { AccountAddress, Serializer } from '@aptos-labs/ts-sdk'
import { bytesToHex, hexToBytes } from '../schema/hex.ts'

type Scalar =
  'bool' | 'u8' | 'u16' | 'u32' | 'u64' | 'u128' | 'u256' | 'i8' | 'i16' | 'i32' | 'i64' | 'i128' | 'i256' | 'address' | 'bytes' | 'string'

/** A guessed type: a scalar, a vector (`of: null` while only empty vectors were seen), or ordered fields. */
export type Guess = { t: Scalar } | { t: 'vector'; of: Guess | null } | { t: 'fields'; fields: [string, Guess][] }

/** Guesses kept per value, so nested structures stay small. */
const MAX_GUESSES = 16

const key = (g: Guess | null): string =>
  g === null
    ? '?'
    : g.t === 'vector'
      ? `v<${key(g.of)}>`
      : g.t === 'fields'
        ? `{${g.fields.map(([n, f]) => `${n}:${key(f)}`).join(',')}}`
        : g.t

function dedupe(list: Guess[]): Guess[] {
  const seen = new Set<string>()
  return list.filter(g => !seen.has(key(g)) && (seen.add(key(g)), true)).slice(0, MAX_GUESSES)
}

/** The more specific of two guesses that agree, or null when they cannot be one type. */
function unify(a: Guess | null, b: Guess | null): Guess | null {
  if (a === null) return b
  if (b === null) return a
  if (a.t === 'vector' && b.t === 'vector') {
    if (a.of === null || b.of === null) return { t: 'vector', of: a.of ?? b.of }
    const of = unify(a.of, b.of)
    return of && { t: 'vector', of }
  }
  if (a.t === 'fields' && b.t === 'fields') {
    if (a.fields.length !== b.fields.length) return null
    const fields: [string, Guess][] = []
    for (let i = 0; i < a.fields.length; i++) {
      if (a.fields[i][0] !== b.fields[i][0]) return null
      const f = unify(a.fields[i][1], b.fields[i][1])
      if (!f) return null
      fields.push([a.fields[i][0], f])
    }
    return { t: 'fields', fields }
  }
  return a.t === b.t ? a : null
}

const U8_MAX = 255
const U16_MAX = 65535
const U32_MAX = 4294967295

/** Types a REST JSON value can be an encoding of, most likely first. */
export function guesses(v: unknown): Guess[] {
  if (typeof v === 'boolean') return [{ t: 'bool' }]
  if (typeof v === 'number' && Number.isInteger(v)) {
    if (v >= 0) return (['u8', 'u16', 'u32'] as const).filter((_, i) => v <= [U8_MAX, U16_MAX, U32_MAX][i]).map(t => ({ t }))
    return (['i8', 'i16', 'i32'] as const).filter((_, i) => v >= [-128, -32768, -2147483648][i]).map(t => ({ t }))
  }
  if (typeof v === 'string') {
    if (/^\d+$/.test(v)) return [{ t: 'u64' }, { t: 'u128' }, { t: 'u256' }, { t: 'string' }]
    if (/^-\d+$/.test(v)) return [{ t: 'i64' }, { t: 'i128' }, { t: 'i256' }, { t: 'string' }]
    const hex = /^0x([0-9a-fA-F]*)$/.exec(v)?.[1]
    if (hex !== undefined) {
      const address = hex.length >= 1 && hex.length <= 64
      const bytes = hex.length % 2 === 0
      const order: Scalar[] = hex.length === 64 ? ['address', 'bytes'] : ['bytes', 'address']
      return [...order.filter(t => (t === 'address' ? address : bytes)).map(t => ({ t })), { t: 'string' as const }]
    }
    return [{ t: 'string' }]
  }
  if (Array.isArray(v)) {
    let of: (Guess | null)[] = [null]
    for (const item of v) {
      const next: Guess[] = []
      for (const a of of)
        for (const b of guesses(item)) {
          const u = unify(a, b)
          if (u) next.push(u)
        }
      of = dedupe(next)
      if (of.length === 0) return []
    }
    return dedupe(of.map(g => ({ t: 'vector', of: g })))
  }
  if (v !== null && typeof v === 'object') {
    let out: [string, Guess][][] = [[]]
    for (const [name, value] of Object.entries(v)) {
      const gs = guesses(value)
      out = out.flatMap(fields => gs.map(g => [...fields, [name, g] as [string, Guess]])).slice(0, MAX_GUESSES)
      if (out.length === 0) return []
    }
    return out.map(fields => ({ t: 'fields', fields }))
  }
  return []
}

function write(s: Serializer, g: Guess, v: unknown): void {
  switch (g.t) {
    case 'bool':
      return s.serializeBool(v as boolean)
    case 'u8':
      return s.serializeU8(Number(v))
    case 'u16':
      return s.serializeU16(Number(v))
    case 'u32':
      return s.serializeU32(Number(v))
    case 'u64':
      return s.serializeU64(BigInt(v as string))
    case 'u128':
      return s.serializeU128(BigInt(v as string))
    case 'u256':
      return s.serializeU256(BigInt(v as string))
    case 'i8':
      return s.serializeI8(Number(v))
    case 'i16':
      return s.serializeI16(Number(v))
    case 'i32':
      return s.serializeI32(Number(v))
    case 'i64':
      return s.serializeI64(BigInt(v as string))
    case 'i128':
      return s.serializeI128(BigInt(v as string))
    case 'i256':
      return s.serializeI256(BigInt(v as string))
    case 'address':
      return AccountAddress.fromString(v as string, { maxMissingChars: 63 }).serialize(s)
    case 'bytes':
      return s.serializeBytes(hexToBytes(v as string))
    case 'string':
      return s.serializeStr(v as string)
    case 'vector': {
      const items = v as unknown[]
      s.serializeU32AsUleb128(items.length)
      for (const item of items) write(s, g.of as Guess, item)
      return
    }
    case 'fields':
      for (const [name, f] of g.fields) write(s, f, (v as Record<string, unknown>)[name])
  }
}

/** Distinct BCS encodings of one argument, most likely first (an empty vector has one). */
export function argumentCandidates(v: unknown): Uint8Array[] {
  const seen = new Set<string>()
  const out: Uint8Array[] = []
  for (const g of guesses(v)) {
    const s = new Serializer()
    try {
      write(s, g, v)
    } catch {
      continue
    }
    const bytes = s.toUint8Array()
    const k = bytesToHex(bytes)
    if (!seen.has(k)) {
      seen.add(k)
      out.push(bytes)
    }
  }
  return out
}

/**
 * Combinations of one candidate per argument, in order of the sum of their ranks
 * (all first choices first), at most `limit` of them.
 */
export function* combinations<T>(choices: readonly (readonly T[])[], limit: number): Generator<T[]> {
  if (choices.some(c => c.length === 0)) return
  const maxSum = choices.reduce((n, c) => n + c.length - 1, 0)
  let produced = 0
  for (let sum = 0; sum <= maxSum; sum++) {
    for (const idx of indexTuples(
      choices.map(c => c.length),
      sum,
    )) {
      yield idx.map((i, k) => choices[k][i])
      if (++produced >= limit) return
    }
  }
}

function* indexTuples(sizes: readonly number[], sum: number, at = 0): Generator<number[]> {
  if (at === sizes.length) {
    if (sum === 0) yield []
    return
  }
  for (let i = 0; i < sizes[at] && i <= sum; i++) {
    for (const rest of indexTuples(sizes, sum - i, at + 1)) yield [i, ...rest]
  }
}

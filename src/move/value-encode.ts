/**
 * BCS of a Move value given in the REST API's JSON form, for a known type: how an
 * entry function's `arguments` become the `args` bytes the transaction was signed
 * over. u64 and wider are decimal strings, `vector<u8>` is 0x-hex, strings are
 * JSON strings, structs are objects with their fields in declaration order.
 */
import { AccountAddress, Serializer, type TypeTag, type TypeTagStruct } from '@aptos-labs/ts-sdk'
import type { AbiSource } from './abi-cache.ts'
import { structLayout } from './layouts.ts'
import { primitiveOf, structOf, typeToString, vectorOf } from './type-tags.ts'
import { hexToBytes } from '../schema/hex.ts'

/** A JSON value that does not fit its type. */
export class ValueShapeError extends Error {}

const fail = (tag: TypeTag, v: unknown): never => {
  throw new ValueShapeError(`${JSON.stringify(v)?.slice(0, 80)} is not a ${typeToString(tag)}`)
}

function integer(tag: TypeTag, v: unknown, min: bigint, max: bigint): bigint {
  let n: bigint
  if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v)
  else if (typeof v === 'string' && /^-?\d+$/.test(v)) n = BigInt(v)
  else return fail(tag, v)
  if (n < min || n > max) fail(tag, v)
  return n
}

const unsigned = (bits: number) => (1n << BigInt(bits)) - 1n
const signedMin = (bits: number) => -(1n << BigInt(bits - 1))
const signedMax = (bits: number) => (1n << BigInt(bits - 1)) - 1n

const INTEGERS: Record<string, [min: bigint, max: bigint]> = {
  u8: [0n, unsigned(8)],
  u16: [0n, unsigned(16)],
  u32: [0n, unsigned(32)],
  u64: [0n, unsigned(64)],
  u128: [0n, unsigned(128)],
  u256: [0n, unsigned(256)],
  i8: [signedMin(8), signedMax(8)],
  i16: [signedMin(16), signedMax(16)],
  i32: [signedMin(32), signedMax(32)],
  i64: [signedMin(64), signedMax(64)],
  i128: [signedMin(128), signedMax(128)],
  i256: [signedMin(256), signedMax(256)],
}

function encodeInteger(s: Serializer, name: string, n: bigint): void {
  switch (name) {
    case 'u8':
      return s.serializeU8(Number(n))
    case 'u16':
      return s.serializeU16(Number(n))
    case 'u32':
      return s.serializeU32(Number(n))
    case 'u64':
      return s.serializeU64(n)
    case 'u128':
      return s.serializeU128(n)
    case 'u256':
      return s.serializeU256(n)
    case 'i8':
      return s.serializeI8(Number(n))
    case 'i16':
      return s.serializeI16(Number(n))
    case 'i32':
      return s.serializeI32(Number(n))
    case 'i64':
      return s.serializeI64(n)
    case 'i128':
      return s.serializeI128(n)
    case 'i256':
      return s.serializeI256(n)
  }
}

/** Writes `v` as a value of type `tag`. Throws ValueShapeError or MissingAbiError. */
export function encodeValue(s: Serializer, tag: TypeTag, v: unknown, abis: AbiSource): void {
  const primitive = primitiveOf(tag)
  if (primitive !== null) {
    const range = INTEGERS[primitive]
    if (range) return encodeInteger(s, primitive, integer(tag, v, ...range))
    if (primitive === 'bool') {
      if (typeof v !== 'boolean') fail(tag, v)
      return s.serializeBool(v as boolean)
    }
    if (primitive === 'address') return encodeAddress(s, tag, v)
    return fail(tag, v)
  }
  const of = vectorOf(tag)
  if (of) {
    if (primitiveOf(of) === 'u8' && typeof v === 'string') {
      if (!/^0x([0-9a-fA-F]{2})*$/.test(v)) fail(tag, v)
      return s.serializeBytes(hexToBytes(v))
    }
    if (!Array.isArray(v)) return fail(tag, v)
    s.serializeU32AsUleb128(v.length)
    for (const item of v) encodeValue(s, of, item, abis)
    return
  }
  const struct = structOf(tag)
  if (struct) return encodeStruct(s, struct, v, abis)
  fail(tag, v)
}

function encodeAddress(s: Serializer, tag: TypeTag, v: unknown): void {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(v)) fail(tag, v)
  AccountAddress.fromString(v as string, { maxMissingChars: 63 }).serialize(s)
}

const UNPARSABLE_UTF8 = /^Unparsable utf-8 (0x(?:[0-9a-f]{2})*)$/

function encodeStruct(s: Serializer, tag: TypeTagStruct, v: unknown, abis: AbiSource): void {
  const layout = structLayout(tag, abis)
  if (layout.kind === 'string') {
    if (typeof v !== 'string') fail(tag, v)
    const m = UNPARSABLE_UTF8.exec(v as string)
    if (m) s.serializeBytes(hexToBytes(m[1]))
    else s.serializeStr(v as string)
    return
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return fail(tag, v)
  const obj = v as Record<string, unknown>
  let fields = layout.kind === 'struct' ? layout.fields : []
  if (layout.kind === 'enum') {
    const i = layout.variants.findIndex(x => x.name === obj.__variant__)
    if (i < 0) fail(tag, v)
    s.serializeU32AsUleb128(i)
    fields = layout.variants[i].fields
  }
  for (const f of fields) {
    if (!(f.name in obj)) fail(tag, v)
    encodeValue(s, f.type, obj[f.name], abis)
  }
}

/** BCS bytes of one value (an entry-function argument as stored in `args`). */
export function encodeArgument(tag: TypeTag, v: unknown, abis: AbiSource): Uint8Array {
  const s = new Serializer()
  encodeValue(s, tag, v, abis)
  return s.toUint8Array()
}

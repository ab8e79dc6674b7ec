/**
 * The inverse of value-encode: BCS bytes of a Move value read back into the REST
 * API's JSON form, and the JSON layout of its type. The decoded dataset is built
 * from the verified BCS this way, so what it shows is what the chain executed.
 */
import { Deserializer, type TypeTag } from '@aptos-labs/ts-sdk'
import type { AbiSource } from './abi-cache.ts'
import { structLayout } from './layouts.ts'
import { normalizeAddress, primitiveOf, structOf, typeToString, vectorOf } from './type-tags.ts'
import { bytesToHex } from '../schema/hex.ts'

const UTF8 = new TextDecoder('utf-8', { fatal: true })

function decodePrimitive(d: Deserializer, name: string): unknown {
  switch (name) {
    case 'bool':
      return d.deserializeBool()
    case 'u8':
      return d.deserializeU8()
    case 'u16':
      return d.deserializeU16()
    case 'u32':
      return d.deserializeU32()
    case 'u64':
      return d.deserializeU64().toString()
    case 'u128':
      return d.deserializeU128().toString()
    case 'u256':
      return d.deserializeU256().toString()
    case 'i8':
      return d.deserializeI8()
    case 'i16':
      return d.deserializeI16()
    case 'i32':
      return d.deserializeI32()
    case 'i64':
      return d.deserializeI64().toString()
    case 'i128':
      return d.deserializeI128().toString()
    case 'i256':
      return d.deserializeI256().toString()
    case 'address':
      return normalizeAddress(bytesToHex(d.deserializeFixedBytes(32)))
  }
  throw new Error(`cannot decode a value of type ${name}`)
}

/** Reads one value of type `tag`. Throws on malformed bytes or a missing layout. */
export function decodeValue(d: Deserializer, tag: TypeTag, abis: AbiSource): unknown {
  const primitive = primitiveOf(tag)
  if (primitive !== null) return decodePrimitive(d, primitive)
  const of = vectorOf(tag)
  if (of) {
    if (primitiveOf(of) === 'u8') return bytesToHex(d.deserializeBytes())
    const n = d.deserializeUleb128AsU32()
    const out: unknown[] = []
    for (let i = 0; i < n; i++) out.push(decodeValue(d, of, abis))
    return out
  }
  const struct = structOf(tag)
  if (!struct) throw new Error(`cannot decode a value of type ${typeToString(tag)}`)
  const layout = structLayout(struct, abis)
  if (layout.kind === 'string') {
    const bytes = d.deserializeBytes()
    try {
      return UTF8.decode(bytes)
    } catch {
      return `Unparsable utf-8 ${bytesToHex(bytes)}`
    }
  }
  const out: Record<string, unknown> = {}
  let fields = layout.kind === 'struct' ? layout.fields : []
  if (layout.kind === 'enum') {
    const i = d.deserializeUleb128AsU32()
    const variant = layout.variants[i]
    if (!variant) throw new Error(`variant ${i} of ${typeToString(tag)} does not exist`)
    out.__variant__ = variant.name
    fields = variant.fields
  }
  for (const f of fields) out[f.name] = decodeValue(d, f.type, abis)
  return out
}

/** Decodes a whole argument; bytes left over mean the type does not fit. */
export function decodeArgument(bytes: Uint8Array, tag: TypeTag, abis: AbiSource): unknown {
  const d = new Deserializer(bytes)
  const v = decodeValue(d, tag, abis)
  if (d.remaining() !== 0) throw new Error(`${d.remaining()} bytes left after a ${typeToString(tag)}`)
  return v
}

/** Layout of a type in the decoded dataset's `args_abi`. */
export type TypeLayout =
  | string
  | { vector: TypeLayout }
  | { struct: { type: string; fields: { name: string; layout: TypeLayout }[] } }
  | { enum: { type: string; variants: { name: string; fields: { name: string; layout: TypeLayout }[] }[] } }

/**
 * The shape values of a type are stored in, shaped like Move's `MoveTypeLayout`:
 * primitives by name, `{vector}`, and structs and enums with their (type-argument
 * applied) fields. `0x1::string::String` is the struct of its `bytes`.
 */
export function typeLayout(tag: TypeTag, abis: AbiSource, depth = 0): TypeLayout {
  if (depth > 32) throw new Error('type nested too deeply')
  const of = vectorOf(tag)
  if (of) return { vector: typeLayout(of, abis, depth + 1) }
  const struct = structOf(tag)
  if (!struct) return tag.toString()
  const type = typeToString(tag)
  const layout = structLayout(struct, abis)
  const fields = (list: { name: string; type: TypeTag }[]) => list.map(f => ({ name: f.name, layout: typeLayout(f.type, abis, depth + 1) }))
  if (layout.kind === 'string') return { struct: { type, fields: [{ name: 'bytes', layout: { vector: 'u8' } }] } }
  if (layout.kind === 'enum') return { enum: { type, variants: layout.variants.map(v => ({ name: v.name, fields: fields(v.fields) })) } }
  return { struct: { type, fields: fields(layout.fields) } }
}

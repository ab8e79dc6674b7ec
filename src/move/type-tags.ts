/**
 * Move types: parsed into the SDK's TypeTag (which also writes their BCS), printed
 * the way the fullnode REST API prints them, and described as JSON for the decoded
 * dataset.
 */
import { parseTypeTag, StructTag, TypeTagReference, TypeTagStruct, TypeTagVector, type TypeTag } from '@aptos-labs/ts-sdk'

/** `0x` + lowercase hex without leading zeros: the REST API's address literal (`0x1`). */
export function normalizeAddress(address: string): string {
  const h = address.trim().toLowerCase().replace(/^0x/, '')
  if (!/^[0-9a-f]{1,64}$/.test(h)) throw new Error(`bad account address "${address}"`)
  return '0x' + (h.replace(/^0+/, '') || '0')
}

/** `0x` + 64 hex digits: the long form of an account address. */
export function longAddress(address: string): string {
  return '0x' + normalizeAddress(address).slice(2).padStart(64, '0')
}

/**
 * The API trims the leading zeros of every address (`0x9d5…` of 63 digits), which
 * the SDK's parser refuses outside the special addresses `0x0`…`0xf`: pad them first.
 */
const padAddresses = (text: string) =>
  text.replace(/(?<![0-9A-Za-z_])0x([0-9a-fA-F]{1,64})(?=::)/g, (_, h: string) => '0x' + h.padStart(64, '0'))

/** Parses a Move type string; ABI strings may use `T0`, `T1`… and references. */
export const parseType = (text: string): TypeTag => parseTypeTag(padAddresses(text), { allowGenerics: true })

/** Parses a transaction's type argument (no generics). */
export const parseTypeArgument = (text: string): TypeTag => parseTypeTag(padAddresses(text))

/** Replaces the generic parameters `T<i>` of an ABI type with the call's type arguments. */
export function substitute(tag: TypeTag, typeArgs: readonly TypeTag[]): TypeTag {
  if (tag.isGeneric()) {
    const t = typeArgs[tag.value]
    if (!t) throw new Error(`unbound type parameter T${tag.value}`)
    return t
  }
  if (tag instanceof TypeTagVector) return new TypeTagVector(substitute(tag.value, typeArgs))
  if (tag instanceof TypeTagStruct) {
    const s = tag.value
    if (s.typeArgs.length === 0) return tag
    return new TypeTagStruct(
      new StructTag(
        s.address,
        s.moduleName,
        s.name,
        s.typeArgs.map(a => substitute(a, typeArgs)),
      ),
    )
  }
  return tag
}

/*
 * The SDK's `isU8()`-style guards narrow structurally identical classes to `never`
 * under TypeScript, so type switches go through these three helpers instead.
 */

/** The element type of a vector type, or null. */
export const vectorOf = (tag: TypeTag): TypeTag | null => (tag instanceof TypeTagVector ? tag.value : null)

/** The struct type, or null. */
export const structOf = (tag: TypeTag): TypeTagStruct | null => (tag instanceof TypeTagStruct ? tag : null)

/** The name of a primitive type (`u64`, `address`, `signer`…), or null for vectors, structs, generics and references. */
export function primitiveOf(tag: TypeTag): string | null {
  if (tag instanceof TypeTagVector || tag instanceof TypeTagStruct || tag instanceof TypeTagReference || tag.isGeneric()) return null
  return tag.toString()
}

/** `signer` and `&signer` parameters are supplied by the VM, not by the transaction. */
export function isSignerParam(tag: TypeTag): boolean {
  const inner = tag instanceof TypeTagReference ? tag.value : tag
  return primitiveOf(inner) === 'signer'
}

/** A type as the REST API prints it (`0x1::coin::CoinStore<0x1::aptos_coin::AptosCoin>`). */
export function typeToString(tag: TypeTag): string {
  if (tag instanceof TypeTagVector) return `vector<${typeToString(tag.value)}>`
  if (tag instanceof TypeTagStruct) {
    const s = tag.value
    const args = s.typeArgs.length ? `<${s.typeArgs.map(typeToString).join(', ')}>` : ''
    return `${normalizeAddress(s.address.toString())}::${s.moduleName.identifier}::${s.name.identifier}${args}`
  }
  return tag.toString()
}

/** Module key and struct name of a struct type. */
export function structId(tag: TypeTagStruct): { address: string; module: string; name: string } {
  const s = tag.value
  return { address: normalizeAddress(s.address.toString()), module: s.moduleName.identifier, name: s.name.identifier }
}

/** Type description in the decoded dataset: a primitive's name, `{vector}` or `{struct}`. */
export type TypeDescription =
  string | { vector: TypeDescription } | { struct: { address: string; module: string; name: string; type_args: TypeDescription[] } }

/**
 * JSON description of a type, shaped like Move's serde form of `TypeTag`
 * (`"u64"`, `{"vector":"u8"}`, `{"struct":{"address","module","name","type_args"}}`),
 * with addresses written as the REST API writes them.
 */
export function describeType(tag: TypeTag): TypeDescription {
  if (tag instanceof TypeTagVector) return { vector: describeType(tag.value) }
  if (tag instanceof TypeTagStruct) {
    return { struct: { ...structId(tag), type_args: tag.value.typeArgs.map(describeType) } }
  }
  return tag.toString()
}

/** `0x1::coin` style module key, with the address trimmed as the REST API writes it. */
export const moduleKey = (address: string, name: string): string => `${normalizeAddress(address)}::${name}`

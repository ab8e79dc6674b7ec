/**
 * What a struct type is made of, for encoding and decoding values of that type.
 * Framework types that may appear as transaction arguments have fixed layouts
 * here; every other struct's fields come from its module's ABI.
 */
import type { TypeTag, TypeTagStruct } from '@aptos-labs/ts-sdk'
import type { AbiSource } from './abi-cache.ts'
import { moduleKey, parseType, structId, structOf, substitute, typeToString, vectorOf } from './type-tags.ts'

export interface FieldLayout {
  name: string
  type: TypeTag
}

/** A struct's shape: `0x1::string::String` is special (JSON strings), enums carry their variants. */
export type StructLayout =
  { kind: 'string' } | { kind: 'struct'; fields: FieldLayout[] } | { kind: 'enum'; variants: { name: string; fields: FieldLayout[] }[] }

/** A struct layout needs an ABI the source does not have. */
export class MissingAbiError extends Error {
  readonly module: string
  constructor(module: string, message: string) {
    super(message)
    this.module = module
  }
}

const FIXED: Record<string, (args: readonly TypeTag[]) => StructLayout> = {
  '0x1::string::String': () => ({ kind: 'string' }),
  '0x1::option::Option': args => ({ kind: 'struct', fields: [{ name: 'vec', type: parseVector(args[0]) }] }),
  '0x1::object::Object': () => ({ kind: 'struct', fields: [{ name: 'inner', type: parseType('address') }] }),
  '0x1::fixed_point32::FixedPoint32': () => ({ kind: 'struct', fields: [{ name: 'value', type: parseType('u64') }] }),
  '0x1::fixed_point64::FixedPoint64': () => ({ kind: 'struct', fields: [{ name: 'value', type: parseType('u128') }] }),
}

function parseVector(of: TypeTag): TypeTag {
  return parseType(`vector<${typeToString(of)}>`)
}

/** Layout of a struct type with its type arguments applied; throws MissingAbiError without an ABI. */
export function structLayout(tag: TypeTagStruct, abis: AbiSource): StructLayout {
  const id = structId(tag)
  const fixed = FIXED[`${id.address}::${id.module}::${id.name}`]
  if (fixed) return fixed(tag.value.typeArgs)
  const m = abis.module(id.address, id.module)
  const key = moduleKey(id.address, id.module)
  if (!m) throw new MissingAbiError(key, `no layout for ${typeToString(tag)}: ABI of ${key} ${m === null ? 'not found' : 'not available'}`)
  const s = m.structs.find(x => x.name === id.name)
  if (!s) throw new MissingAbiError(key, `no struct ${id.name} in the ABI of ${key}`)
  const fields = (list: readonly { name: string; type: string }[]) =>
    list.map(f => ({ name: f.name, type: substitute(parseType(f.type), tag.value.typeArgs) }))
  if (s.is_enum) {
    if (!s.variants) throw new MissingAbiError(key, `enum ${typeToString(tag)} has no variants in its ABI`)
    return { kind: 'enum', variants: s.variants.map(v => ({ name: v.name, fields: fields(v.fields) })) }
  }
  return { kind: 'struct', fields: fields(s.fields) }
}

/**
 * Modules whose ABIs are needed to lay out values of a type and are unknown to
 * the source (`undefined`), found by walking the type's structs and their fields.
 */
export function modulesNeededFor(tag: TypeTag, abis: AbiSource, out: Set<string>, depth = 0): void {
  if (depth > 32) return
  const of = vectorOf(tag)
  if (of) return modulesNeededFor(of, abis, out, depth + 1)
  const struct = structOf(tag)
  if (!struct) return
  for (const a of struct.value.typeArgs) modulesNeededFor(a, abis, out, depth + 1)
  let layout: StructLayout
  try {
    layout = structLayout(struct, abis)
  } catch (e) {
    const id = structId(struct)
    if (e instanceof MissingAbiError && abis.module(id.address, id.module) === undefined) out.add(e.module)
    return
  }
  const fields = layout.kind === 'struct' ? layout.fields : layout.kind === 'enum' ? layout.variants.flatMap(v => v.fields) : []
  for (const f of fields) modulesNeededFor(f.type, abis, out, depth + 1)
}

/**
 * The decoded dataset's `entry_function_decoded` (and its script and multisig
 * twins): type arguments, argument values and argument layouts, each as a JSON
 * string, decoded from the verified argument bytes with the function's ABI. A
 * call the ABI does not explain decodes to null with a reason; it never throws.
 */
import { Deserializer, type TypeTag } from '@aptos-labs/ts-sdk'
import type { AbiSource } from './abi-cache.ts'
import { argumentTypes } from './payload.ts'
import { describeType, isSignerParam, parseType, substitute } from './type-tags.ts'
import { decodeArgument, decodeValue, typeLayout } from './value-decode.ts'
import type { RestEntryFunctionPayload, RestScriptPayload } from './rest-types.ts'

/** The decoded dataset's `entry_function_decoded` object (also `script_decoded`, `multisig_entry_function_decoded`). */
export interface DecodedCall {
  /** Each type argument's description (`describeType`) as JSON. */
  type_args: string[]
  /** Each argument's value, in the REST API's JSON form, as JSON. */
  args: string[]
  /** Each argument's type layout (`typeLayout`) as JSON. */
  args_abi: string[]
}

export type DecodeResult = { ok: true; decoded: DecodedCall } | { ok: false; reason: string }

const message = (e: unknown) => (e instanceof Error ? e.message : String(e))

function decodeWith(
  typeArgs: readonly TypeTag[],
  types: readonly TypeTag[],
  read: (i: number, t: TypeTag) => unknown,
  abis: AbiSource,
): DecodeResult {
  try {
    return {
      ok: true,
      decoded: {
        type_args: typeArgs.map(t => JSON.stringify(describeType(t))),
        args: types.map((t, i) => JSON.stringify(read(i, t))),
        args_abi: types.map(t => JSON.stringify(typeLayout(t, abis))),
      },
    }
  } catch (e) {
    return { ok: false, reason: message(e) }
  }
}

/** Decodes an entry function call from its verified argument bytes. */
export function decodeEntryFunction(
  p: RestEntryFunctionPayload,
  typeArgs: readonly TypeTag[],
  args: readonly Uint8Array[],
  abis: AbiSource,
): DecodeResult {
  const types = argumentTypes(p, typeArgs, abis)
  if (typeof types === 'string') return { ok: false, reason: types }
  if (types.length !== args.length) return { ok: false, reason: `${args.length} argument bytes for ${types.length} parameters` }
  return decodeWith(typeArgs, types, (i, t) => decodeArgument(args[i], t, abis), abis)
}

/** `TransactionArgument::Serialized`: the value's BCS wrapped in a byte string. */
const SERIALIZED = 9

/**
 * Decodes a script call from its `TransactionArgument` bytes, typed by the script
 * ABI the REST API shows. Every variant but `Serialized` is followed by the BCS of
 * the value itself.
 */
export function decodeScript(
  p: RestScriptPayload,
  typeArgs: readonly TypeTag[],
  args: readonly Uint8Array[],
  abis: AbiSource,
): DecodeResult {
  if (!p.code.abi) return { ok: false, reason: 'the script has no ABI' }
  let types: TypeTag[]
  try {
    const params = p.code.abi.params.map(parseType)
    let first = 0
    while (first < params.length && isSignerParam(params[first])) first++
    types = params.slice(first).map(t => substitute(t, typeArgs))
  } catch (e) {
    return { ok: false, reason: message(e) }
  }
  if (types.length !== args.length) return { ok: false, reason: `${args.length} arguments for ${types.length} script parameters` }
  return decodeWith(
    typeArgs,
    types,
    (i, t) => {
      const d = new Deserializer(args[i])
      const variant = d.deserializeUleb128AsU32()
      const value = variant === SERIALIZED ? decodeArgument(d.deserializeBytes(), t, abis) : decodeValue(d, t, abis)
      if (d.remaining() !== 0) throw new Error(`script argument ${i} has ${d.remaining()} extra bytes`)
      return value
    },
    abis,
  )
}

/**
 * A user transaction's payload: from the REST JSON to the SDK payload classes
 * (whose BCS the hash covers) and to the `payload` object the datasets store.
 */
import {
  AccountAddress,
  Bool,
  EntryFunction,
  I128,
  I16,
  I256,
  I32,
  I64,
  I8,
  Identifier,
  ModuleId,
  MoveVector,
  MultiSig,
  MultiSigTransactionPayload,
  Script,
  Serialized,
  Serializer,
  TransactionExecutableEmpty,
  TransactionExecutableEntryFunction,
  TransactionExecutableScript,
  TransactionExtraConfigV1,
  TransactionInnerPayloadV1,
  TransactionPayloadEntryFunction,
  TransactionPayloadMultiSig,
  TransactionPayloadScript,
  U128,
  U16,
  U256,
  U32,
  U64,
  U8,
  type ScriptFunctionArgument,
  type TransactionPayload,
  type TypeTag,
} from '@aptos-labs/ts-sdk'
import { functionAbi, splitFunctionId, type AbiSource } from './abi-cache.ts'
import { encodeArgument } from './value-encode.ts'
import { isSignerParam, longAddress, parseType, parseTypeArgument, primitiveOf, substitute, vectorOf } from './type-tags.ts'
import { bytesToHex, hexToBytes } from '../schema/hex.ts'
import type { RestEntryFunctionPayload, RestPayload, RestScriptPayload, RestUserTransaction } from './rest-types.ts'

/** `payload.entry_function` as stored: type arguments and each argument as BCS hex. */
export interface StoredEntryFunction {
  module: { address: string; name: string }
  function: string
  /** BCS of the `vector<TypeTag>`. */
  ty_args: string
  /** BCS of each argument; null when they could not be rebuilt (no ABI and no hash match). */
  args: string[] | null
}

/** The `payload` column: one member set, by `kind`; the others null. */
export interface StoredPayload {
  kind: 'EntryFunction' | 'Script' | 'Multisig' | 'ModuleBundle'
  script: { code: string; ty_args: string; args: string[] | null } | null
  module_bundle: { modules: string[] } | null
  entry_function: StoredEntryFunction | null
  multisig: { multisig_address: string; entry_function: StoredEntryFunction | null } | null
}

/** A call whose argument bytes are settled. */
export interface Call {
  functionId: string
  typeArgs: TypeTag[]
  args: Uint8Array[]
}

/** BCS of a type-argument vector. */
export function typeArgsBcs(typeArgs: readonly TypeTag[]): Uint8Array {
  const s = new Serializer()
  s.serializeVector([...typeArgs])
  return s.toUint8Array()
}

/** Type arguments of a REST payload (they never contain generics). */
export const parseTypeArgs = (list: readonly string[]): TypeTag[] => list.map(parseTypeArgument)

/** The non-signer parameter types of an entry function with its type arguments applied, or why not. */
export function argumentTypes(p: RestEntryFunctionPayload, typeArgs: readonly TypeTag[], abis: AbiSource): TypeTag[] | string {
  const f = functionAbi(abis, p.function)
  if (typeof f === 'string') return f
  const params = f.params.map(parseType)
  let first = 0
  while (first < params.length && isSignerParam(params[first])) first++
  const types = params.slice(first)
  if (types.length !== p.arguments.length) return `${p.function} takes ${types.length} arguments, the transaction has ${p.arguments.length}`
  if (f.generic_type_params.length !== typeArgs.length)
    return `${p.function} takes ${f.generic_type_params.length} type arguments, the transaction has ${typeArgs.length}`
  return types.map(t => substitute(t, typeArgs))
}

/** Argument bytes from the ABI; throws ValueShapeError or MissingAbiError when they do not fit. */
export function encodeArguments(p: RestEntryFunctionPayload, types: readonly TypeTag[], abis: AbiSource): Uint8Array[] {
  return p.arguments.map((v, i) => encodeArgument(types[i], v, abis))
}

/** The SDK's `EntryFunction` for a settled call; its arguments are passed as pre-serialized bytes. */
export function sdkEntryFunction(call: Call): EntryFunction {
  const { address, module, name } = splitFunctionId(call.functionId)
  return new EntryFunction(
    new ModuleId(AccountAddress.fromString(address, { maxMissingChars: 63 }), new Identifier(module)),
    new Identifier(name),
    call.typeArgs,
    call.args.map(a => new Serialized(a)),
  )
}

/** Script arguments as `TransactionArgument`s, typed by the script's ABI when the API gives it. */
export function scriptArguments(p: RestScriptPayload, abis: AbiSource): ScriptFunctionArgument[] {
  const params = (p.code.abi?.params ?? []).map(parseType)
  let first = 0
  while (first < params.length && isSignerParam(params[first])) first++
  const types = params.slice(first)
  if (types.length !== p.arguments.length)
    throw new Error(`script takes ${types.length} arguments, the transaction has ${p.arguments.length}`)
  const typeArgs = parseTypeArgs(p.type_arguments)
  return p.arguments.map((v, i) => scriptArgument(substitute(types[i], typeArgs), v, abis))
}

function scriptArgument(tag: TypeTag, v: unknown, abis: AbiSource): ScriptFunctionArgument {
  const n = () => Number(v)
  const big = () => BigInt(v as string)
  switch (primitiveOf(tag)) {
    case 'u8':
      return new U8(n())
    case 'u16':
      return new U16(n())
    case 'u32':
      return new U32(n())
    case 'u64':
      return new U64(big())
    case 'u128':
      return new U128(big())
    case 'u256':
      return new U256(big())
    case 'i8':
      return new I8(n())
    case 'i16':
      return new I16(n())
    case 'i32':
      return new I32(n())
    case 'i64':
      return new I64(big())
    case 'i128':
      return new I128(big())
    case 'i256':
      return new I256(big())
    case 'bool':
      return new Bool(v as boolean)
    case 'address':
      return AccountAddress.fromString(v as string, { maxMissingChars: 63 })
  }
  const of = vectorOf(tag)
  if (of && primitiveOf(of) === 'u8') return MoveVector.U8(hexToBytes(v as string))
  // Other types travel as `Serialized` BCS, which the API shows as its hex.
  if (typeof v === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(v)) return new Serialized(hexToBytes(v))
  return new Serialized(encodeArgument(tag, v, abis))
}

function scriptArgumentBcs(a: ScriptFunctionArgument): string {
  const s = new Serializer()
  a.serializeForScriptFunction(s)
  return bytesToHex(s.toUint8Array())
}

/** What the payload encodes to, once its arguments are settled. */
export type PayloadBody =
  | { kind: 'EntryFunction'; call: Call }
  | { kind: 'Multisig'; multisigAddress: string; call: Call | null }
  | { kind: 'Script'; script: Script; args: ScriptFunctionArgument[] }

/**
 * The payload encodings the transaction may have been signed with. Current
 * transactions with a replay-protection nonce use the `Payload::V1` envelope;
 * others use the legacy variants, or the envelope without a nonce.
 */
export function payloadForms(tx: RestUserTransaction, body: PayloadBody): { format: 'legacy' | 'inner_v1'; payload: TransactionPayload }[] {
  const nonce = tx.replay_protection_nonce ?? undefined
  const multisig = body.kind === 'Multisig' ? AccountAddress.fromString(body.multisigAddress, { maxMissingChars: 63 }) : undefined
  const executable =
    body.kind === 'Script'
      ? new TransactionExecutableScript(body.script)
      : body.call
        ? new TransactionExecutableEntryFunction(sdkEntryFunction(body.call))
        : new TransactionExecutableEmpty()
  const v1 = {
    format: 'inner_v1' as const,
    payload: new TransactionInnerPayloadV1(
      executable,
      new TransactionExtraConfigV1(multisig, nonce === undefined ? undefined : BigInt(nonce)),
    ),
  }
  if (nonce !== undefined) return [v1]
  const legacy =
    body.kind === 'Script'
      ? new TransactionPayloadScript(body.script)
      : body.kind === 'EntryFunction'
        ? new TransactionPayloadEntryFunction(sdkEntryFunction(body.call))
        : new TransactionPayloadMultiSig(
            new MultiSig(multisig as AccountAddress, body.call ? new MultiSigTransactionPayload(sdkEntryFunction(body.call)) : undefined),
          )
  return [{ format: 'legacy', payload: legacy }, v1]
}

function storedEntryFunction(p: RestEntryFunctionPayload, typeArgs: readonly TypeTag[], args: Uint8Array[] | null): StoredEntryFunction {
  const { address, module, name } = splitFunctionId(p.function)
  return {
    module: { address: longAddress(address), name: module },
    function: name,
    ty_args: bytesToHex(typeArgsBcs(typeArgs)),
    args: args ? args.map(bytesToHex) : null,
  }
}

/**
 * The stored `payload` object. `args` are the settled argument bytes of the
 * entry function (null until the hash proves them), `scriptArgs` the script's.
 */
export function storedPayload(
  p: RestPayload,
  settled: { typeArgs: readonly TypeTag[]; args: Uint8Array[] | null; scriptArgs: ScriptFunctionArgument[] | null },
): StoredPayload {
  const empty = { script: null, module_bundle: null, entry_function: null, multisig: null }
  switch (p.type) {
    case 'entry_function_payload':
      return { ...empty, kind: 'EntryFunction', entry_function: storedEntryFunction(p, settled.typeArgs, settled.args) }
    case 'multisig_payload':
      return {
        ...empty,
        kind: 'Multisig',
        multisig: {
          multisig_address: longAddress(p.multisig_address),
          entry_function: p.transaction_payload ? storedEntryFunction(p.transaction_payload, settled.typeArgs, settled.args) : null,
        },
      }
    case 'script_payload':
      return {
        ...empty,
        kind: 'Script',
        script: {
          code: p.code.bytecode,
          ty_args: bytesToHex(typeArgsBcs(settled.typeArgs)),
          args: settled.scriptArgs ? settled.scriptArgs.map(scriptArgumentBcs) : null,
        },
      }
    case 'module_bundle_payload':
      return { ...empty, kind: 'ModuleBundle', module_bundle: { modules: p.modules.map(m => m.bytecode) } }
  }
}

/**
 * Module ABIs, as `GET /v1/accounts/{address}/module/{name}` returns them. The
 * transform is pure, so ABIs are fetched first (`prefetchAbis`, the I/O edge) and
 * then looked up synchronously through an `AbiSource`.
 */
import type { TypeTag } from '@aptos-labs/ts-sdk'
import { modulesNeededFor } from './layouts.ts'
import { moduleKey, normalizeAddress, parseType, substitute } from './type-tags.ts'
import type { RestEntryFunctionPayload, RestTransaction } from './rest-types.ts'

export interface AbiField {
  name: string
  type: string
}

export interface AbiStruct {
  name: string
  is_enum?: boolean
  fields: AbiField[]
  /** Enum variants (Move 2), in declaration order. */
  variants?: { name: string; fields: AbiField[] }[]
}

export interface AbiFunction {
  name: string
  is_entry?: boolean
  generic_type_params: unknown[]
  params: string[]
}

export interface AbiModule {
  address: string
  name: string
  exposed_functions: AbiFunction[]
  structs: AbiStruct[]
}

/**
 * Synchronous ABI lookup. `undefined`: not known to the source (not fetched);
 * `null`: the module does not exist on chain.
 */
export interface AbiSource {
  module(address: string, name: string): AbiModule | null | undefined
}

/** A mutable ABI store, filled by `prefetchAbis` or from recorded ABI files. */
export class AbiCache implements AbiSource {
  readonly modules = new Map<string, AbiModule | null>()

  module(address: string, name: string): AbiModule | null | undefined {
    return this.modules.get(moduleKey(address, name))
  }

  /** Adds modules given as REST ABIs or as `{ abi }` / `{ bytecode, abi }` records. */
  add(list: readonly (AbiModule | { abi?: AbiModule })[]): this {
    for (const item of list) {
      const abi = 'abi' in item ? item.abi : (item as AbiModule)
      if (abi) this.modules.set(moduleKey(abi.address, abi.name), abi)
    }
    return this
  }

  /** Records that a module does not exist, so it is not asked for again. */
  markMissing(address: string, name: string): void {
    this.modules.set(moduleKey(address, name), null)
  }
}

/** Splits `0x1::coin::transfer` into its module address, module name and function name. */
export function splitFunctionId(id: string): { address: string; module: string; name: string } {
  const parts = id.split('::')
  if (parts.length !== 3) throw new Error(`bad function id "${id}"`)
  return { address: normalizeAddress(parts[0]), module: parts[1], name: parts[2] }
}

/** The function's ABI, or the reason it is unavailable. */
export function functionAbi(abis: AbiSource, functionId: string): AbiFunction | string {
  const { address, module, name } = splitFunctionId(functionId)
  const m = abis.module(address, module)
  if (m === undefined) return `ABI of ${moduleKey(address, module)} not available`
  if (m === null) return `module ${moduleKey(address, module)} not found`
  return m.exposed_functions.find(x => x.name === name) ?? `function ${name} not in the ABI of ${moduleKey(address, module)}`
}

/** Entry-function payloads of a transaction: its own, or the one a multisig payload carries. */
export function entryPayloadsOf(tx: RestTransaction): RestEntryFunctionPayload[] {
  if (tx.type !== 'user_transaction') return []
  const p = tx.payload
  if (p.type === 'entry_function_payload') return [p]
  if (p.type === 'multisig_payload' && p.transaction_payload?.type === 'entry_function_payload') return [p.transaction_payload]
  return []
}

function tryParse(text: string): TypeTag | undefined {
  try {
    return parseType(text)
  } catch {
    return undefined
  }
}

/**
 * Modules the transactions need and the source does not know yet: each called
 * function's module, then the modules that lay out its struct-typed parameters.
 */
export function missingModules(txs: readonly RestTransaction[], abis: AbiSource): string[] {
  const need = new Set<string>()
  for (const tx of txs) {
    for (const p of entryPayloadsOf(tx)) {
      const { address, module } = splitFunctionId(p.function)
      if (abis.module(address, module) === undefined) need.add(moduleKey(address, module))
      const f = functionAbi(abis, p.function)
      if (typeof f === 'string') continue
      const typeArgs = p.type_arguments.map(tryParse)
      if (typeArgs.some(t => t === undefined)) continue
      for (const param of f.params) {
        const tag = tryParse(param)
        if (!tag) continue
        try {
          modulesNeededFor(substitute(tag, typeArgs as TypeTag[]), abis, need)
        } catch {
          // a parameter that cannot be laid out fails later, with its reason
        }
      }
    }
  }
  return [...need]
}

/**
 * Fetches every module the transactions need into the cache: the I/O edge of the
 * transform. Repeats while new modules turn up, at most `rounds` times (default 4:
 * function modules, then struct modules, then their fields' modules…).
 */
export async function prefetchAbis(
  txs: readonly RestTransaction[],
  cache: AbiCache,
  fetchModule: (address: string, name: string) => Promise<AbiModule | null>,
  rounds = 4,
): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const keys = missingModules(txs, cache)
    if (keys.length === 0) return
    await Promise.all(
      keys.map(async key => {
        const [address, name] = key.split('::')
        const abi = await fetchModule(address, name)
        if (abi) cache.add([abi])
        else cache.markMissing(address, name)
      }),
    )
  }
}

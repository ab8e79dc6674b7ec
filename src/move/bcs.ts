/**
 * A user transaction rebuilt from its REST JSON into the BCS the chain hashed:
 * `SignedTransaction { RawTransaction, TransactionAuthenticator }`, built with the
 * SDK's classes. The rebuild is accepted only when its hash equals the node's, so
 * every stored byte (authenticator, type arguments, arguments) is proven.
 *
 * Argument bytes come from the function's ABI; when the ABI is unavailable or does
 * not fit, the few encodings the JSON allows are tried (`infer.ts`) and the hash
 * picks the right one.
 */
import {
  AccountAddress,
  ChainId,
  RawTransaction,
  Script,
  Serializer,
  SignedTransaction,
  type ScriptFunctionArgument,
  type TransactionAuthenticator,
  type TypeTag,
} from '@aptos-labs/ts-sdk'
import type { AbiSource } from './abi-cache.ts'
import { transactionAuthenticator } from './authenticator.ts'
import { userTransactionHash } from './hash.ts'
import { argumentCandidates, combinations } from './infer.ts'
import {
  argumentTypes,
  encodeArguments,
  parseTypeArgs,
  payloadForms,
  scriptArguments,
  storedPayload,
  type PayloadBody,
  type StoredPayload,
} from './payload.ts'
import type { RestUserTransaction } from './rest-types.ts'
import { hexToBytes } from '../schema/hex.ts'

/** What a rebuild needs beyond the transaction: ABIs and the chain id the transaction was signed for. */
export interface VerifyContext {
  abis: AbiSource
  /** Chain id the transactions were signed for (the REST JSON does not carry it). */
  chainId: number
  /** Argument combinations tried without a fitting ABI (default 1024; every recorded transaction needs at most 256). */
  inferLimit?: number
}

/** A user transaction whose rebuilt BCS hashes to the node's hash. */
export interface RebuiltUserTransaction {
  hash: string
  /** BCS of `SignedTransaction` (the hash covers `0x00 ‖ this`). */
  signedTransaction: Uint8Array
  rawTransaction: Uint8Array
  authenticator: Uint8Array
  payload: StoredPayload
  /** Type arguments as parsed (for decoding). */
  typeArgs: TypeTag[]
  /** Where the argument bytes came from. */
  argsSource: 'abi' | 'inferred' | 'none'
  payloadFormat: 'legacy' | 'inner_v1'
}

/** The outcome of `verifyUserTransaction`. */
export type UserTransactionCheck =
  | { ok: true; raw: RebuiltUserTransaction }
  | {
      ok: false
      reason: string
      /** True when a complete rebuild hashed to something else: the JSON is not what was committed. */
      mismatch: boolean
      /** What could be rebuilt without proof (never the argument bytes). */
      partial: { authenticator: Uint8Array | null; payload: StoredPayload | null }
    }

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e)
}

interface Found {
  hash: string
  signed: Uint8Array
  raw: Uint8Array
  format: 'legacy' | 'inner_v1'
}

type Attempt = { found: Found } | { computed: string }

/** Assembles the `SignedTransaction` in each payload form and keeps the one with the node's hash. */
function attempter(tx: RestUserTransaction, auth: TransactionAuthenticator, chainId: number): (body: PayloadBody) => Attempt {
  const sender = AccountAddress.fromString(tx.sender, { maxMissingChars: 63 })
  const header = [BigInt(tx.sequence_number), BigInt(tx.max_gas_amount), BigInt(tx.gas_unit_price), BigInt(tx.expiration_timestamp_secs)]
  const chain = new ChainId(chainId)
  return body => {
    let computed = ''
    for (const form of payloadForms(tx, body)) {
      const raw = new RawTransaction(sender, header[0], form.payload, header[1], header[2], header[3], chain)
      const signed = new SignedTransaction(raw, auth).bcsToBytes()
      const hash = userTransactionHash(signed)
      if (hash === tx.hash.toLowerCase()) return { found: { hash, signed, raw: raw.bcsToBytes(), format: form.format } }
      computed ||= hash
    }
    return { computed }
  }
}

/**
 * The signed transaction around its argument section, per payload form: the
 * bytes before and after `uleb(n) ‖ args`. Found by serializing the call with no
 * argument and with one one-byte argument: the two differ only there. Hashing
 * `head ‖ section ‖ tail` tries an argument encoding without rebuilding the rest.
 */
function spliceForms(
  tx: RestUserTransaction,
  auth: TransactionAuthenticator,
  chainId: number,
  bodyOf: (args: Uint8Array[]) => PayloadBody,
): { head: Uint8Array; tail: Uint8Array }[] {
  const sender = AccountAddress.fromString(tx.sender, { maxMissingChars: 63 })
  const header = [BigInt(tx.sequence_number), BigInt(tx.max_gas_amount), BigInt(tx.gas_unit_price), BigInt(tx.expiration_timestamp_secs)]
  const signedIn = (body: PayloadBody) =>
    payloadForms(tx, body).map(f =>
      new SignedTransaction(
        new RawTransaction(sender, header[0], f.payload, header[1], header[2], header[3], new ChainId(chainId)),
        auth,
      ).bcsToBytes(),
    )
  const none = signedIn(bodyOf([]))
  const one = signedIn(bodyOf([Uint8Array.of(0xab)]))
  return none.map((a, i) => {
    let p = 0
    while (a[p] === one[i][p]) p++
    return { head: a.subarray(0, p), tail: a.subarray(p + 1) }
  })
}

/** `uleb(n) ‖ uleb(len) ‖ bytes …`: an entry function's arguments as the transaction holds them. */
function argumentSection(args: readonly Uint8Array[]): Uint8Array {
  const s = new Serializer()
  s.serializeU32AsUleb128(args.length)
  for (const a of args) s.serializeBytes(a)
  return s.toUint8Array()
}

/** The type arguments of a payload (a multisig's are its inner call's). */
function typeArgumentsOf(p: RestUserTransaction['payload']): TypeTag[] {
  if (p.type === 'entry_function_payload' || p.type === 'script_payload') return parseTypeArgs(p.type_arguments)
  if (p.type === 'multisig_payload' && p.transaction_payload) return parseTypeArgs(p.transaction_payload.type_arguments)
  return []
}

/**
 * Rebuilds a user transaction and checks its hash. `ok: false` with `mismatch`
 * means the JSON cannot be what the chain committed; without it, that the rebuild
 * was not possible (unknown signature scheme, arguments without ABI that no
 * candidate encoding explains…).
 */
export function verifyUserTransaction(tx: RestUserTransaction, ctx: VerifyContext): UserTransactionCheck {
  const partial: { authenticator: Uint8Array | null; payload: StoredPayload | null } = { authenticator: null, payload: null }
  const fail = (reason: string, mismatch = false): UserTransactionCheck => ({
    ok: false,
    reason: `version ${tx.version}: ${reason}`,
    mismatch,
    partial,
  })
  const mismatch = (what: string, computed: string) => fail(`hash mismatch: ${what} hashes to ${computed}, the node says ${tx.hash}`, true)

  if (!tx.signature) return fail('no signature')
  let auth: TransactionAuthenticator
  try {
    auth = transactionAuthenticator(tx.signature)
  } catch (e) {
    return fail(`signature: ${message(e)}`)
  }
  const authenticator = auth.bcsToBytes()
  partial.authenticator = authenticator
  const p = tx.payload
  let typeArgs: TypeTag[]
  let attempt: (body: PayloadBody) => Attempt
  try {
    typeArgs = typeArgumentsOf(p)
    attempt = attempter(tx, auth, ctx.chainId)
  } catch (e) {
    return fail(message(e))
  }
  partial.payload = storedPayload(p, { typeArgs, args: null, scriptArgs: null })
  const done = (
    { found }: { found: Found },
    payload: StoredPayload,
    argsSource: RebuiltUserTransaction['argsSource'],
  ): UserTransactionCheck => ({
    ok: true,
    raw: {
      hash: found.hash,
      signedTransaction: found.signed,
      rawTransaction: found.raw,
      authenticator,
      payload,
      typeArgs,
      argsSource,
      payloadFormat: found.format,
    },
  })

  if (p.type === 'module_bundle_payload') return fail('module bundle payloads are not supported')
  if (p.type === 'script_payload') {
    let args: ScriptFunctionArgument[]
    try {
      args = scriptArguments(p, ctx.abis)
    } catch (e) {
      return fail(`script arguments: ${message(e)}`)
    }
    const a = attempt({ kind: 'Script', script: new Script(hexToBytes(p.code.bytecode), typeArgs, args), args })
    return 'found' in a
      ? done(a, storedPayload(p, { typeArgs, args: null, scriptArgs: args }), 'abi')
      : mismatch('the rebuilt script transaction', a.computed)
  }
  if (p.type === 'multisig_payload' && !p.transaction_payload) {
    const a = attempt({ kind: 'Multisig', multisigAddress: p.multisig_address, call: null })
    return 'found' in a ? done(a, partial.payload, 'none') : mismatch('the rebuilt multisig transaction', a.computed)
  }
  const call = p.type === 'entry_function_payload' ? p : p.type === 'multisig_payload' ? p.transaction_payload : null
  if (!call) return fail(`unknown payload type ${(p as { type: string }).type}`)

  const bodyOf = (args: Uint8Array[]): PayloadBody => {
    const c = { functionId: call.function, typeArgs, args }
    return p.type === 'multisig_payload'
      ? { kind: 'Multisig', multisigAddress: p.multisig_address, call: c }
      : { kind: 'EntryFunction', call: c }
  }
  const notes: string[] = []
  let abiComputed: string | null = null
  const types = argumentTypes(call, typeArgs, ctx.abis)
  if (typeof types === 'string') notes.push(types)
  else {
    let args: Uint8Array[] | null = null
    try {
      args = encodeArguments(call, types, ctx.abis)
    } catch (e) {
      notes.push(message(e))
    }
    if (args) {
      const a = attempt(bodyOf(args))
      if ('found' in a) return done(a, storedPayload(p, { typeArgs, args, scriptArgs: null }), 'abi')
      abiComputed = a.computed
    }
  }

  // Without a fitting ABI: the encodings the JSON allows, hashed in place in the signed bytes.
  const forms = spliceForms(tx, auth, ctx.chainId, bodyOf)
  const want = tx.hash.toLowerCase()
  const accept = (args: Uint8Array[]): UserTransactionCheck => {
    // Rebuilt in full, so the stored bytes come from the SDK's serialization, not from the splice.
    const a = attempt(bodyOf(args))
    return 'found' in a
      ? done(a, storedPayload(p, { typeArgs, args, scriptArgs: null }), 'inferred')
      : fail('spliced and rebuilt transactions differ')
  }
  // The usual payload form first, for every candidate; the other forms only when it fits none.
  const tried: { args: Uint8Array[]; section: Uint8Array }[] = []
  for (const args of combinations(call.arguments.map(argumentCandidates), ctx.inferLimit ?? 1024)) {
    const section = argumentSection(args)
    if (userTransactionHash(forms[0].head, section, forms[0].tail) === want) return accept(args)
    tried.push({ args, section })
  }
  for (const f of forms.slice(1)) {
    for (const t of tried) if (userTransactionHash(f.head, t.section, f.tail) === want) return accept(t.args)
  }
  const inferred = tried.length
  const count = `${inferred} inferred argument encodings tried`
  // Rebuilt from the ABI and hashing differently, with no other encoding that fits: the JSON is not what was signed.
  if (abiComputed) return mismatch(`rebuilt with the ABI of ${call.function}, it`, `${abiComputed} (${count})`)
  return fail(`arguments not rebuilt: ${[...notes, count].join('; ')}`)
}

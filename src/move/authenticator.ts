/**
 * The transaction authenticator rebuilt from the REST API's `signature` JSON, as
 * the SDK's authenticator classes (whose BCS is what the transaction hash covers).
 *
 * The API prints a `single_sender` authenticator with its inner account signature
 * flattened into it, so the inner variant is recognised by its fields. Keys and
 * signatures of the "any key" family (`{type, value}`) are read back through the
 * SDK's own deserializers, so keyless and WebAuthn bodies round-trip exactly.
 */
import {
  AccountAddress,
  AccountAuthenticatorAbstraction,
  AccountAuthenticatorEd25519,
  AccountAuthenticatorMultiEd25519,
  AccountAuthenticatorMultiKey,
  AccountAuthenticatorNoAccountAuthenticator,
  AccountAuthenticatorSingleKey,
  AnyPublicKey,
  AnySignature,
  Deserializer,
  Ed25519PublicKey,
  Ed25519Signature,
  MultiEd25519PublicKey,
  MultiEd25519Signature,
  MultiKey,
  MultiKeySignature,
  Serializer,
  TransactionAuthenticatorEd25519,
  TransactionAuthenticatorFeePayer,
  TransactionAuthenticatorMultiAgent,
  TransactionAuthenticatorMultiEd25519,
  TransactionAuthenticatorSingleSender,
  type AccountAuthenticator,
  type TransactionAuthenticator,
} from '@aptos-labs/ts-sdk'
import { hexToBytes } from '../schema/hex.ts'
import type { RestSignature } from './rest-types.ts'

type Json = Record<string, unknown>

/** The signature JSON has a shape this code does not know. */
export class SignatureShapeError extends Error {}

/** Variant index of each `{type, value}` key kind, and whether its value is a length-prefixed byte string. */
const PUBLIC_KEYS: Record<string, [number, boolean]> = {
  ed25519: [0, true],
  secp256k1_ecdsa: [1, true],
  secp256r1_ecdsa: [2, true],
  keyless: [3, false],
  federated_keyless: [4, false],
  slh_dsa_sha2_128s: [5, true],
}
const SIGNATURES: Record<string, [number, boolean]> = {
  ed25519: [0, true],
  secp256k1_ecdsa: [1, true],
  web_authn: [2, false],
  keyless: [3, false],
  slh_dsa_sha2_128s: [4, true],
}

function str(o: Json, key: string): string {
  const v = o[key]
  if (typeof v !== 'string') throw new SignatureShapeError(`signature field ${key} missing`)
  return v
}

function list(o: Json, key: string): unknown[] {
  const v = o[key]
  if (!Array.isArray(v)) throw new SignatureShapeError(`signature field ${key} missing`)
  return v
}

/** `uleb(variant) ‖ body` read back through the SDK's deserializer for that family. */
function anyOf<T>(table: Record<string, [number, boolean]>, v: unknown, read: (d: Deserializer) => T): T {
  const o = v as Json
  const entry = table[o?.type as string]
  if (!entry) throw new SignatureShapeError(`unknown key or signature type ${JSON.stringify(o?.type)}`)
  const s = new Serializer()
  s.serializeU32AsUleb128(entry[0])
  const body = hexToBytes(str(o, 'value'))
  if (entry[1]) s.serializeBytes(body)
  else s.serializeFixedBytes(body)
  const d = new Deserializer(s.toUint8Array())
  const out = read(d)
  if (d.remaining() !== 0) throw new SignatureShapeError(`${o.type} value has ${d.remaining()} extra bytes`)
  return out
}

const anyPublicKey = (v: unknown) => anyOf(PUBLIC_KEYS, v, d => AnyPublicKey.deserialize(d))
const anySignature = (v: unknown) => anyOf(SIGNATURES, v, d => AnySignature.deserialize(d))

/** Indices of the set bits of a multi-ed25519 bitmap, most significant bit first. */
function bitmapIndices(bitmap: Uint8Array): number[] {
  const out: number[] = []
  for (let i = 0; i < bitmap.length * 8; i++) if (bitmap[i >> 3] & (0x80 >> (i & 7))) out.push(i)
  return out
}

function multiEd25519(o: Json): [MultiEd25519PublicKey, MultiEd25519Signature] {
  const publicKeys = list(o, 'public_keys').map(k => new Ed25519PublicKey(k as string))
  const signatures = list(o, 'signatures').map(s => new Ed25519Signature(s as string))
  const bitmap = hexToBytes(str(o, 'bitmap'))
  if (bitmapIndices(bitmap).length !== signatures.length)
    throw new SignatureShapeError('multi-ed25519 bitmap does not match its signatures')
  return [new MultiEd25519PublicKey({ publicKeys, threshold: Number(o.threshold) }), new MultiEd25519Signature({ signatures, bitmap })]
}

function multiKey(o: Json): AccountAuthenticatorMultiKey {
  const publicKeys = list(o, 'public_keys').map(anyPublicKey)
  const entries = list(o, 'signatures') as Json[]
  const signatures = entries.map(e => anySignature(e.signature))
  const bitmap = MultiKeySignature.createBitmap({ bits: entries.map(e => Number(e.index)) })
  return new AccountAuthenticatorMultiKey(
    new MultiKey({ publicKeys, signaturesRequired: Number(o.signatures_required) }),
    new MultiKeySignature({ signatures, bitmap }),
  )
}

function abstraction(o: Json): AccountAuthenticatorAbstraction {
  const info = str(o, 'function_info')
  const functionInfo = (info.startsWith('0x') ? info : `0x${info}`) as `${string}::${string}::${string}`
  const d = new Deserializer(hexToBytes(str(o, 'auth_data')))
  const variant = d.deserializeUleb128AsU32()
  const digest = d.deserializeBytes()
  if (variant === 0) return new AccountAuthenticatorAbstraction(functionInfo, digest, d.deserializeFixedBytes(d.remaining()))
  if (variant === 1) {
    const signature = d.deserializeBytes()
    const identity = d.deserializeBytes()
    if (d.remaining() !== 0) throw new SignatureShapeError('abstraction auth_data has extra bytes')
    return new AccountAuthenticatorAbstraction(functionInfo, digest, signature, identity)
  }
  throw new SignatureShapeError(`unknown abstraction auth_data variant ${variant}`)
}

/** An account signature (sender, secondary signer, fee payer), by its fields when flattened. */
function accountAuthenticator(o: Json, flattened = false): AccountAuthenticator {
  const type = flattened ? flattenedType(o) : o.type
  switch (type) {
    case 'ed25519_signature':
      return new AccountAuthenticatorEd25519(new Ed25519PublicKey(str(o, 'public_key')), new Ed25519Signature(str(o, 'signature')))
    case 'multi_ed25519_signature':
      return new AccountAuthenticatorMultiEd25519(...multiEd25519(o))
    case 'single_key_signature':
      return new AccountAuthenticatorSingleKey(anyPublicKey(o.public_key), anySignature(o.signature))
    case 'multi_key_signature':
      return multiKey(o)
    case 'no_account_signature':
      return new AccountAuthenticatorNoAccountAuthenticator()
    case 'abstraction_signature':
      return abstraction(o)
    default:
      throw new SignatureShapeError(`unknown account signature type ${JSON.stringify(type)}`)
  }
}

/** The inner variant of a `single_sender` signature, whose own `type` was overwritten. */
function flattenedType(o: Json): string {
  if ('function_info' in o) return 'abstraction_signature'
  if ('signatures_required' in o) return 'multi_key_signature'
  if ('threshold' in o) return 'multi_ed25519_signature'
  if (typeof o.public_key === 'string') return 'ed25519_signature'
  if (o.public_key && typeof o.public_key === 'object') return 'single_key_signature'
  return 'no_account_signature'
}

const addresses = (o: Json, key: string) => list(o, key).map(a => AccountAddress.fromString(a as string, { maxMissingChars: 63 }))
const accounts = (o: Json, key: string) => list(o, key).map(a => accountAuthenticator(a as Json))

/** The SDK authenticator for a REST `signature`; throws SignatureShapeError on shapes it does not know. */
export function transactionAuthenticator(sig: RestSignature): TransactionAuthenticator {
  const o = sig as Json
  switch (sig.type) {
    case 'ed25519_signature':
      return new TransactionAuthenticatorEd25519(new Ed25519PublicKey(str(o, 'public_key')), new Ed25519Signature(str(o, 'signature')))
    case 'multi_ed25519_signature':
      return new TransactionAuthenticatorMultiEd25519(...multiEd25519(o))
    case 'multi_agent_signature':
      return new TransactionAuthenticatorMultiAgent(
        accountAuthenticator(o.sender as Json),
        addresses(o, 'secondary_signer_addresses'),
        accounts(o, 'secondary_signers'),
      )
    case 'fee_payer_signature':
      return new TransactionAuthenticatorFeePayer(
        accountAuthenticator(o.sender as Json),
        addresses(o, 'secondary_signer_addresses'),
        accounts(o, 'secondary_signers'),
        {
          address: AccountAddress.fromString(str(o, 'fee_payer_address'), { maxMissingChars: 63 }),
          authenticator: accountAuthenticator(o.fee_payer_signer as Json),
        },
      )
    case 'single_sender':
      return new TransactionAuthenticatorSingleSender(accountAuthenticator(o, true))
    default:
      throw new SignatureShapeError(`unknown transaction signature type ${JSON.stringify(sig.type)}`)
  }
}

/** The fee payer's address of a sponsored transaction, or null. */
export function feePayerOf(sig: RestSignature | null | undefined): string | null {
  return sig?.type === 'fee_payer_signature' && typeof sig.fee_payer_address === 'string' ? sig.fee_payer_address : null
}

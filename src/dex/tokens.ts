/**
 * dex/tokens: a token's symbol, name and decimals, from the standard ERC-20 getters. The calls
 * go through `TokenResolver` (the ingester's JSON-RPC client and cache); decoding their results
 * is pure and tolerant, because tokens answer in every way: reverts, empty data, `string`, or
 * `bytes32` (MKR, SAI and other early tokens return `bytes32 symbol`).
 */
import { toFunctionSelector } from 'viem'
import type { Hex } from 'viem'
import { hexToBytes } from '../schema/hex.ts'
import { decodeWord, words } from './abi.ts'

/** Call data of the metadata getters. */
export const TOKEN_CALLS = {
  symbol: toFunctionSelector('symbol()'),
  name: toFunctionSelector('name()'),
  decimals: toFunctionSelector('decimals()'),
} as const

/** Raw `eth_call` results (0x-hex return data), null where the call reverted or failed. */
export type TokenCallResults = Readonly<Record<keyof typeof TOKEN_CALLS, Hex | null>>

/** Answers `TOKEN_CALLS` for tokens the lake has no row for yet, in one batched round. */
export interface TokenResolver {
  resolve(chainId: number, tokens: readonly Hex[]): Promise<ReadonlyMap<Hex, TokenCallResults>>
}

/** One dex/tokens row; a value is null when its getter gave nothing decodable. */
export interface TokenRow {
  address: Uint8Array
  symbol: string | null
  name: string | null
  decimals: bigint | null
}

const utf8 = new TextDecoder('utf-8', { fatal: false })

/** Text without NULs (bytes32 padding, C-style terminators); invalid UTF-8 becomes U+FFFD. */
const text = (bytes: Uint8Array): string => utf8.decode(bytes).replace(/\u0000/g, '')

/**
 * A `string` or `bytes32` return value as text. ABI `string` is an offset word, a length word
 * and the bytes; exactly one word is `bytes32` (a string needs two at least). Null for a
 * revert, empty data or anything else.
 */
export function decodeTextResult(result: Hex | null): string | null {
  if (result === null || !/^0x[0-9a-fA-F]*$/.test(result) || result.length % 2 !== 0) return null
  const bytes = hexToBytes(result)
  if (bytes.length === 32) return text(bytes)
  const ws = words(result)
  if (!ws || ws.length < 2) return null
  const offset = BigInt(`0x${ws[0]}`)
  if (offset % 32n !== 0n || offset + 32n > BigInt(bytes.length)) return null
  const at = Number(offset)
  const length = BigInt(`0x${ws[at / 32]}`)
  if (BigInt(at) + 32n + length > BigInt(bytes.length)) return null
  return text(bytes.subarray(at + 32, at + 32 + Number(length)))
}

/** A `decimals()` result: the first word if it is at most 255 (uint8), else null. */
export function decodeDecimalsResult(result: Hex | null): bigint | null {
  const ws = result === null ? undefined : words(result)
  if (!ws || ws.length === 0) return null
  return (decodeWord('uint8', ws[0]) as bigint | undefined) ?? null
}

/** The dex/tokens row of a token from its getters' results. */
export function tokenRow(address: Hex, results: TokenCallResults): TokenRow {
  return {
    address: hexToBytes(address),
    symbol: decodeTextResult(results.symbol),
    name: decodeTextResult(results.name),
    decimals: decodeDecimalsResult(results.decimals),
  }
}

/**
 * Pool metadata from outside a pool's own events. A Swap names only its pool; the tokens and
 * fee come from (a) a verified PairCreated / PoolCreated in the same batch (the decoder reads
 * those itself), (b) the ingester's cache, (c) `eth_call`s to the pool. (b) and (c) sit behind
 * `PoolResolver`, which the ingester implements with its JSON-RPC client and store; the
 * decoding of the call results is here, pure. What nothing answers stays null: never guessed.
 */
import { toFunctionSelector } from 'viem'
import type { Hex } from 'viem'
import { decodeWord, words } from './abi.ts'
import type { PoolKey } from './factories.ts'

/**
 * What is known of a pool: its tokens as it reports them and its fee (v3; null for v2 pairs,
 * whose `fee()` call reverts). Claims until `verifyPool` checks them against CREATE2.
 */
export type PoolInfo = PoolKey

/**
 * Answers metadata for pools the decoder has not seen created (`poolsToResolve`), in one
 * batched round: a cache lookup, then `POOL_CALLS` by `eth_call` for the misses. A pool
 * missing from the result, or mapped to null, has unknown tokens.
 */
export interface PoolResolver {
  resolve(chainId: number, pools: readonly Hex[]): Promise<ReadonlyMap<Hex, PoolInfo | null>>
}

/** Call data of the standard pool getters: `token0()`, `token1()`, `fee()`. */
export const POOL_CALLS = {
  token0: toFunctionSelector('token0()'),
  token1: toFunctionSelector('token1()'),
  fee: toFunctionSelector('fee()'),
} as const

/** Raw `eth_call` results (0x-hex return data), null where the call reverted or failed. */
export type PoolCallResults = Readonly<Record<keyof typeof POOL_CALLS, Hex | null>>

/** A single-word return value as `type`, or null (revert, empty or malformed return data). */
function single(type: string, result: Hex | null): Hex | bigint | null {
  const ws = result === null ? undefined : words(result)
  if (!ws || ws.length !== 1) return null
  return decodeWord(type, ws[0]) ?? null
}

/**
 * The pool's metadata from its getters' results: null unless both tokens answered with an
 * address; `fee` null unless `fee()` answered a uint24.
 */
export function poolInfoFromCalls(results: PoolCallResults): PoolInfo | null {
  const token0 = single('address', results.token0) as Hex | null
  const token1 = single('address', results.token1) as Hex | null
  if (token0 === null || token1 === null) return null
  return { token0, token1, fee: single('uint24', results.fee) as bigint | null }
}

/**
 * The rows of the DEX datasets, keyed by output column name, with the in-memory values the
 * rest of the project stores (schema/kinds.ts): addresses and hashes as Uint8Array, integers
 * as bigint (signed where the quantity is: amounts from the pool's side, ticks, liquidity
 * deltas), text as string. Nullable columns are typed `| null`. The dataset declarations are
 * to mirror these types.
 */
import type { Family, Protocol } from './protocols.ts'

/** Where an event happened: on every row of dex/pools, swaps, liquidity and positions. */
export interface EventColumns {
  block_number: bigint
  block_hash: Uint8Array
  block_timestamp: bigint
  transaction_index: bigint
  transaction_hash: Uint8Array
  log_index: bigint
  tx_from: Uint8Array
  /** Null for a contract creation. */
  tx_to: Uint8Array | null
}

/** What a pool event's row says about the pool: its factory if verified, its tokens if known. */
export interface PoolColumns {
  pool: Uint8Array
  /** The verified factory's protocol; null when the pool is not verified. */
  protocol: Protocol | null
  /** The event layout the log was decoded with. */
  family: Family
  /** The registered factory whose CREATE2 rule yields the pool; null when none does. */
  factory: Uint8Array | null
  pool_verified: boolean
  /** As the pool's creation or the pool itself reported them; null when nothing answered. */
  token0: Uint8Array | null
  token1: Uint8Array | null
  /** Hundredths of a bip: v3 the pool's, v2 the verified factory's from the registry. */
  fee: bigint | null
}

/** dex/pools: one row per PairCreated / PoolCreated. */
export interface PoolRow extends EventColumns {
  /** The creation event's emitter (registered or not). */
  factory: Uint8Array
  pool: Uint8Array
  /** The registered factory's protocol; null for an unregistered emitter. */
  protocol: Protocol | null
  family: Family
  token0: Uint8Array
  token1: Uint8Array
  fee: bigint | null
  tick_spacing: bigint | null
  /** The emitter is registered and its CREATE2 rule yields the pool from the event's key. */
  pool_verified: boolean
}

/** dex/swaps: one row per Swap. */
export interface SwapRow extends EventColumns, PoolColumns {
  sender: Uint8Array
  recipient: Uint8Array
  /** Signed, from the pool's side: positive = paid into the pool (v2: amountIn − amountOut). */
  amount0: bigint
  amount1: bigint
  /** v2 as emitted; null for v3. */
  amount0_in: bigint | null
  amount1_in: bigint | null
  amount0_out: bigint | null
  amount1_out: bigint | null
  /** v3 as emitted; null for v2. */
  sqrt_price_x96: bigint | null
  liquidity: bigint | null
  tick: bigint | null
  /** PancakeSwap v3 only. */
  protocol_fees_token0: bigint | null
  protocol_fees_token1: bigint | null
  /** token1 per token0 in raw units after the swap, exact decimal text (price.ts). */
  price: string | null
  /** Taker side (Dune dex.trades): the token paid into the pool is sold, the one paid out bought. */
  token_bought_address: Uint8Array | null
  token_sold_address: Uint8Array | null
  token_bought_amount_raw: bigint | null
  token_sold_amount_raw: bigint | null
  /** The swap's recipient, as Dune's dex.trades defines taker. */
  taker: Uint8Array
}

/** dex/liquidity: one row per v2 Mint/Burn and v3 Mint/Burn/Collect. */
export interface LiquidityRow extends EventColumns, PoolColumns {
  event: 'mint' | 'burn' | 'collect'
  owner: Uint8Array | null
  sender: Uint8Array | null
  recipient: Uint8Array | null
  tick_lower: bigint | null
  tick_upper: bigint | null
  /** v3 Mint/Burn: the position's liquidity change as emitted (unsigned); null otherwise. */
  liquidity: bigint | null
  amount0: bigint
  amount1: bigint
}

/** dex/positions: one row per event of a registered position manager. */
export interface PositionRow extends EventColumns {
  position_manager: Uint8Array
  protocol: Protocol
  token_id: bigint
  event: 'increase_liquidity' | 'decrease_liquidity' | 'collect' | 'transfer'
  /** From the matched pool event, another event of the token in the transaction, or state; else null. */
  pool: Uint8Array | null
  tick_lower: bigint | null
  tick_upper: bigint | null
  token0: Uint8Array | null
  token1: Uint8Array | null
  /** Signed change: + on increase, − on decrease, 0 on collect and transfer. */
  liquidity: bigint
  /** Tokens added (increase), withdrawn to owed (decrease) or paid (collect); 0 on transfer. */
  amount0: bigint
  amount1: bigint
  /** Collect: the fee part of the amounts (collected − principal owed); null otherwise or when unknown. */
  fees0: bigint | null
  fees1: bigint | null
  /** Collect: who was paid. */
  recipient: Uint8Array | null
  /** The NFT's owner after the event (a transfer's new owner); null when not known. */
  owner: Uint8Array | null
  /** Transfer: the owner before. */
  previous_owner: Uint8Array | null
  /** Audit: the log index of the pool event matched to this one. */
  pool_log_index: bigint | null
}

/**
 * The registry of DEX event ABIs, as data. Each event is an ABI item copied from the Uniswap
 * npm packages (`@uniswap/v2-core`, `@uniswap/v3-core`, `@uniswap/v3-periphery`; tests check
 * every topic0 against those artifacts) plus a decoder from its parameters to the
 * protocol-neutral fields the rows are built from. A protocol is a list of events, so a fork
 * that changed one event (PancakeSwap v3's Swap) is one new entry, and a fork that kept the
 * ABI (SushiSwap, PancakeSwap v2) reuses the same list.
 */
import { compileEvent } from './abi.ts'
import type { Args, CompiledEvent } from './abi.ts'
import type { Hex } from 'viem'

/** v2: constant-product pairs (Uniswap v2 layout); v3: concentrated-liquidity pools (Uniswap v3 layout). */
export type Family = 'v2' | 'v3'

/** A pool creation: PairCreated (v2) or PoolCreated (v3). */
export interface CreatedFields {
  token0: Hex
  token1: Hex
  pool: Hex
  /** v3: the pool's fee in hundredths of a bip; v2: null (the registry knows it). */
  fee: bigint | null
  tick_spacing: bigint | null
}

/** A swap, amounts signed from the pool's side: positive = paid into the pool. */
export interface SwapFields {
  sender: Hex
  recipient: Hex
  amount0: bigint
  amount1: bigint
  amount0_in: bigint | null
  amount1_in: bigint | null
  amount0_out: bigint | null
  amount1_out: bigint | null
  sqrt_price_x96: bigint | null
  liquidity: bigint | null
  tick: bigint | null
  protocol_fees_token0: bigint | null
  protocol_fees_token1: bigint | null
}

/** A v2 pair's reserves after an update. */
export interface SyncFields {
  reserve0: bigint
  reserve1: bigint
}

/** A liquidity change or fee collection of a pool. */
export interface LiquidityFields {
  owner: Hex | null
  sender: Hex | null
  recipient: Hex | null
  tick_lower: bigint | null
  tick_upper: bigint | null
  liquidity: bigint | null
  amount0: bigint
  amount1: bigint
}

/** A v3 position manager event: liquidity, collection or the position NFT's transfer. */
export interface ManagerFields {
  token_id: bigint
  liquidity: bigint | null
  amount0: bigint | null
  amount1: bigint | null
  /** Collect: who was paid. */
  recipient: Hex | null
  /** Transfer: the previous and the new owner (the zero address for a mint or a burn). */
  from: Hex | null
  to: Hex | null
}

interface Spec<R extends string, F> {
  /** `<layout>.<event>`, unique in the registry. */
  id: string
  role: R
  family: Family
  event: CompiledEvent
  fields: (args: Args) => F
}

/** A pool or factory event the decoder turns into rows. */
export type PoolEventSpec =
  Spec<'created', CreatedFields> | Spec<'swap', SwapFields> | Spec<'sync', SyncFields> | Spec<'mint' | 'burn' | 'collect', LiquidityFields>

/** A position manager event. */
export type ManagerEventSpec = Spec<'increase_liquidity' | 'decrease_liquidity' | 'collect' | 'transfer', ManagerFields>

const address = (a: Args, name: string): Hex => a[name] as Hex
const int = (a: Args, name: string): bigint => a[name] as bigint

/** The ABI items (exported for code that encodes such logs: bench/dex.ts). */
export const V2_PAIR_CREATED = {
  type: 'event',
  name: 'PairCreated',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'token0', type: 'address' },
    { indexed: true, name: 'token1', type: 'address' },
    { indexed: false, name: 'pair', type: 'address' },
    { indexed: false, name: '', type: 'uint256' },
  ],
} as const

export const V2_SWAP = {
  type: 'event',
  name: 'Swap',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'sender', type: 'address' },
    { indexed: false, name: 'amount0In', type: 'uint256' },
    { indexed: false, name: 'amount1In', type: 'uint256' },
    { indexed: false, name: 'amount0Out', type: 'uint256' },
    { indexed: false, name: 'amount1Out', type: 'uint256' },
    { indexed: true, name: 'to', type: 'address' },
  ],
} as const

export const V2_SYNC = {
  type: 'event',
  name: 'Sync',
  anonymous: false,
  inputs: [
    { indexed: false, name: 'reserve0', type: 'uint112' },
    { indexed: false, name: 'reserve1', type: 'uint112' },
  ],
} as const

const V2_MINT = {
  type: 'event',
  name: 'Mint',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'sender', type: 'address' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
  ],
} as const

const V2_BURN = {
  type: 'event',
  name: 'Burn',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'sender', type: 'address' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
    { indexed: true, name: 'to', type: 'address' },
  ],
} as const

export const V3_POOL_CREATED = {
  type: 'event',
  name: 'PoolCreated',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'token0', type: 'address' },
    { indexed: true, name: 'token1', type: 'address' },
    { indexed: true, name: 'fee', type: 'uint24' },
    { indexed: false, name: 'tickSpacing', type: 'int24' },
    { indexed: false, name: 'pool', type: 'address' },
  ],
} as const

const V3_SWAP_INPUTS = [
  { indexed: true, name: 'sender', type: 'address' },
  { indexed: true, name: 'recipient', type: 'address' },
  { indexed: false, name: 'amount0', type: 'int256' },
  { indexed: false, name: 'amount1', type: 'int256' },
  { indexed: false, name: 'sqrtPriceX96', type: 'uint160' },
  { indexed: false, name: 'liquidity', type: 'uint128' },
  { indexed: false, name: 'tick', type: 'int24' },
] as const

export const V3_SWAP = { type: 'event', name: 'Swap', anonymous: false, inputs: V3_SWAP_INPUTS } as const

/** PancakeSwap v3's pool: Uniswap v3's Swap plus the protocol fees taken, so another topic0. */
const PANCAKESWAP_V3_SWAP = {
  type: 'event',
  name: 'Swap',
  anonymous: false,
  inputs: [
    ...V3_SWAP_INPUTS,
    { indexed: false, name: 'protocolFeesToken0', type: 'uint128' },
    { indexed: false, name: 'protocolFeesToken1', type: 'uint128' },
  ],
} as const

const V3_MINT = {
  type: 'event',
  name: 'Mint',
  anonymous: false,
  inputs: [
    { indexed: false, name: 'sender', type: 'address' },
    { indexed: true, name: 'owner', type: 'address' },
    { indexed: true, name: 'tickLower', type: 'int24' },
    { indexed: true, name: 'tickUpper', type: 'int24' },
    { indexed: false, name: 'amount', type: 'uint128' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
  ],
} as const

const V3_BURN = {
  type: 'event',
  name: 'Burn',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'owner', type: 'address' },
    { indexed: true, name: 'tickLower', type: 'int24' },
    { indexed: true, name: 'tickUpper', type: 'int24' },
    { indexed: false, name: 'amount', type: 'uint128' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
  ],
} as const

const V3_COLLECT = {
  type: 'event',
  name: 'Collect',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'owner', type: 'address' },
    { indexed: false, name: 'recipient', type: 'address' },
    { indexed: true, name: 'tickLower', type: 'int24' },
    { indexed: true, name: 'tickUpper', type: 'int24' },
    { indexed: false, name: 'amount0', type: 'uint128' },
    { indexed: false, name: 'amount1', type: 'uint128' },
  ],
} as const

const NPM_INCREASE_LIQUIDITY = {
  type: 'event',
  name: 'IncreaseLiquidity',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'tokenId', type: 'uint256' },
    { indexed: false, name: 'liquidity', type: 'uint128' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
  ],
} as const

const NPM_DECREASE_LIQUIDITY = { ...NPM_INCREASE_LIQUIDITY, name: 'DecreaseLiquidity' } as const

const NPM_COLLECT = {
  type: 'event',
  name: 'Collect',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'tokenId', type: 'uint256' },
    { indexed: false, name: 'recipient', type: 'address' },
    { indexed: false, name: 'amount0', type: 'uint256' },
    { indexed: false, name: 'amount1', type: 'uint256' },
  ],
} as const

/** ERC-721 Transfer: topic0 equals ERC-20's, the third indexed parameter tells them apart. */
const NPM_TRANSFER = {
  type: 'event',
  name: 'Transfer',
  anonymous: false,
  inputs: [
    { indexed: true, name: 'from', type: 'address' },
    { indexed: true, name: 'to', type: 'address' },
    { indexed: true, name: 'tokenId', type: 'uint256' },
  ],
} as const

const NO_V2_FIELDS = { amount0_in: null, amount1_in: null, amount0_out: null, amount1_out: null }
const NO_V3_FIELDS = { sqrt_price_x96: null, liquidity: null, tick: null, protocol_fees_token0: null, protocol_fees_token1: null }

const v3Swap = (a: Args) => ({
  sender: address(a, 'sender'),
  recipient: address(a, 'recipient'),
  amount0: int(a, 'amount0'),
  amount1: int(a, 'amount1'),
  ...NO_V2_FIELDS,
  sqrt_price_x96: int(a, 'sqrtPriceX96'),
  liquidity: int(a, 'liquidity'),
  tick: int(a, 'tick'),
})

const V2_EVENTS: readonly PoolEventSpec[] = [
  {
    id: 'uniswap_v2.PairCreated',
    role: 'created',
    family: 'v2',
    event: compileEvent(V2_PAIR_CREATED),
    fields: a => ({ token0: address(a, 'token0'), token1: address(a, 'token1'), pool: address(a, 'pair'), fee: null, tick_spacing: null }),
  },
  {
    id: 'uniswap_v2.Swap',
    role: 'swap',
    family: 'v2',
    event: compileEvent(V2_SWAP),
    fields: a => ({
      sender: address(a, 'sender'),
      recipient: address(a, 'to'),
      amount0: int(a, 'amount0In') - int(a, 'amount0Out'),
      amount1: int(a, 'amount1In') - int(a, 'amount1Out'),
      amount0_in: int(a, 'amount0In'),
      amount1_in: int(a, 'amount1In'),
      amount0_out: int(a, 'amount0Out'),
      amount1_out: int(a, 'amount1Out'),
      ...NO_V3_FIELDS,
    }),
  },
  {
    id: 'uniswap_v2.Sync',
    role: 'sync',
    family: 'v2',
    event: compileEvent(V2_SYNC),
    fields: a => ({ reserve0: int(a, 'reserve0'), reserve1: int(a, 'reserve1') }),
  },
  {
    id: 'uniswap_v2.Mint',
    role: 'mint',
    family: 'v2',
    event: compileEvent(V2_MINT),
    fields: a => ({
      owner: null,
      sender: address(a, 'sender'),
      recipient: null,
      tick_lower: null,
      tick_upper: null,
      liquidity: null,
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
    }),
  },
  {
    id: 'uniswap_v2.Burn',
    role: 'burn',
    family: 'v2',
    event: compileEvent(V2_BURN),
    fields: a => ({
      owner: null,
      sender: address(a, 'sender'),
      recipient: address(a, 'to'),
      tick_lower: null,
      tick_upper: null,
      liquidity: null,
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
    }),
  },
]

const V3_POOL_CREATED_SPEC: PoolEventSpec = {
  id: 'uniswap_v3.PoolCreated',
  role: 'created',
  family: 'v3',
  event: compileEvent(V3_POOL_CREATED),
  fields: a => ({
    token0: address(a, 'token0'),
    token1: address(a, 'token1'),
    pool: address(a, 'pool'),
    fee: int(a, 'fee'),
    tick_spacing: int(a, 'tickSpacing'),
  }),
}

const V3_LIQUIDITY_EVENTS: readonly PoolEventSpec[] = [
  {
    id: 'uniswap_v3.Mint',
    role: 'mint',
    family: 'v3',
    event: compileEvent(V3_MINT),
    fields: a => ({
      owner: address(a, 'owner'),
      sender: address(a, 'sender'),
      recipient: null,
      tick_lower: int(a, 'tickLower'),
      tick_upper: int(a, 'tickUpper'),
      liquidity: int(a, 'amount'),
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
    }),
  },
  {
    id: 'uniswap_v3.Burn',
    role: 'burn',
    family: 'v3',
    event: compileEvent(V3_BURN),
    fields: a => ({
      owner: address(a, 'owner'),
      sender: null,
      recipient: null,
      tick_lower: int(a, 'tickLower'),
      tick_upper: int(a, 'tickUpper'),
      liquidity: int(a, 'amount'),
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
    }),
  },
  {
    id: 'uniswap_v3.Collect',
    role: 'collect',
    family: 'v3',
    event: compileEvent(V3_COLLECT),
    fields: a => ({
      owner: address(a, 'owner'),
      sender: null,
      recipient: address(a, 'recipient'),
      tick_lower: int(a, 'tickLower'),
      tick_upper: int(a, 'tickUpper'),
      liquidity: null,
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
    }),
  },
]

const V3_EVENTS: readonly PoolEventSpec[] = [
  V3_POOL_CREATED_SPEC,
  {
    id: 'uniswap_v3.Swap',
    role: 'swap',
    family: 'v3',
    event: compileEvent(V3_SWAP),
    fields: a => ({ ...v3Swap(a), protocol_fees_token0: null, protocol_fees_token1: null }),
  },
  ...V3_LIQUIDITY_EVENTS,
]

const PANCAKESWAP_V3_EVENTS: readonly PoolEventSpec[] = [
  V3_POOL_CREATED_SPEC,
  {
    id: 'pancakeswap_v3.Swap',
    role: 'swap',
    family: 'v3',
    event: compileEvent(PANCAKESWAP_V3_SWAP),
    fields: a => ({ ...v3Swap(a), protocol_fees_token0: int(a, 'protocolFeesToken0'), protocol_fees_token1: int(a, 'protocolFeesToken1') }),
  },
  ...V3_LIQUIDITY_EVENTS,
]

/** Protocol name (the `protocol` column) → family and the events its factory and pools emit. */
export const PROTOCOLS = {
  uniswap_v2: { family: 'v2', events: V2_EVENTS },
  sushiswap_v2: { family: 'v2', events: V2_EVENTS },
  pancakeswap_v2: { family: 'v2', events: V2_EVENTS },
  uniswap_v3: { family: 'v3', events: V3_EVENTS },
  pancakeswap_v3: { family: 'v3', events: PANCAKESWAP_V3_EVENTS },
} as const satisfies Record<string, { family: Family; events: readonly PoolEventSpec[] }>

/** A registered protocol name: the values of the `protocol` column. */
export type Protocol = keyof typeof PROTOCOLS

/**
 * Events of the v3 NonfungiblePositionManager (Uniswap's and PancakeSwap's emit the same).
 * Decoded only from registered managers: Transfer and the manager's Collect are too common
 * a shape to trust from anyone else.
 */
export const MANAGER_EVENTS: readonly ManagerEventSpec[] = [
  {
    id: 'position_manager.IncreaseLiquidity',
    role: 'increase_liquidity',
    family: 'v3',
    event: compileEvent(NPM_INCREASE_LIQUIDITY),
    fields: a => ({
      token_id: int(a, 'tokenId'),
      liquidity: int(a, 'liquidity'),
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
      recipient: null,
      from: null,
      to: null,
    }),
  },
  {
    id: 'position_manager.DecreaseLiquidity',
    role: 'decrease_liquidity',
    family: 'v3',
    event: compileEvent(NPM_DECREASE_LIQUIDITY),
    fields: a => ({
      token_id: int(a, 'tokenId'),
      liquidity: int(a, 'liquidity'),
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
      recipient: null,
      from: null,
      to: null,
    }),
  },
  {
    id: 'position_manager.Collect',
    role: 'collect',
    family: 'v3',
    event: compileEvent(NPM_COLLECT),
    fields: a => ({
      token_id: int(a, 'tokenId'),
      liquidity: null,
      amount0: int(a, 'amount0'),
      amount1: int(a, 'amount1'),
      recipient: address(a, 'recipient'),
      from: null,
      to: null,
    }),
  },
  {
    id: 'position_manager.Transfer',
    role: 'transfer',
    family: 'v3',
    event: compileEvent(NPM_TRANSFER),
    fields: a => ({
      token_id: int(a, 'tokenId'),
      liquidity: null,
      amount0: null,
      amount1: null,
      recipient: null,
      from: address(a, 'from'),
      to: address(a, 'to'),
    }),
  },
]

/** Every pool and factory event of the registry, once each, by topic0. */
export const POOL_EVENTS_BY_TOPIC: ReadonlyMap<Hex, PoolEventSpec> = new Map(
  Object.values(PROTOCOLS)
    .flatMap(p => p.events)
    .map(spec => [spec.event.topic0, spec] as const),
)

/** Manager events by topic0. */
export const MANAGER_EVENTS_BY_TOPIC: ReadonlyMap<Hex, ManagerEventSpec> = new Map(
  MANAGER_EVENTS.map(spec => [spec.event.topic0, spec] as const),
)

/** Whether a protocol's pools emit the event (a pancake-style Swap never comes from a Uniswap pool). */
export const protocolEmits = (protocol: Protocol, spec: PoolEventSpec): boolean =>
  (PROTOCOLS[protocol].events as readonly PoolEventSpec[]).includes(spec)

/**
 * Known factories and position managers per chain, and the CREATE2 rule that decides whether
 * a pool is a factory's: its address must equal the one derived from the deployer, the pool's
 * tokens (and fee) and the init-code hash. That needs chain data only, so a contract that
 * merely emits Swap events, or lies about its tokens, is never counted as a factory's pool.
 * How each constant was verified is in README.md.
 */
import { concat, encodeAbiParameters, keccak256 } from 'viem'
import type { Hex } from 'viem'
import { PROTOCOLS, protocolEmits } from './protocols.ts'
import type { Family, PoolEventSpec, Protocol } from './protocols.ts'

/** A factory whose pools are verifiable: where its CREATE2 deployer is and what it deploys. */
export interface FactoryEntry {
  protocol: Protocol
  /** Emits PairCreated / PoolCreated; lowercase. */
  factory: Hex
  /** The CREATE2 sender: the factory itself, except PancakeSwap v3's separate PoolDeployer. */
  deployer: Hex
  initCodeHash: Hex
  /** v2 swap fee in hundredths of a bip (3000 = 0.30 %); v3 pools carry their own. */
  fee: bigint | null
}

/** A v3 position manager whose NFT events become dex/positions rows. */
export interface PositionManagerEntry {
  protocol: Protocol
  /** The NonfungiblePositionManager; lowercase. */
  address: Hex
  /** Pools it manages are this factory's. */
  factory: Hex
}

const UNISWAP_V2_INIT_CODE_HASH = '0x96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f'
const UNISWAP_V3_INIT_CODE_HASH = '0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54'

/** Devnet (scripts/dev/devnet/deploy.ts): account 0 of the test mnemonic deploys at fixed nonces. */
const DEVNET_V2_FACTORY = '0xdc64a140aa3e981100a9beca4e685f962f0cf6c9'
const DEVNET_V3_FACTORY = '0x5fc8d32690cc91d4c39d9d3abcbd16989f875707'

/** Factories by chain id. */
export const FACTORIES: Readonly<Record<number, readonly FactoryEntry[]>> = {
  1: [
    {
      protocol: 'uniswap_v2',
      factory: '0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f',
      deployer: '0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f',
      initCodeHash: UNISWAP_V2_INIT_CODE_HASH,
      fee: 3000n,
    },
    {
      protocol: 'sushiswap_v2',
      factory: '0xc0aee478e3658e2610c5f7a4a2e1777ce9e4f2ac',
      deployer: '0xc0aee478e3658e2610c5f7a4a2e1777ce9e4f2ac',
      initCodeHash: '0xe18a34eb0e04b04f7a0ac29a6e80748dca96319b42c54d679cb821dca90c6303',
      fee: 3000n,
    },
    {
      protocol: 'pancakeswap_v2',
      factory: '0x1097053fd2ea711dad45caccc45eff7548fcb362',
      deployer: '0x1097053fd2ea711dad45caccc45eff7548fcb362',
      initCodeHash: '0x57224589c67f3f30a6b0d7a1b54cf3153ab84563bc609ef41dfb34f8b2974d2d',
      fee: 2500n,
    },
    {
      protocol: 'uniswap_v3',
      factory: '0x1f98431c8ad98523631ae4a59f267346ea31f984',
      deployer: '0x1f98431c8ad98523631ae4a59f267346ea31f984',
      initCodeHash: UNISWAP_V3_INIT_CODE_HASH,
      fee: null,
    },
    {
      protocol: 'pancakeswap_v3',
      factory: '0x0bfbcf9fa4f9c56b0f40a671ad40e0805a091865',
      deployer: '0x41ff9aa7e16b8b1a8a8dc4f0efacd93d02d071c9',
      initCodeHash: '0x6ce8eb472fa82df5469c6ab6d485f17c3ad13c8cd7af59b3d4a8026c5ce0f7e2',
      fee: null,
    },
  ],
  31337: [
    {
      protocol: 'uniswap_v2',
      factory: DEVNET_V2_FACTORY,
      deployer: DEVNET_V2_FACTORY,
      initCodeHash: UNISWAP_V2_INIT_CODE_HASH,
      fee: 3000n,
    },
    { protocol: 'uniswap_v3', factory: DEVNET_V3_FACTORY, deployer: DEVNET_V3_FACTORY, initCodeHash: UNISWAP_V3_INIT_CODE_HASH, fee: null },
  ],
}

/** Position managers by chain id. */
export const POSITION_MANAGERS: Readonly<Record<number, readonly PositionManagerEntry[]>> = {
  1: [
    {
      protocol: 'uniswap_v3',
      address: '0xc36442b4a4522e871399cd717abdd847ab11fe88',
      factory: '0x1f98431c8ad98523631ae4a59f267346ea31f984',
    },
    {
      protocol: 'pancakeswap_v3',
      address: '0x46a15b0b27311cedf172ab29e4f4766fbe7f4364',
      factory: '0x0bfbcf9fa4f9c56b0f40a671ad40e0805a091865',
    },
  ],
  31337: [{ protocol: 'uniswap_v3', address: '0xa513e6e4b8f2a923d98304ec87f64353c4d5c853', factory: DEVNET_V3_FACTORY }],
}

/** The pool's tokens as the factory sorted them, and its fee (v3 only). */
export interface PoolKey {
  token0: Hex
  token1: Hex
  fee: bigint | null
}

/**
 * The CREATE2 salt: keccak(token0 ‖ token1) packed for v2 (UniswapV2Factory.createPair),
 * keccak(abi.encode(token0, token1, fee)) for v3 (UniswapV3PoolDeployer.deploy); null when a
 * v3 key has no fee or one outside uint24.
 */
function salt(family: Family, key: PoolKey): Hex | null {
  if (family === 'v2') return keccak256(concat([key.token0, key.token1]))
  if (key.fee === null || key.fee < 0n || key.fee >= 1n << 24n) return null
  return keccak256(
    encodeAbiParameters([{ type: 'address' }, { type: 'address' }, { type: 'uint24' }], [key.token0, key.token1, Number(key.fee)]),
  )
}

/** The address the entry's deployer gives a pool of this key (lowercase), or null without a valid v3 fee. */
export function poolAddress(entry: FactoryEntry, key: PoolKey): Hex | null {
  const s = salt(PROTOCOLS[entry.protocol].family, key)
  if (s === null) return null
  return `0x${keccak256(concat(['0xff', entry.deployer, s, entry.initCodeHash])).slice(26)}`
}

/**
 * The registered factory whose CREATE2 rule yields `pool` from the key, among the chain's
 * factories whose pools emit the event; null when none does. Every candidate is tried, so a
 * pool's own `factory()` answer is never needed (nor trusted).
 */
export function verifyPool(chainId: number, spec: PoolEventSpec, pool: Hex, key: PoolKey): FactoryEntry | null {
  for (const entry of FACTORIES[chainId] ?? []) {
    if (protocolEmits(entry.protocol, spec) && poolAddress(entry, key) === pool.toLowerCase()) return entry
  }
  return null
}

/** The registered factory at an address, if any. */
export const factoryAt = (chainId: number, address: Hex): FactoryEntry | undefined =>
  (FACTORIES[chainId] ?? []).find(f => f.factory === address.toLowerCase())

/** The registered position manager at an address, if any. */
export const positionManagerAt = (chainId: number, address: Hex): PositionManagerEntry | undefined =>
  (POSITION_MANAGERS[chainId] ?? []).find(m => m.address === address.toLowerCase())

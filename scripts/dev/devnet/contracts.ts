/**
 * Compiled Uniswap v2/v3 contracts from the `@uniswap/*` npm packages, so the devnet deploys
 * the real bytecode (whose init-code hashes the routers rely on) without a Solidity toolchain.
 */
import { createRequire } from 'node:module'
import { encodeFunctionData, toEventSelector } from 'viem'
import type { Abi, AbiEvent, Hex } from 'viem'

export interface Artifact {
  abi: Abi
  bytecode: Hex
}

/** Where each contract's artifact lives inside node_modules. */
export const ARTIFACT_PATHS = {
  /** Test token of v2-periphery: `constructor(uint totalSupply)` mints it all to the deployer. */
  ERC20: '@uniswap/v2-periphery/build/ERC20.json',
  WETH9: '@uniswap/v2-periphery/build/WETH9.json',
  UniswapV2Factory: '@uniswap/v2-core/build/UniswapV2Factory.json',
  UniswapV2Pair: '@uniswap/v2-core/build/UniswapV2Pair.json',
  UniswapV2Router02: '@uniswap/v2-periphery/build/UniswapV2Router02.json',
  UniswapV3Factory: '@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json',
  UniswapV3Pool: '@uniswap/v3-core/artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json',
  NonfungiblePositionManager: '@uniswap/v3-periphery/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json',
  SwapRouter: '@uniswap/v3-periphery/artifacts/contracts/SwapRouter.sol/SwapRouter.json',
} as const

export type ContractName = keyof typeof ARTIFACT_PATHS

const require = createRequire(import.meta.url)
const cache = new Map<ContractName, Artifact>()

/** ABI and creation bytecode (0x-prefixed; the v2 builds omit the prefix) of one contract. */
export function loadArtifact(name: ContractName): Artifact {
  let artifact = cache.get(name)
  if (!artifact) {
    const json = require(ARTIFACT_PATHS[name]) as { abi: Abi; bytecode: string }
    const bytecode = (json.bytecode.startsWith('0x') ? json.bytecode : `0x${json.bytecode}`) as Hex
    artifact = { abi: json.abi, bytecode }
    cache.set(name, artifact)
  }
  return artifact
}

/** Call data for a function of a devnet contract. */
export function callData(name: ContractName, functionName: string, args: readonly unknown[] = []): Hex {
  return encodeFunctionData({ abi: loadArtifact(name).abi, functionName, args })
}

/** A log kind the workload reports on: `<source>.<event>`, e.g. `UniswapV3Pool.Swap`. */
export interface EventKind {
  key: string
  topic0: Hex
  /** Topics including topic0; tells ERC-20 from ERC-721 `Transfer`, which share topic0. */
  topics: number
}

/** Events emitted by the devnet contracts, with their selectors derived from the artifacts' ABIs. */
export function devnetEventKinds(): EventKind[] {
  const pick = (source: string, name: ContractName, events: string[]): EventKind[] => {
    const abi = loadArtifact(name).abi
    return events.map(event => {
      const item = abi.find((x): x is AbiEvent => x.type === 'event' && x.name === event)
      if (!item) throw new Error(`${name} has no event ${event}`)
      return { key: `${source}.${event}`, topic0: toEventSelector(item), topics: 1 + item.inputs.filter(i => i.indexed).length }
    })
  }
  const nft = loadArtifact('NonfungiblePositionManager').abi
  const nftTransfer = nft.find((x): x is AbiEvent => x.type === 'event' && x.name === 'Transfer')
  if (!nftTransfer) throw new Error('NonfungiblePositionManager has no Transfer event')
  return [
    ...pick('ERC20', 'ERC20', ['Transfer', 'Approval']),
    { key: 'ERC721.Transfer', topic0: toEventSelector(nftTransfer), topics: 4 },
    ...pick('WETH9', 'WETH9', ['Deposit', 'Withdrawal']),
    ...pick('UniswapV2Factory', 'UniswapV2Factory', ['PairCreated']),
    ...pick('UniswapV2Pair', 'UniswapV2Pair', ['Swap', 'Mint', 'Burn', 'Sync']),
    ...pick('UniswapV3Factory', 'UniswapV3Factory', ['PoolCreated', 'FeeAmountEnabled', 'OwnerChanged']),
    ...pick('UniswapV3Pool', 'UniswapV3Pool', ['Initialize', 'Swap', 'Mint', 'Burn', 'Collect']),
    ...pick('NonfungiblePositionManager', 'NonfungiblePositionManager', ['IncreaseLiquidity', 'DecreaseLiquidity', 'Collect']),
  ]
}

/** The kind of a log given its topics, or `other`. */
export function classifyLog(kinds: readonly EventKind[], topics: readonly Hex[]): string {
  const topic0 = topics[0]
  const match = kinds.find(k => k.topic0 === topic0 && k.topics === topics.length)
  return match?.key ?? 'other'
}

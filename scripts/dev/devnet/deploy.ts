/**
 * Deploys the Uniswap v2/v3 contracts and three test tokens onto a devnet, from the
 * npm artifacts, in four blocks. Addresses follow from the deployer's nonces, so they are
 * the same on every fresh anvil.
 */
import { encodeDeployData, getContractAddress } from 'viem'
import type { Address } from 'viem'
import { mineBlock } from './blocks.ts'
import type { Devnet } from './blocks.ts'
import { loadArtifact } from './contracts.ts'
import type { ContractName } from './contracts.ts'

/** Index of the test account that deploys every contract and mints every token. */
export const DEPLOYER = 0

/** The test tokens: labels are ours (the artifact's token is always named "Uniswap V2"). */
export const TEST_TOKENS = [
  { label: 'TKA', supply: 1_000_000_000n * 10n ** 18n },
  { label: 'TKB', supply: 2_000_000_000n * 10n ** 18n },
  { label: 'TKC', supply: 3_000_000_000n * 10n ** 18n },
] as const

export interface DeployedToken {
  label: string
  address: Address
  /** Total supply in base units, as a decimal string. */
  supply: string
}

/** Addresses of everything `deployContracts` created. */
export interface DeployedContracts {
  tokens: DeployedToken[]
  weth: Address
  v2Factory: Address
  v2Router: Address
  v3Factory: Address
  positionManager: Address
  swapRouter: Address
}

/** Deploys contracts from the deployer, in order, as one block; returns their addresses. */
async function deployBlock(dev: Devnet, items: readonly (readonly [ContractName, readonly unknown[]])[]): Promise<Address[]> {
  const from = dev.accounts[DEPLOYER].address
  const first = dev.nonces[DEPLOYER]
  const addresses = items.map((_, i) => getContractAddress({ from, nonce: BigInt(first + i) }))
  await mineBlock(
    dev,
    items.map(([name, args]) => {
      const { abi, bytecode } = loadArtifact(name)
      return { from: DEPLOYER, data: encodeDeployData({ abi, bytecode, args }) }
    }),
  )
  return addresses
}

/**
 * Deploys tokens, WETH9, both factories, the v2 router, the v3 position manager (with the
 * deployer's address as token descriptor: `tokenURI` is never called) and the v3 swap router.
 * Later blocks only reference addresses from earlier ones, so deployment gas can be estimated.
 */
export async function deployContracts(dev: Devnet): Promise<DeployedContracts> {
  const deployer = dev.accounts[DEPLOYER].address
  const tokens = await deployBlock(
    dev,
    TEST_TOKENS.map(t => ['ERC20', [t.supply]] as const),
  )
  const [weth, v2Factory, v3Factory] = await deployBlock(dev, [
    ['WETH9', []],
    ['UniswapV2Factory', [deployer]],
    ['UniswapV3Factory', []],
  ])
  const [v2Router, positionManager] = await deployBlock(dev, [
    ['UniswapV2Router02', [v2Factory, weth]],
    ['NonfungiblePositionManager', [v3Factory, weth, deployer]],
  ])
  const [swapRouter] = await deployBlock(dev, [['SwapRouter', [v3Factory, weth]]])
  return {
    tokens: TEST_TOKENS.map((t, i) => ({ label: t.label, address: tokens[i], supply: String(t.supply) })),
    weth,
    v2Factory,
    v2Router,
    v3Factory,
    positionManager,
    swapRouter,
  }
}

/**
 * The recorded mainnet data as decoder input, and what the tests know about it independently
 * of src/dex: event ABIs from the npm Uniswap artifacts, and pool keys established from the
 * ERC-20 transfers around each pool event, proven by CREATE2 with constants written here.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { concat, encodeAbiParameters, keccak256, parseAbi, toEventSelector } from 'viem'
import type { Abi, AbiEvent, Hex } from 'viem'
import type { DexBlock, DexLog } from '../../src/dex/decode.ts'
import { sharedPath } from '../support/shared.ts'

export type Json = any

export const DATA = sharedPath('data', 'evm-mainnet')
/** Blocks recorded with full transactions and receipts. */
export const FULL_BLOCKS = [17000000, 18000000, 18500000]

const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8'))
const require = createRequire(import.meta.url)
const artifact = (path: string): Abi => (require(path) as { abi: Abi }).abi

/** Event ABIs straight from the npm packages' artifacts. */
export const ARTIFACT_ABIS = {
  v2Pair: artifact('@uniswap/v2-core/build/IUniswapV2Pair.json'),
  v2Factory: artifact('@uniswap/v2-core/build/IUniswapV2Factory.json'),
  v3Pool: artifact('@uniswap/v3-core/artifacts/contracts/interfaces/IUniswapV3Pool.sol/IUniswapV3Pool.json'),
  v3Factory: artifact('@uniswap/v3-core/artifacts/contracts/interfaces/IUniswapV3Factory.sol/IUniswapV3Factory.json'),
  positionManager: artifact(
    '@uniswap/v3-periphery/artifacts/contracts/interfaces/INonfungiblePositionManager.sol/INonfungiblePositionManager.json',
  ),
  /** PancakeSwap v3's pool Swap, written out from its published interface (no npm artifact here). */
  pancakeV3Pool: parseAbi([
    'event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick, uint128 protocolFeesToken0, uint128 protocolFeesToken1)',
  ]),
}

/** One event of an artifact ABI by name. */
export function artifactEvent(abi: Abi, name: string): AbiEvent {
  const e = abi.find((x): x is AbiEvent => x.type === 'event' && x.name === name)
  if (!e) throw new Error(`no event ${name}`)
  return e
}

export const TOPIC = {
  v2Swap: toEventSelector(artifactEvent(ARTIFACT_ABIS.v2Pair, 'Swap')),
  v2Sync: toEventSelector(artifactEvent(ARTIFACT_ABIS.v2Pair, 'Sync')),
  v2Mint: toEventSelector(artifactEvent(ARTIFACT_ABIS.v2Pair, 'Mint')),
  v2Burn: toEventSelector(artifactEvent(ARTIFACT_ABIS.v2Pair, 'Burn')),
  v3Swap: toEventSelector(artifactEvent(ARTIFACT_ABIS.v3Pool, 'Swap')),
  v3Mint: toEventSelector(artifactEvent(ARTIFACT_ABIS.v3Pool, 'Mint')),
  v3Burn: toEventSelector(artifactEvent(ARTIFACT_ABIS.v3Pool, 'Burn')),
  v3Collect: toEventSelector(artifactEvent(ARTIFACT_ABIS.v3Pool, 'Collect')),
  pancakeSwap: toEventSelector(artifactEvent(ARTIFACT_ABIS.pancakeV3Pool, 'Swap')),
  increase: toEventSelector(artifactEvent(ARTIFACT_ABIS.positionManager, 'IncreaseLiquidity')),
  decrease: toEventSelector(artifactEvent(ARTIFACT_ABIS.positionManager, 'DecreaseLiquidity')),
  npmCollect: toEventSelector(artifactEvent(ARTIFACT_ABIS.positionManager, 'Collect')),
  transfer: toEventSelector(artifactEvent(ARTIFACT_ABIS.positionManager, 'Transfer')),
}

/** A full recorded block with its receipts' logs. */
export function fullBlock(n: number): DexBlock {
  const block = readJson(join(DATA, 'blocks', `mainnet_block_${n}_full.json`))
  const receipts: Json[] = readJson(join(DATA, 'receipts', `mainnet_receipts_${n}.json`))
  return { ...block, logs: receipts.flatMap(r => r.logs) }
}

/**
 * A block from its receipts alone (no recorded body): transactions from the receipts' hash,
 * from and to; timestamp unknown (0).
 */
export function receiptsBlock(n: number): DexBlock {
  const receipts: Json[] = readJson(join(DATA, 'receipts', `mainnet_receipts_${n}.json`))
  return {
    number: `0x${n.toString(16)}`,
    hash: receipts[0].blockHash,
    timestamp: '0x0',
    transactions: receipts.map(r => ({ hash: r.transactionHash, from: r.from, to: r.to })),
    logs: receipts.flatMap(r => r.logs),
  }
}

const ZERO = '0x0000000000000000000000000000000000000000'

/** Blocks of an eth_getLogs file: transactions stand in with the logs' hashes and a zero sender. */
export function logsBlocks(file: string): DexBlock[] {
  const logs: Json[] = readJson(join(DATA, 'logs', file))
  const byBlock = new Map<string, Json[]>()
  for (const l of logs) byBlock.set(l.blockNumber, [...(byBlock.get(l.blockNumber) ?? []), l])
  return [...byBlock].map(([number, ls]) => {
    const transactions: { hash: Hex; from: Hex }[] = []
    for (const l of ls) transactions[Number(l.transactionIndex)] = { hash: l.transactionHash, from: ZERO }
    return { number: number as Hex, hash: ls[0].blockHash, timestamp: ls[0].blockTimestamp ?? '0x0', transactions, logs: ls }
  })
}

/** Every recorded block the decoder can read: full blocks, receipts-only blocks, eth_getLogs files. */
export function allRecordedBlocks(): { source: string; blocks: DexBlock[] }[] {
  const receipts = readdirSync(join(DATA, 'receipts')).map(f => Number(/_(\d+)\.json$/.exec(f)![1]))
  return [
    ...receipts.map(n => ({ source: `receipts ${n}`, blocks: [FULL_BLOCKS.includes(n) ? fullBlock(n) : receiptsBlock(n)] })),
    ...readdirSync(join(DATA, 'logs')).map(f => ({ source: `logs ${f}`, blocks: logsBlocks(f) })),
  ]
}

/** Factories as published by each protocol (PancakeSwap v3 deploys pools from a separate PoolDeployer), for establishing pool keys independently. */
export const KNOWN_FACTORIES = [
  {
    protocol: 'uniswap_v2',
    factory: '0x5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f',
    deployer: '0x5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f',
    hash: '0x96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f',
    fees: [null],
  },
  {
    protocol: 'sushiswap_v2',
    factory: '0xC0AEe478e3658e2610c5F7A4A2E1777cE9e4f2Ac',
    deployer: '0xC0AEe478e3658e2610c5F7A4A2E1777cE9e4f2Ac',
    hash: '0xe18a34eb0e04b04f7a0ac29a6e80748dca96319b42c54d679cb821dca90c6303',
    fees: [null],
  },
  {
    protocol: 'pancakeswap_v2',
    factory: '0x1097053Fd2ea711dad45caCcc45EfF7548fCB362',
    deployer: '0x1097053Fd2ea711dad45caCcc45EfF7548fCB362',
    hash: '0x57224589c67f3f30a6b0d7a1b54cf3153ab84563bc609ef41dfb34f8b2974d2d',
    fees: [null],
  },
  {
    protocol: 'uniswap_v3',
    factory: '0x1F98431c8aD98523631AE4a59f267346ea31F984',
    deployer: '0x1F98431c8aD98523631AE4a59f267346ea31F984',
    hash: '0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54',
    fees: [100, 500, 3000, 10000],
  },
  {
    protocol: 'pancakeswap_v3',
    factory: '0x0BFbCF9fa4f9C56B0F40a671Ad40E0805A091865',
    deployer: '0x41ff9AA7e16B8B1a8a8dc4f0eFacd93D02d071c9',
    hash: '0x6ce8eb472fa82df5469c6ab6d485f17c3ad13c8cd7af59b3d4a8026c5ce0f7e2',
    fees: [100, 500, 2500, 10000],
  },
] as const

/** CREATE2 written out from the Solidity sources: keccak(0xff ‖ deployer ‖ salt ‖ init code hash)[12:]. */
export function create2(deployer: Hex, token0: Hex, token1: Hex, fee: number | null, hash: Hex): Hex {
  const salt =
    fee === null
      ? keccak256(concat([token0, token1]))
      : keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'address' }, { type: 'uint24' }], [token0, token1, fee]))
  return `0x${keccak256(concat(['0xff', deployer, salt, hash])).slice(-40)}`
}

export interface EstablishedPool {
  protocol: string
  factory: string
  token0: Hex
  token1: Hex
  fee: number | null
}

const POOL_TOPICS = new Set<string>([
  TOPIC.v2Swap,
  TOPIC.v2Mint,
  TOPIC.v2Burn,
  TOPIC.v3Swap,
  TOPIC.v3Mint,
  TOPIC.v3Burn,
  TOPIC.v3Collect,
  TOPIC.pancakeSwap,
])
const ERC20_TRANSFER = TOPIC.transfer
const topicAddress = (t: Hex): string => `0x${t.slice(26)}`

/**
 * Pools of the logs whose key can be established: some pair of the tokens transferred to or
 * from the pool in a transaction of its events (and a fee tier) gives its address by CREATE2
 * with a known factory.
 */
export function establishPools(logs: readonly DexLog[]): Map<string, EstablishedPool> {
  const tokens = new Map<string, Set<string>>()
  const byTx = new Map<string, DexLog[]>()
  for (const l of logs) byTx.set(l.transactionHash, [...(byTx.get(l.transactionHash) ?? []), l])
  for (const l of logs) {
    if (!POOL_TOPICS.has(l.topics[0])) continue
    const pool = l.address.toLowerCase()
    const set = tokens.get(pool) ?? new Set<string>()
    for (const t of byTx.get(l.transactionHash)!) {
      if (
        t.topics[0] === ERC20_TRANSFER &&
        t.topics.length === 3 &&
        (topicAddress(t.topics[1]) === pool || topicAddress(t.topics[2]) === pool)
      )
        set.add(t.address.toLowerCase())
    }
    tokens.set(pool, set)
  }
  const out = new Map<string, EstablishedPool>()
  for (const [pool, set] of tokens) {
    const list = [...set].sort()
    for (const [i, a] of list.entries()) {
      for (const b of list.slice(i + 1)) {
        for (const f of KNOWN_FACTORIES) {
          for (const fee of f.fees) {
            if (create2(f.deployer, a as Hex, b as Hex, fee, f.hash) === pool)
              out.set(pool, { protocol: f.protocol, factory: f.factory.toLowerCase(), token0: a as Hex, token1: b as Hex, fee })
          }
        }
      }
    }
  }
  return out
}

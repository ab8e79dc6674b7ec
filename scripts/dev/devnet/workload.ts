/**
 * A deterministic Uniswap v2/v3 workload for the devnet: the source of the bundled sample
 * lake, of test chains and of the live demo's blocks. Same fresh anvil, same options → same
 * chain, block hashes included (timestamps advance a fixed 12 s per block).
 */
import { decodeEventLog, encodeDeployData, getAddress, maxUint128, maxUint256 } from 'viem'
import type { Address, TransactionReceipt } from 'viem'
import { mineBlock, openDevnet } from './blocks.ts'
import type { Devnet, Tally, TxSpec } from './blocks.ts'
import { callData, loadArtifact } from './contracts.ts'
import type { ContractName } from './contracts.ts'
import { deployContracts, DEPLOYER } from './deploy.ts'
import type { DeployedContracts } from './deploy.ts'
import { mulberry32 } from '../random.ts'

/** Accounts by role (indices of the test mnemonic's accounts). */
export const TRADERS = [1, 2, 3, 4] as const
export const LIQUIDITY_PROVIDERS = [5, 6] as const
const PAYER = 7
const LATE_DEPLOYER = 9

/** Seconds between block timestamps while the workload runs. */
export const BLOCK_INTERVAL_SECONDS = 12
const UNIT = 10n ** 18n
const DEADLINE = 4_102_444_800n
/** sqrt(1) in Q64.96: every v3 pool starts at price 1 (all tokens have 18 decimals). */
const SQRT_PRICE_1 = 2n ** 96n
const MAX_TICK = 887272

export interface WorkloadOptions {
  /** Activity rounds after setup (about 2 blocks and 35 logs each). Default 100. */
  rounds?: number
  /** Mnemonic anvil was started with. Default DEVNET_MNEMONIC. */
  mnemonic?: string
}

export interface V2Pair {
  label: string
  tokenA: Address
  tokenB: Address
  address: Address
  /** The pair holds WETH and is traded with ETH through the router. */
  eth: boolean
}

export interface V3Pool {
  label: string
  token0: Address
  token1: Address
  fee: number
  tickSpacing: number
  address: Address
}

/** A v3 position NFT minted by the workload. */
export interface Position {
  tokenId: bigint
  owner: number
  pool: number
}

/** Everything `runActivityRound` needs: the connection, addresses and positions so far. */
export interface WorkloadContext {
  dev: Devnet
  contracts: DeployedContracts
  pairs: V2Pair[]
  pools: V3Pool[]
  positions: Position[]
  /** Token contracts deployed during rounds. */
  lateTokens: Address[]
  /** First block the workload mined (the block after the one it started on). */
  fromBlock: number
  rounds: number
}

/** Addresses the workload created, as printable data. */
export interface WorkloadAddresses extends DeployedContracts {
  accounts: Address[]
  v2Pairs: V2Pair[]
  v3Pools: V3Pool[]
  /** v3 position NFTs minted by the workload. */
  positions: { tokenId: string; owner: Address; pool: Address }[]
  /** Token contracts deployed during rounds. */
  lateTokens: Address[]
}

/** What the workload put on chain, counted from the receipts of every block it mined. */
export interface WorkloadReport extends Tally {
  chainId: number
  rounds: number
  fromBlock: number
  toBlock: number
  addresses: WorkloadAddresses
}

/** Deploys the contracts, runs `rounds` activity rounds and reports what it produced. */
export async function runWorkload(rpcUrl: string, opts: WorkloadOptions = {}): Promise<WorkloadReport> {
  const ctx = await setupWorkload(rpcUrl, opts)
  const rounds = opts.rounds ?? 100
  for (let i = 0; i < rounds; i++) await runActivityRound(ctx, i)
  return workloadReport(ctx)
}

/**
 * Fixes the block timestamp interval, deploys the contracts, funds and approves the trading
 * accounts, creates three v2 pairs and three v3 pools and seeds them with liquidity.
 */
export async function setupWorkload(rpcUrl: string, opts: WorkloadOptions = {}): Promise<WorkloadContext> {
  const dev = await openDevnet(rpcUrl, { mnemonic: opts.mnemonic })
  const fromBlock = Number(await dev.client.getBlockNumber()) + 1
  await dev.test.setBlockTimestampInterval({ interval: BLOCK_INTERVAL_SECONDS })
  const contracts = await deployContracts(dev)
  const [tka, tkb, tkc] = contracts.tokens.map(t => t.address)
  const weth = contracts.weth
  const erc20 = [tka, tkb, tkc]

  // Fund: tokens from the deployer, WETH by wrapping each account's own ETH.
  await mineBlock(dev, [
    ...[...TRADERS, ...LIQUIDITY_PROVIDERS].flatMap(to =>
      erc20.map(token => ({
        from: DEPLOYER,
        to: token,
        gas: 80_000n,
        data: callData('ERC20', 'transfer', [dev.accounts[to].address, 200_000n * UNIT]),
      })),
    ),
    ...TRADERS.map(from => ({ from, to: weth, gas: 80_000n, value: 2_000n * UNIT, data: callData('WETH9', 'deposit') })),
    ...LIQUIDITY_PROVIDERS.map(from => ({ from, to: weth, gas: 80_000n, value: 4_000n * UNIT, data: callData('WETH9', 'deposit') })),
  ])
  const approve = (from: number, token: Address, spender: Address): TxSpec => ({
    from,
    to: token,
    gas: 80_000n,
    data: callData('ERC20', 'approve', [spender, maxUint256]),
  })
  await mineBlock(dev, [
    ...TRADERS.flatMap(from =>
      [...erc20, weth].flatMap(token => [approve(from, token, contracts.v2Router), approve(from, token, contracts.swapRouter)]),
    ),
    ...LIQUIDITY_PROVIDERS.flatMap(from =>
      [...erc20, weth].flatMap(token => [approve(from, token, contracts.v2Router), approve(from, token, contracts.positionManager)]),
    ),
  ])

  const pairTokens: [string, Address, Address][] = [
    ['TKA/TKB', tka, tkb],
    ['TKB/TKC', tkb, tkc],
    ['TKA/WETH', tka, weth],
  ]
  await mineBlock(
    dev,
    pairTokens.map(([, a, b]) => ({ from: DEPLOYER, to: contracts.v2Factory, data: callData('UniswapV2Factory', 'createPair', [a, b]) })),
  )
  const pairs: V2Pair[] = []
  for (const [label, tokenA, tokenB] of pairTokens) {
    const address = await read<Address>(dev, 'UniswapV2Factory', contracts.v2Factory, 'getPair', [tokenA, tokenB])
    pairs.push({ label, tokenA, tokenB, address, eth: tokenB === weth })
  }

  const poolSpecs: [string, Address, Address, number, number][] = [
    ['TKA/TKB', tka, tkb, 3000, 60],
    ['TKB/TKC', tkb, tkc, 500, 10],
    ['TKC/WETH', tkc, weth, 10000, 200],
  ]
  const sorted = poolSpecs.map(([label, a, b, fee, tickSpacing]) => {
    const [token0, token1] = sortTokens(a, b)
    return { label, token0, token1, fee, tickSpacing }
  })
  await mineBlock(
    dev,
    sorted.map(p => ({
      from: DEPLOYER,
      to: contracts.positionManager,
      data: callData('NonfungiblePositionManager', 'createAndInitializePoolIfNecessary', [p.token0, p.token1, p.fee, SQRT_PRICE_1]),
    })),
  )
  const pools: V3Pool[] = []
  for (const p of sorted)
    pools.push({ ...p, address: await read<Address>(dev, 'UniswapV3Factory', contracts.v3Factory, 'getPool', [p.token0, p.token1, p.fee]) })

  const ctx: WorkloadContext = { dev, contracts, pairs, pools, positions: [], lateTokens: [], fromBlock, rounds: 0 }
  const [lpA, lpB] = LIQUIDITY_PROVIDERS
  const mints = pools.flatMap((pool, p) => [
    { owner: lpB, pool: p, spec: mintPosition(ctx, lpB, p, fullRange(pool.tickSpacing), 2_000n * UNIT) },
    { owner: lpA, pool: p, spec: mintPosition(ctx, lpA, p, around(0, pool.tickSpacing, 10), 500n * UNIT) },
  ])
  const receipts = await mineBlock(dev, [
    ...LIQUIDITY_PROVIDERS.flatMap(from => pairs.map(pair => approve(from, pair.address, contracts.v2Router))),
    ...pairs.map(pair => addV2Liquidity(ctx, lpA, pair, 20_000n * UNIT)),
    ...mints.map(m => m.spec),
  ])
  const mintReceipts = receipts.slice(receipts.length - mints.length)
  mints.forEach((m, k) => ctx.positions.push({ tokenId: mintedTokenId(mintReceipts[k]), owner: m.owner, pool: m.pool }))
  return ctx
}

/**
 * One round of activity, about two blocks: every trader swaps once on a v2 pair and once on
 * a v3 pool, an ETH transfer, then one liquidity change that cycles through v2 add, v3
 * increase, v2 remove, v3 decrease + collect. Every 8th round mints a new v3 position, every
 * 10th deploys a token contract, and one round in 10 ends with an empty block. Round i does
 * the same thing whenever it runs on the same chain state, so the live demo can go on forever.
 */
export async function runActivityRound(ctx: WorkloadContext, i: number): Promise<void> {
  const { dev, pairs, pools } = ctx
  const random = roundRandom(i)
  const swaps: TxSpec[] = []
  TRADERS.forEach((trader, t) => {
    swaps.push(swapV2(ctx, trader, pairs[(i + t) % pairs.length], random() < 0.5, amountFrom(random())))
    swaps.push(swapV3(ctx, trader, pools[(i + t + 1) % pools.length], random() < 0.5, amountFrom(random())))
  })
  const payee = dev.accounts[8 + (i % 2)].address
  swaps.push({ from: PAYER, to: payee, gas: 30_000n, value: BigInt((i % 50) + 1) * (UNIT / 100n) })
  await mineBlock(dev, swaps)

  const change: TxSpec[] = await liquidityChange(ctx, i, random)
  const mint =
    i % 8 === 7
      ? { at: change.length, pool: Math.floor(i / 8) % pools.length, owner: LIQUIDITY_PROVIDERS[Math.floor(i / 8) % 2] }
      : undefined
  if (mint) {
    const pool = pools[mint.pool]
    const tick = (await read<readonly [bigint, number]>(dev, 'UniswapV3Pool', pool.address, 'slot0'))[1]
    change.push(mintPosition(ctx, mint.owner, mint.pool, around(tick, pool.tickSpacing, 1 + (i % 5)), amountFrom(random()) * 10n))
  }
  const deployAt = i % 10 === 9 ? change.length : undefined
  if (deployAt !== undefined) {
    const { abi, bytecode } = loadArtifact('ERC20')
    change.push({ from: LATE_DEPLOYER, data: encodeDeployData({ abi, bytecode, args: [BigInt(i + 1) * 1_000_000n * UNIT] }) })
  }
  const receipts = await mineBlock(dev, change)
  if (mint) ctx.positions.push({ tokenId: mintedTokenId(receipts[mint.at]), owner: mint.owner, pool: mint.pool })
  const created = deployAt === undefined ? undefined : receipts[deployAt].contractAddress
  if (created) ctx.lateTokens.push(getAddress(created))
  if (i % 10 === 4) await mineBlock(dev, [])
  ctx.rounds++
}

/** The report of everything mined since `setupWorkload` began. */
export async function workloadReport(ctx: WorkloadContext): Promise<WorkloadReport> {
  const { dev } = ctx
  return {
    chainId: dev.chainId,
    rounds: ctx.rounds,
    fromBlock: ctx.fromBlock,
    toBlock: Number(await dev.client.getBlockNumber()),
    ...structuredClone(dev.tally),
    addresses: {
      ...ctx.contracts,
      accounts: dev.accounts.map(a => a.address),
      v2Pairs: ctx.pairs,
      v3Pools: ctx.pools,
      positions: ctx.positions.map(p => ({
        tokenId: String(p.tokenId),
        owner: dev.accounts[p.owner].address,
        pool: ctx.pools[p.pool].address,
      })),
      lateTokens: ctx.lateTokens,
    },
  }
}

/**
 * Switches block timestamps from the workload's fixed 12 s steps to the wall clock, for a
 * live demo whose block times should look current.
 */
export async function followWallClock(ctx: WorkloadContext): Promise<void> {
  const { dev } = ctx
  await dev.test.removeBlockTimestampInterval()
  const latest = await dev.client.getBlock()
  const now = BigInt(Math.floor(Date.now() / 1000))
  await dev.test.setNextBlockTimestamp({ timestamp: now > latest.timestamp ? now : latest.timestamp + 1n })
}

/** A seeded generator for round i (mulberry32): the same round always makes the same choices. */
export const roundRandom = (i: number): (() => number) => mulberry32(Math.imul(i + 1, 0x9e3779b1) ^ 0x5eed)

/** A swap or liquidity size between 5 and 50 tokens, from a number in [0, 1). */
export function amountFrom(r: number): bigint {
  return (5n + BigInt(Math.floor(r * 46))) * UNIT
}

/** The two tokens in v3 order (token0 has the lower address). */
export function sortTokens(a: Address, b: Address): [Address, Address] {
  return BigInt(a) < BigInt(b) ? [a, b] : [b, a]
}

/** The widest tick range allowed for a tick spacing. */
export function fullRange(tickSpacing: number): [number, number] {
  return [Math.ceil(-MAX_TICK / tickSpacing) * tickSpacing, Math.floor(MAX_TICK / tickSpacing) * tickSpacing]
}

/** A range of `2 * width` spacings around the spacing-aligned tick at or below `tick`. */
export function around(tick: number, tickSpacing: number, width: number): [number, number] {
  const base = Math.floor(tick / tickSpacing) * tickSpacing
  return [base - width * tickSpacing, base + width * tickSpacing]
}

async function liquidityChange(ctx: WorkloadContext, i: number, random: () => number): Promise<TxSpec[]> {
  const { dev, contracts, pairs, positions } = ctx
  const step = Math.floor(i / 4)
  const op = i % 4
  if (op === 0) return [addV2Liquidity(ctx, LIQUIDITY_PROVIDERS[step % 2], pairs[step % pairs.length], amountFrom(random()) * 20n)]
  if (op === 2) {
    const pair = pairs[step % pairs.length]
    const owner = LIQUIDITY_PROVIDERS[0]
    const balance = await read<bigint>(dev, 'UniswapV2Pair', pair.address, 'balanceOf', [dev.accounts[owner].address])
    const to = dev.accounts[owner].address
    const data = pair.eth
      ? callData('UniswapV2Router02', 'removeLiquidityETH', [pair.tokenA, balance / 10n, 0n, 0n, to, DEADLINE])
      : callData('UniswapV2Router02', 'removeLiquidity', [pair.tokenA, pair.tokenB, balance / 10n, 0n, 0n, to, DEADLINE])
    return [{ from: owner, to: contracts.v2Router, gas: 350_000n, data }]
  }
  const position = positions[step % positions.length]
  if (op === 1) {
    const amount = amountFrom(random()) * 10n
    return [
      {
        from: position.owner,
        to: contracts.positionManager,
        gas: 600_000n,
        data: callData('NonfungiblePositionManager', 'increaseLiquidity', [
          {
            tokenId: position.tokenId,
            amount0Desired: amount,
            amount1Desired: amount,
            amount0Min: 0n,
            amount1Min: 0n,
            deadline: DEADLINE,
          },
        ]),
      },
    ]
  }
  const info = await read<readonly unknown[]>(dev, 'NonfungiblePositionManager', contracts.positionManager, 'positions', [position.tokenId])
  const liquidity = info[7] as bigint
  const collect: TxSpec = {
    from: position.owner,
    to: contracts.positionManager,
    gas: 300_000n,
    data: callData('NonfungiblePositionManager', 'collect', [
      {
        tokenId: position.tokenId,
        recipient: dev.accounts[position.owner].address,
        amount0Max: maxUint128,
        amount1Max: maxUint128,
      },
    ]),
  }
  if (liquidity / 4n === 0n) return [collect]
  return [
    {
      from: position.owner,
      to: contracts.positionManager,
      gas: 400_000n,
      data: callData('NonfungiblePositionManager', 'decreaseLiquidity', [
        {
          tokenId: position.tokenId,
          liquidity: liquidity / 4n,
          amount0Min: 0n,
          amount1Min: 0n,
          deadline: DEADLINE,
        },
      ]),
    },
    collect,
  ]
}

function swapV2(ctx: WorkloadContext, trader: number, pair: V2Pair, forward: boolean, amountIn: bigint): TxSpec {
  const to = ctx.dev.accounts[trader].address
  const base = { from: trader, to: ctx.contracts.v2Router, gas: 250_000n }
  if (pair.eth && forward) {
    return {
      ...base,
      value: amountIn / 10n,
      data: callData('UniswapV2Router02', 'swapExactETHForTokens', [0n, [pair.tokenB, pair.tokenA], to, DEADLINE]),
    }
  }
  if (pair.eth)
    return {
      ...base,
      data: callData('UniswapV2Router02', 'swapExactTokensForETH', [amountIn, 0n, [pair.tokenA, pair.tokenB], to, DEADLINE]),
    }
  const path = forward ? [pair.tokenA, pair.tokenB] : [pair.tokenB, pair.tokenA]
  return { ...base, data: callData('UniswapV2Router02', 'swapExactTokensForTokens', [amountIn, 0n, path, to, DEADLINE]) }
}

function swapV3(ctx: WorkloadContext, trader: number, pool: V3Pool, zeroForOne: boolean, amountIn: bigint): TxSpec {
  const [tokenIn, tokenOut] = zeroForOne ? [pool.token0, pool.token1] : [pool.token1, pool.token0]
  return {
    from: trader,
    to: ctx.contracts.swapRouter,
    gas: 500_000n,
    data: callData('SwapRouter', 'exactInputSingle', [
      {
        tokenIn,
        tokenOut,
        fee: pool.fee,
        recipient: ctx.dev.accounts[trader].address,
        deadline: DEADLINE,
        amountIn,
        amountOutMinimum: 0n,
        sqrtPriceLimitX96: 0n,
      },
    ]),
  }
}

function addV2Liquidity(ctx: WorkloadContext, owner: number, pair: V2Pair, amount: bigint): TxSpec {
  const to = ctx.dev.accounts[owner].address
  const base = { from: owner, to: ctx.contracts.v2Router, gas: 400_000n }
  if (pair.eth) {
    return {
      ...base,
      value: amount / 10n,
      data: callData('UniswapV2Router02', 'addLiquidityETH', [pair.tokenA, amount, 0n, 0n, to, DEADLINE]),
    }
  }
  return { ...base, data: callData('UniswapV2Router02', 'addLiquidity', [pair.tokenA, pair.tokenB, amount, amount, 0n, 0n, to, DEADLINE]) }
}

function mintPosition(
  ctx: WorkloadContext,
  owner: number,
  poolIndex: number,
  [tickLower, tickUpper]: [number, number],
  amount: bigint,
): TxSpec {
  const pool = ctx.pools[poolIndex]
  return {
    from: owner,
    to: ctx.contracts.positionManager,
    gas: 1_000_000n,
    data: callData('NonfungiblePositionManager', 'mint', [
      {
        token0: pool.token0,
        token1: pool.token1,
        fee: pool.fee,
        tickLower,
        tickUpper,
        amount0Desired: amount,
        amount1Desired: amount,
        amount0Min: 0n,
        amount1Min: 0n,
        recipient: ctx.dev.accounts[owner].address,
        deadline: DEADLINE,
      },
    ]),
  }
}

/** The position NFT id from a mint receipt's IncreaseLiquidity event. */
function mintedTokenId(receipt: TransactionReceipt): bigint {
  const abi = loadArtifact('NonfungiblePositionManager').abi
  for (const log of receipt.logs) {
    try {
      const event = decodeEventLog({ abi, data: log.data, topics: log.topics })
      if (event.eventName === 'IncreaseLiquidity') return (event.args as unknown as { tokenId: bigint }).tokenId
    } catch {
      // a token Transfer or pool event: not ours
    }
  }
  throw new Error(`no IncreaseLiquidity event in ${receipt.transactionHash}`)
}

async function read<T>(dev: Devnet, name: ContractName, address: Address, functionName: string, args: readonly unknown[] = []): Promise<T> {
  return (await dev.client.readContract({ address, abi: loadArtifact(name).abi, functionName, args })) as T
}

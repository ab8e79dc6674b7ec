import { afterAll, beforeAll, describe, it, expect } from 'vitest'
import { createPublicClient, http, keccak256, toBytes } from 'viem'
import type { Address, Block, Hex, Log, PublicClient } from 'viem'
import { startAnvil } from '../../../scripts/dev/devnet/anvil.ts'
import type { Anvil } from '../../../scripts/dev/devnet/anvil.ts'
import {
  around,
  fullRange,
  followWallClock,
  runActivityRound,
  runWorkload,
  setupWorkload,
  sortTokens,
  workloadReport,
  TRADERS,
} from '../../../scripts/dev/devnet/workload.ts'
import type { WorkloadContext, WorkloadReport } from '../../../scripts/dev/devnet/workload.ts'

const ROUNDS = 12
const topic = (signature: string): Hex => keccak256(toBytes(signature))

// Canonical event signatures, written out from the Uniswap and ERC-20 sources.
const EVENTS = {
  transfer: topic('Transfer(address,address,uint256)'),
  v2Swap: topic('Swap(address,uint256,uint256,uint256,uint256,address)'),
  v2Mint: topic('Mint(address,uint256,uint256)'),
  v2Burn: topic('Burn(address,uint256,uint256,address)'),
  v2Sync: topic('Sync(uint112,uint112)'),
  v3Swap: topic('Swap(address,address,int256,int256,uint160,uint128,int24)'),
  v3Mint: topic('Mint(address,address,int24,int24,uint128,uint256,uint256)'),
  v3Burn: topic('Burn(address,int24,int24,uint128,uint256,uint256)'),
  v3Collect: topic('Collect(address,address,int24,int24,uint128,uint128)'),
  increaseLiquidity: topic('IncreaseLiquidity(uint256,uint128,uint256,uint256)'),
  decreaseLiquidity: topic('DecreaseLiquidity(uint256,uint128,uint256,uint256)'),
  npmCollect: topic('Collect(uint256,address,uint256,uint256)'),
}

describe('devnet workload', () => {
  let a: Anvil | undefined
  let b: Anvil | undefined
  let clientA: PublicClient
  let clientB: PublicClient
  let report: WorkloadReport
  let ctxB: WorkloadContext
  let blocks: Block<bigint, true>[]
  let logs: Log[]

  beforeAll(async () => {
    ;[a, b] = await Promise.all([startAnvil(), startAnvil()])
    clientA = createPublicClient({ transport: http(a.url) }) as PublicClient
    clientB = createPublicClient({ transport: http(b.url) }) as PublicClient
    // A runs the whole workload in one call; B drives the same steps one by one, as the live demo does.
    const runB = async () => {
      const ctx = await setupWorkload(b!.url)
      for (let i = 0; i < ROUNDS; i++) await runActivityRound(ctx, i)
      return ctx
    }
    ;[report, ctxB] = await Promise.all([runWorkload(a.url, { rounds: ROUNDS }), runB()])
    blocks = await Promise.all(
      Array.from({ length: report.toBlock + 1 }, (_, n) => clientA.getBlock({ blockNumber: BigInt(n), includeTransactions: true })),
    )
    logs = await clientA.getLogs({ fromBlock: 0n, toBlock: BigInt(report.toBlock) })
  })

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
  })

  const logsOf = (topic0: Hex) => logs.filter(l => l.topics[0] === topic0)
  const lower = (xs: readonly Address[]) => new Set(xs.map(x => x.toLowerCase()))

  it('emits v2 Swap/Mint/Burn/Sync from the pairs it created', () => {
    const pairs = lower(report.addresses.v2Pairs.map(p => p.address))
    // Every trader swaps once on a v2 pair per round.
    expect(logsOf(EVENTS.v2Swap)).toHaveLength(ROUNDS * TRADERS.length)
    for (const t of [EVENTS.v2Swap, EVENTS.v2Mint, EVENTS.v2Burn, EVENTS.v2Sync]) {
      expect(logsOf(t).length).toBeGreaterThan(0)
      for (const l of logsOf(t)) expect(pairs.has(l.address)).toBe(true)
    }
  })

  it('emits v3 Swap/Mint/Burn/Collect from the pools it created', () => {
    const pools = lower(report.addresses.v3Pools.map(p => p.address))
    expect(logsOf(EVENTS.v3Swap)).toHaveLength(ROUNDS * TRADERS.length)
    for (const t of [EVENTS.v3Swap, EVENTS.v3Mint, EVENTS.v3Burn, EVENTS.v3Collect]) {
      expect(logsOf(t).length).toBeGreaterThan(0)
      for (const l of logsOf(t)) expect(pools.has(l.address)).toBe(true)
    }
  })

  it('manages positions through the NonfungiblePositionManager', () => {
    const npm = report.addresses.positionManager.toLowerCase()
    for (const t of [EVENTS.increaseLiquidity, EVENTS.decreaseLiquidity, EVENTS.npmCollect]) {
      expect(logsOf(t).length).toBeGreaterThan(0)
      for (const l of logsOf(t)) expect(l.address).toBe(npm)
    }
    // Each minted position NFT is one ERC-721 Transfer (four topics) from the zero address.
    const nftMints = logsOf(EVENTS.transfer).filter(l => l.address === npm && l.topics.length === 4 && BigInt(l.topics[1]!) === 0n)
    expect(nftMints).toHaveLength(report.addresses.positions.length)
    expect(report.events['ERC721.Transfer']).toBe(nftMints.length)
  })

  it('moves the test tokens (ERC-20 Transfer)', () => {
    const tokens = lower(report.addresses.tokens.map(t => t.address))
    const tokenTransfers = logsOf(EVENTS.transfer).filter(l => tokens.has(l.address) && l.topics.length === 3)
    expect(tokenTransfers.length).toBeGreaterThan(ROUNDS * TRADERS.length)
  })

  it('reports exactly what the chain holds', () => {
    const txs = blocks.slice(report.fromBlock).flatMap(b => b.transactions)
    expect(report.blocks).toBe(report.toBlock - report.fromBlock + 1)
    expect(report.transactions).toBe(txs.length)
    expect(report.logs).toBe(logs.length)
    expect(report.events['UniswapV2Pair.Swap']).toBe(logsOf(EVENTS.v2Swap).length)
    expect(report.events['UniswapV3Pool.Swap']).toBe(logsOf(EVENTS.v3Swap).length)
    expect(report.events.other).toBeUndefined()
    expect(report.txTypes).toEqual({
      0: txs.filter(t => t.type === 'legacy').length,
      1: txs.filter(t => t.type === 'eip2930').length,
      2: txs.filter(t => t.type === 'eip1559').length,
    })
  })

  it('sends legacy, EIP-2930 (with access lists) and EIP-1559 transactions', () => {
    const txs = blocks.flatMap(b => b.transactions)
    const legacy = txs.filter(t => t.type === 'legacy')
    const accessList = txs.filter(t => t.type === 'eip2930')
    const dynamic = txs.filter(t => t.type === 'eip1559')
    expect(legacy.length).toBeGreaterThan(0)
    expect(dynamic.length).toBeGreaterThan(0)
    expect(accessList.length).toBeGreaterThan(0)
    expect(accessList.filter(t => t.to).every(t => t.accessList.length > 0)).toBe(true)
    // Legacy transactions are EIP-155 signed: v = chainId * 2 + 35 or 36.
    for (const t of legacy) expect([31337n * 2n + 35n, 31337n * 2n + 36n]).toContain(t.v)
  })

  it('deploys contracts (to = null) and sends plain ETH transfers', async () => {
    const txs = blocks.flatMap(b => b.transactions)
    const creations = txs.filter(t => t.to === null)
    expect(creations.length).toBe(report.contractCreations)
    const late = creations.filter(t => t.blockNumber! > 20n)
    expect(late.length).toBeGreaterThan(0)
    const receipt = await clientA.getTransactionReceipt({ hash: late[0].hash })
    expect(await clientA.getCode({ address: receipt.contractAddress! })).toMatch(/^0x[0-9a-f]{100,}$/)
    const transfers = txs.filter(t => t.to && t.input === '0x' && t.value > 0n)
    expect(transfers.length).toBeGreaterThanOrEqual(ROUNDS)
    expect(await clientA.getCode({ address: transfers[0].to! })).toBeUndefined()
  })

  it('packs several transactions into blocks and leaves some blocks empty', () => {
    const counts = blocks.slice(report.fromBlock).map(b => b.transactions.length)
    expect(Math.max(...counts)).toBeGreaterThan(5)
    expect(counts).toContain(0)
  })

  it('replays identically on a fresh anvil, block hashes included', async () => {
    const reportB = await workloadReport(ctxB)
    expect(reportB).toEqual(report)
    const hashesB = await Promise.all(blocks.map((_, n) => clientB.getBlock({ blockNumber: BigInt(n) }).then(x => x.hash)))
    expect(hashesB).toEqual(blocks.map(blk => blk.hash))
    // Timestamps step 12 s from a fixed genesis, so they cannot depend on when the test ran.
    const steps = new Set(blocks.slice(1).map((blk, k) => blk.timestamp - blocks[k].timestamp))
    expect([...steps]).toEqual([12n])
  })

  it('keeps producing blocks on wall-clock time for the live demo', async () => {
    const before = BigInt(Math.floor(Date.now() / 1000))
    await followWallClock(ctxB)
    await runActivityRound(ctxB, ROUNDS)
    const head = await clientB.getBlock()
    expect(head.number).toBeGreaterThan(BigInt(report.toBlock))
    expect(head.timestamp).toBeGreaterThanOrEqual(before)
  })
})

describe('tick and token helpers', () => {
  it('keeps tick ranges on the tick spacing and inside the v3 bounds', () => {
    for (const spacing of [1, 10, 60, 200]) {
      const [lo, hi] = fullRange(spacing)
      expect(Number.isInteger(lo / spacing) && Number.isInteger(hi / spacing)).toBe(true)
      expect(lo).toBeGreaterThanOrEqual(-887272)
      expect(hi).toBeLessThanOrEqual(887272)
      expect(lo - spacing).toBeLessThan(-887272)
    }
    for (const tick of [-75, -60, -1, 0, 59, 60, 1234]) {
      const [lo, hi] = around(tick, 60, 2)
      expect(Number.isInteger(lo / 60) && Number.isInteger(hi / 60)).toBe(true)
      expect(lo).toBeLessThanOrEqual(tick)
      expect(hi).toBeGreaterThan(tick)
      expect(hi - lo).toBe(4 * 60)
    }
  })

  it('orders v3 tokens by address value', () => {
    const x = '0xA000000000000000000000000000000000000000' as Address
    const y = '0x0b00000000000000000000000000000000000000' as Address
    expect(sortTokens(x, y)).toEqual([y, x])
    expect(sortTokens(y, x)).toEqual([y, x])
  })
})

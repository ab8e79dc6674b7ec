/**
 * The decoder on a devnet running the real Uniswap bytecode from npm (scripts/dev/devnet): the
 * workload's pools, swaps and positions, plus what it never does (a plain NFT transfer, a
 * decrease by the new owner, a full exit that burns the NFT), decoded in batches that carry
 * the pool cache and the position state the way the ingester will. Positions are checked
 * against the NonfungiblePositionManager's own view, fees against a collect simulated the
 * block before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPublicClient, http, maxUint128 } from 'viem'
import type { Address, Hex, PublicClient } from 'viem'
import { decodeDex, poolsToResolve, scanBlocks, tokensOf } from '../../src/dex/decode.ts'
import type { DexBlock, DexOutput } from '../../src/dex/decode.ts'
import { FACTORIES, POSITION_MANAGERS } from '../../src/dex/factories.ts'
import { POOL_CALLS, poolInfoFromCalls } from '../../src/dex/pools.ts'
import type { PoolInfo, PoolResolver } from '../../src/dex/pools.ts'
import { applyPositionChanges, positionKey } from '../../src/dex/positions.ts'
import type { PositionEntry } from '../../src/dex/positions.ts'
import { startAnvil } from '../../scripts/dev/devnet/anvil.ts'
import type { Anvil } from '../../scripts/dev/devnet/anvil.ts'
import { mineBlock } from '../../scripts/dev/devnet/blocks.ts'
import { callData, loadArtifact } from '../../scripts/dev/devnet/contracts.ts'
import { runActivityRound, setupWorkload, sortTokens, workloadReport } from '../../scripts/dev/devnet/workload.ts'
import type { WorkloadContext, WorkloadReport } from '../../scripts/dev/devnet/workload.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import { positionLiquidity } from '../support/positions-devnet.ts'

const ROUNDS = 16
const BATCH = 7
const DEADLINE = 4_102_444_800n
const NEW_OWNER = 8
type Row = Record<string, unknown>
const view = (row: object): Row => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? bytesToHex(v) : v]))
const lower = (a: string): string => a.toLowerCase()

/** The PoolResolver the ingester would write: POOL_CALLS by eth_call, decoded by poolInfoFromCalls. */
function callResolver(client: PublicClient): PoolResolver & { asked: Hex[] } {
  const asked: Hex[] = []
  return {
    asked,
    async resolve(_chainId, pools) {
      asked.push(...pools)
      const call = async (to: Hex, data: Hex) => (await client.call({ to, data }).catch(() => ({ data: undefined }))).data ?? null
      const answers = await Promise.all(
        pools.map(async pool => {
          const [token0, token1, fee] = await Promise.all([
            call(pool, POOL_CALLS.token0),
            call(pool, POOL_CALLS.token1),
            call(pool, POOL_CALLS.fee),
          ])
          return [pool, poolInfoFromCalls({ token0, token1, fee })] as const
        }),
      )
      return new Map(answers)
    },
  }
}

/** Decodes blocks in batches the way the ingester will: resolve what the cache lacks, carry the state. */
async function decodeInBatches(
  chainId: number,
  blocks: DexBlock[],
  resolver: PoolResolver,
): Promise<DexOutput & { state: Map<string, PositionEntry> }> {
  const cache = new Map<Hex, PoolInfo | null>()
  const state = new Map<string, PositionEntry>()
  const all: DexOutput = { pools: [], swaps: [], liquidity: [], positions: [], positionChanges: new Map() }
  for (let i = 0; i < blocks.length; i += BATCH) {
    const scan = scanBlocks(chainId, blocks.slice(i, i + BATCH))
    for (const [pool, info] of scan.created) cache.set(pool, info)
    const missing = poolsToResolve(scan).filter(p => !cache.has(p))
    for (const [pool, info] of await resolver.resolve(chainId, missing)) cache.set(pool, info)
    const out = decodeDex(scan, cache, state)
    applyPositionChanges(state, out.positionChanges)
    all.pools.push(...out.pools)
    all.swaps.push(...out.swaps)
    all.liquidity.push(...out.liquidity)
    all.positions.push(...out.positions)
  }
  return { ...all, state }
}

describe('devnet', () => {
  let anvil: Anvil | undefined
  let client: PublicClient
  let ctx: WorkloadContext
  let report: WorkloadReport
  let blocks: DexBlock[]
  let transferred: bigint
  let exited: bigint

  beforeAll(async () => {
    anvil = await startAnvil()
    client = createPublicClient({ transport: http(anvil.url) }) as PublicClient
    ctx = await setupWorkload(anvil.url)
    for (let i = 0; i < ROUNDS; i++) await runActivityRound(ctx, i)
    const npm = ctx.contracts.positionManager
    const [a, b] = ctx.positions
    transferred = a.tokenId
    exited = b.tokenId
    const from = ctx.dev.accounts[a.owner].address
    const to = ctx.dev.accounts[NEW_OWNER].address
    const liquidityOf = (id: bigint) => positionLiquidity(client, npm, id)
    const collect = (id: bigint, recipient: Address) =>
      callData('NonfungiblePositionManager', 'collect', [{ tokenId: id, recipient, amount0Max: maxUint128, amount1Max: maxUint128 }])
    const decrease = (id: bigint, liquidity: bigint) =>
      callData('NonfungiblePositionManager', 'decreaseLiquidity', [
        { tokenId: id, liquidity, amount0Min: 0n, amount1Min: 0n, deadline: DEADLINE },
      ])
    // A plain transfer, and a full exit: decrease all, collect, burn, in one multicall.
    const bOwner = ctx.dev.accounts[b.owner].address
    const exitCalls = [
      decrease(exited, await liquidityOf(exited)),
      collect(exited, bOwner),
      callData('NonfungiblePositionManager', 'burn', [exited]),
    ]
    await mineBlock(ctx.dev, [
      { from: a.owner, to: npm, gas: 200_000n, data: callData('NonfungiblePositionManager', 'transferFrom', [from, to, transferred]) },
      { from: b.owner, to: npm, gas: 600_000n, data: callData('NonfungiblePositionManager', 'multicall', [exitCalls]) },
    ])
    // The new owner takes a quarter out and collects, in a later batch than the transfer.
    for (let i = 0; i < BATCH; i++) await mineBlock(ctx.dev, [])
    await mineBlock(ctx.dev, [
      { from: NEW_OWNER, to: npm, gas: 400_000n, data: decrease(transferred, (await liquidityOf(transferred)) / 4n) },
      { from: NEW_OWNER, to: npm, gas: 300_000n, data: collect(transferred, to) },
    ])
    report = await workloadReport(ctx)
    blocks = await Promise.all(
      Array.from({ length: report.toBlock + 1 }, async (_, n) => {
        const number = `0x${n.toString(16)}` as Hex
        const block = (await client.request({ method: 'eth_getBlockByNumber', params: [number, true] })) as unknown as DexBlock
        const receipts = (await client.request({ method: 'eth_getBlockReceipts' as never, params: [number] as never })) as unknown as {
          logs: DexBlock['logs']
        }[]
        return { ...block, logs: receipts.flatMap(r => r.logs) }
      }),
    )
  }, 120_000)

  afterAll(async () => {
    await anvil?.stop()
  })

  it('registers the factories and position manager deploy.ts creates', () => {
    expect(FACTORIES[31337].map(f => f.factory)).toEqual([lower(report.addresses.v2Factory), lower(report.addresses.v3Factory)])
    expect(POSITION_MANAGERS[31337].map(m => m.address)).toEqual([lower(report.addresses.positionManager)])
  })

  it("decodes every pool creation, swap and liquidity event, all verified, with the workload's tokens", async () => {
    const out = await decodeInBatches(31337, blocks, callResolver(client))
    // Uniswap v2 pairs charge 0.30 %: 3000 hundredths of a bip.
    const pairs = report.addresses.v2Pairs.map(p => [lower(p.address), ...sortTokens(p.tokenA, p.tokenB).map(lower), 3000n])
    const pools = report.addresses.v3Pools.map(p => [lower(p.address), lower(p.token0), lower(p.token1), BigInt(p.fee)])
    expect(out.pools.map(view).map(r => [r.pool, r.token0, r.token1, r.fee])).toEqual([...pairs, ...pools])
    expect(out.pools.map(p => [p.pool_verified, bytesToHex(p.factory)])).toEqual([
      ...pairs.map(() => [true, lower(report.addresses.v2Factory)]),
      ...pools.map(() => [true, lower(report.addresses.v3Factory)]),
    ])
    const tokens = [...report.addresses.tokens.map(t => t.address), report.addresses.weth].map(lower).sort()
    expect(tokensOf(out)).toEqual(tokens)
    const keys = new Map([...pairs, ...pools].map(([pool, t0, t1]) => [pool, [t0, t1]]))
    const count = (key: string) => report.events[key] ?? 0
    expect(out.swaps).toHaveLength(count('UniswapV2Pair.Swap') + count('UniswapV3Pool.Swap'))
    expect(out.liquidity).toHaveLength(
      count('UniswapV2Pair.Mint') +
        count('UniswapV2Pair.Burn') +
        count('UniswapV3Pool.Mint') +
        count('UniswapV3Pool.Burn') +
        count('UniswapV3Pool.Collect'),
    )
    for (const r of [...out.swaps, ...out.liquidity].map(view)) {
      expect(r.pool_verified).toBe(true)
      expect(r.protocol).toBe(r.family === 'v2' ? 'uniswap_v2' : 'uniswap_v3')
      expect([r.token0, r.token1]).toEqual(keys.get(r.pool as string))
    }
  })

  it('asks a resolver only for pools created before the batch, and its eth_call answers verify them', async () => {
    const resolver = callResolver(client)
    const late = blocks.slice(report.fromBlock + 10)
    const out = await decodeInBatches(31337, late, resolver)
    expect(resolver.asked.length).toBeGreaterThan(0)
    expect(out.swaps.length).toBeGreaterThan(0)
    expect(out.swaps.every(s => s.pool_verified)).toBe(true)
  })

  it('tracks every position as the manager sees it: pool, ticks, owner; burned ones gone', async () => {
    const out = await decodeInBatches(31337, blocks, callResolver(client))
    const npm = report.addresses.positionManager
    const abi = loadArtifact('NonfungiblePositionManager').abi
    const poolOf = new Map(report.addresses.v3Pools.map(p => [`${lower(p.token0)}/${lower(p.token1)}/${p.fee}`, lower(p.address)]))
    for (const p of report.addresses.positions) {
      const id = BigInt(p.tokenId)
      const entry = out.state.get(positionKey(npm, id))
      if (id === exited) {
        expect(entry).toBeUndefined()
        await expect(client.readContract({ address: npm, abi, functionName: 'ownerOf', args: [id] })).rejects.toThrow()
        continue
      }
      const info = (await client.readContract({ address: npm, abi, functionName: 'positions', args: [id] })) as readonly unknown[]
      const owner = (await client.readContract({ address: npm, abi, functionName: 'ownerOf', args: [id] })) as string
      expect(entry).toMatchObject({
        pool: poolOf.get(`${lower(info[2] as string)}/${lower(info[3] as string)}/${info[4]}`),
        tick_lower: BigInt(info[5] as number),
        tick_upper: BigInt(info[6] as number),
        token0: lower(info[2] as string),
        token1: lower(info[3] as string),
        owner: lower(owner),
        // Every collect here takes all: nothing withdrawn stays owed, as the manager says.
        owed0: info[10],
        owed1: info[11],
      })
    }
    for (const r of out.positions.map(view)) expect(r.event === 'transfer' || r.pool_log_index !== null).toBe(true)
    const transfer = view(
      out.positions.find(
        r =>
          r.event === 'transfer' &&
          r.token_id === transferred &&
          bytesToHex(r.previous_owner!) !== '0x0000000000000000000000000000000000000000',
      )!,
    )
    expect(transfer.pool).toBe(out.state.get(positionKey(npm, transferred))!.pool)
    expect(transfer.owner).toBe(lower(ctx.dev.accounts[NEW_OWNER].address))
    const burn = view(
      out.positions.find(
        r =>
          r.event === 'transfer' &&
          r.token_id === exited &&
          r.owner !== null &&
          bytesToHex(r.owner) === '0x0000000000000000000000000000000000000000',
      )!,
    )
    expect(burn.pool).not.toBeNull()
  })

  it('splits every collect into principal and the fees a collect simulated the block before would have paid', async () => {
    const out = await decodeInBatches(31337, blocks, callResolver(client))
    const npm = report.addresses.positionManager
    const abi = loadArtifact('NonfungiblePositionManager').abi
    const collects = out.positions.filter(r => r.event === 'collect')
    expect(collects.length).toBeGreaterThanOrEqual(5)
    let earned = 0
    for (const c of collects) {
      const owner = (
        c.token_id === exited
          ? ctx.dev.accounts[ctx.positions[1].owner].address
          : await client.readContract({ address: npm, abi, functionName: 'ownerOf', args: [c.token_id], blockNumber: c.block_number - 1n })
      ) as Address
      const { result } = await client.simulateContract({
        address: npm,
        abi,
        functionName: 'collect',
        account: owner,
        blockNumber: c.block_number - 1n,
        args: [{ tokenId: c.token_id, recipient: owner, amount0Max: maxUint128, amount1Max: maxUint128 }],
      })
      expect([c.fees0, c.fees1]).toEqual(result)
      if ((c.fees0 ?? 0n) > 0n || (c.fees1 ?? 0n) > 0n) earned++
    }
    expect(earned).toBeGreaterThan(0)
  })
})

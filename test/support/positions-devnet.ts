/**
 * A devnet whose v3 positions live across a split block, for the position-state tests of
 * ingest and live: the workload's rounds (mints, increases, decreases + collects through the
 * real NonfungiblePositionManager), then before the split a transfer and a decrease whose
 * principal stays owed, and after it the collect of that principal, a decrease + collect by
 * the new owner and a plain transfer.
 */
import { maxUint128, type Address, type PublicClient } from 'viem'
import { startAnvil, type Anvil } from '../../scripts/dev/devnet/anvil.ts'
import { mineBlock } from '../../scripts/dev/devnet/blocks.ts'
import { callData, loadArtifact } from '../../scripts/dev/devnet/contracts.ts'
import { runActivityRound, setupWorkload, type WorkloadContext } from '../../scripts/dev/devnet/workload.ts'
import { bytesToInt } from '../../src/schema/kinds.ts'

const ROUNDS = 16
const DEADLINE = 4_102_444_800n
export const [NEW_OWNER, THIRD_OWNER] = [8, 9]

export interface PositionsDevnet {
  anvil: Anvil
  ctx: WorkloadContext
  /** The last block before the split. */
  mid: number
  head: number
  /** Transferred before the split, decreased, collected and transferred again after it. */
  transferred: bigint
  /** Decreased before the split, collected after it. */
  decreased: bigint
}

/** A v3 position's liquidity as its manager reports it (`positions(id)`, the eighth value). */
export async function positionLiquidity(client: Pick<PublicClient, 'readContract'>, manager: Address, id: bigint): Promise<bigint> {
  const position = (await client.readContract({
    address: manager,
    abi: loadArtifact('NonfungiblePositionManager').abi,
    functionName: 'positions',
    args: [id],
  })) as readonly unknown[]
  return position[7] as bigint
}

export async function startPositionsDevnet(): Promise<PositionsDevnet> {
  const anvil = await startAnvil()
  const ctx = await setupWorkload(anvil.url)
  for (let i = 0; i < ROUNDS; i++) await runActivityRound(ctx, i)
  const { dev } = ctx
  const npm = ctx.contracts.positionManager
  const [a, b] = ctx.positions
  const account = (i: number): Address => dev.accounts[i].address
  const liquidity = (id: bigint) => positionLiquidity(dev.client, npm, id)
  const decrease = async (id: bigint) =>
    callData('NonfungiblePositionManager', 'decreaseLiquidity', [
      { tokenId: id, liquidity: (await liquidity(id)) / 4n, amount0Min: 0n, amount1Min: 0n, deadline: DEADLINE },
    ])
  const collect = (id: bigint, recipient: Address) =>
    callData('NonfungiblePositionManager', 'collect', [{ tokenId: id, recipient, amount0Max: maxUint128, amount1Max: maxUint128 }])
  const transfer = (from: number, to: number, id: bigint) =>
    callData('NonfungiblePositionManager', 'transferFrom', [account(from), account(to), id])
  await mineBlock(dev, [
    { from: a.owner, to: npm, gas: 200_000n, data: transfer(a.owner, NEW_OWNER, a.tokenId) },
    { from: b.owner, to: npm, gas: 400_000n, data: await decrease(b.tokenId) },
  ])
  const mid = Number(await dev.client.getBlockNumber())
  await mineBlock(dev, [{ from: b.owner, to: npm, gas: 300_000n, data: collect(b.tokenId, account(b.owner)) }])
  await mineBlock(dev, [{ from: NEW_OWNER, to: npm, gas: 400_000n, data: await decrease(a.tokenId) }])
  await mineBlock(dev, [
    { from: NEW_OWNER, to: npm, gas: 300_000n, data: collect(a.tokenId, account(NEW_OWNER)) },
    { from: NEW_OWNER, to: npm, gas: 200_000n, data: transfer(NEW_OWNER, THIRD_OWNER, a.tokenId) },
  ])
  const head = Number(await dev.client.getBlockNumber())
  return { anvil, ctx, mid, head, transferred: a.tokenId, decreased: b.tokenId }
}

type Row = Record<string, unknown>

/** A stored dex/positions row as comparable values: `int` bytes → bigint, other bytes → hex. */
export const positionView = (r: Row): Row =>
  Object.fromEntries(
    Object.entries(r).map(([k, v]) => [
      k,
      v instanceof Uint8Array ? (v.length === 33 ? bytesToInt(v) : '0x' + Buffer.from(v).toString('hex')) : v,
    ]),
  )

/** Rows in (block, log index) order. */
export const inLogOrder = (rows: Row[]): Row[] =>
  rows.sort(
    (a, b) => Number((a.block_number as bigint) - (b.block_number as bigint)) || Number((a.log_index as bigint) - (b.log_index as bigint)),
  )

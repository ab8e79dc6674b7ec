/**
 * DEX position state on the live path: a follower over a devnet whose positions live across
 * the lake's end (test/support/positions-devnet.ts) decodes dex/positions rows with the owner
 * and fees ingest gives, from the lake below the window and the window's own rows, one block
 * or several per fetch; after a reorg, the new canonical blocks are decoded from the window as
 * the rollback left it, not from the dropped blocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dexPositions } from '../../src/datasets/dex.ts'
import { lakePositions } from '../../src/ingest/positions.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { chainRefOf, runIngest } from '../../src/ingest/run.ts'
import { HeadFollower } from '../../src/live/follower.ts'
import { evmLiveSource } from '../../src/live/source.ts'
import { UnfinalizedWindow } from '../../src/live/window.ts'
import type { ColumnBatch } from '../../src/columns/batch.ts'
import { mineBlock, resyncNonces } from '../../scripts/dev/devnet/blocks.ts'
import { callData } from '../../scripts/dev/devnet/contracts.ts'
import { DEVNET } from '../support/chains.ts'
import {
  inLogOrder,
  NEW_OWNER,
  positionView,
  startPositionsDevnet,
  THIRD_OWNER,
  type PositionsDevnet,
} from '../support/positions-devnet.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { readRows } from '../ingest/fixtures.ts'

type Row = Record<string, unknown>
let devnet: PositionsDevnet
/** dex/positions of one ingest over the whole devnet. */
let oneRun: Row[]

beforeAll(async () => {
  devnet = await startPositionsDevnet()
  const { store } = await tempStore()
  await runIngest({ chain: DEVNET, rpcUrl: devnet.anvil.url, from: 0, to: devnet.head, store, partitionBlocks: 4 })
  oneRun = inLogOrder((await readRows(store, chainRefOf(DEVNET), dexPositions.storage)).map(positionView))
}, 180_000)

afterAll(async () => {
  await devnet?.anvil.stop()
  await removeTempDirs()
})

const rowsOf = (b: ColumnBatch): Row[] =>
  Array.from({ length: b.length }, (_, i) => Object.fromEntries(Object.entries(b.columns).map(([k, v]) => [k, v[i]])))

/** A follower over the devnet anchored at `anchor`, the lake holding blocks up to it. */
async function follower(anchor: number, maxBlocksPerTick: number): Promise<HeadFollower> {
  const { store } = await tempStore()
  if (anchor >= 0) await runIngest({ chain: DEVNET, rpcUrl: devnet.anvil.url, from: 0, to: anchor, store, partitionBlocks: 4 })
  const rpc = createRpcClient(devnet.anvil.url)
  const source = evmLiveSource(rpc, { chain: { family: 'evm', id: DEVNET.id }, store, positions: lakePositions(store, DEVNET) })
  const [header] = await source.headers([anchor])
  return new HeadFollower(source, new UnfinalizedWindow({ number: anchor, hash: header!.hash }), { maxBlocksPerTick })
}

/** Ticks until the window reaches `head`; the positions rows delivered, and the reorgs seen. */
async function followTo(f: HeadFollower, head: number): Promise<{ rows: Row[]; reorgs: number }> {
  const rows: Row[] = []
  let reorgs = 0
  while (f.window.tip.number < head)
    await f.tick(e => {
      if (e.type === 'block') rows.push(...rowsOf(e.batches[dexPositions.storage]))
      else reorgs++
    })
  return { rows: inLogOrder(rows.map(positionView)), reorgs }
}

const follow = async (anchor: number, maxBlocksPerTick: number): Promise<Row[]> =>
  (await followTo(await follower(anchor, maxBlocksPerTick), devnet.head)).rows

describe('dex/positions live', () => {
  it('gives the rows of one ingest, owner and fees included, from the lake and the window below each fetch', async () => {
    const expected = oneRun.filter(r => (r.block_number as bigint) > BigInt(devnet.mid))
    expect(expected.some(r => r.event === 'collect' && r.fees0 !== null)).toBe(true)
    for (const perTick of [1, 3]) expect(await follow(devnet.mid, perTick)).toEqual(expected)
    // The lake ending well before the split: positions' earlier events are in the window.
    const early = Number(oneRun.find(r => r.token_id === devnet.decreased)!.block_number) + 1
    expect(await follow(early, 2)).toEqual(oneRun.filter(r => (r.block_number as bigint) > BigInt(early)))
  }, 120_000)

  it('after a reorg, decodes the new canonical blocks from the window the rollback left', async () => {
    const { dev, contracts } = devnet.ctx
    const OTHER = 7
    const account = (i: number) => dev.accounts[i].address
    const id = devnet.transferred
    const f = await follower(devnet.mid, 2)
    await followTo(f, devnet.head)
    const snapshot = await dev.test.snapshot()
    // The dropped branch: the position goes back to NEW_OWNER.
    const transfer = (to: number) => callData('NonfungiblePositionManager', 'transferFrom', [account(THIRD_OWNER), account(to), id])
    await mineBlock(dev, [{ from: THIRD_OWNER, to: contracts.positionManager, gas: 200_000n, data: transfer(NEW_OWNER) }])
    expect((await followTo(f, devnet.head + 1)).rows.map(r => r.owner)).toEqual([account(NEW_OWNER).toLowerCase()])
    // The canonical branch: it goes to OTHER, who then collects.
    await dev.test.revert({ id: snapshot })
    await resyncNonces(dev)
    await mineBlock(dev, [{ from: THIRD_OWNER, to: contracts.positionManager, gas: 200_000n, data: transfer(OTHER) }])
    const collect = callData('NonfungiblePositionManager', 'collect', [
      { tokenId: id, recipient: account(OTHER), amount0Max: 2n ** 128n - 1n, amount1Max: 2n ** 128n - 1n },
    ])
    await mineBlock(dev, [{ from: OTHER, to: contracts.positionManager, gas: 300_000n, data: collect }])
    const { rows, reorgs } = await followTo(f, devnet.head + 2)
    expect(reorgs).toBe(1)
    expect(rows.map(r => [r.event, r.owner])).toEqual([
      ['transfer', account(OTHER).toLowerCase()],
      ['collect', account(OTHER).toLowerCase()],
    ])
    expect(rows[1].fees0).not.toBeNull()
  }, 120_000)
})

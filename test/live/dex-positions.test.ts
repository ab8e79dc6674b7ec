/**
 * DEX position state on the live path: a follower over a devnet whose positions live across
 * the lake's end (test/support/positions-devnet.ts) decodes dex/positions rows with the owner
 * and fees ingest gives, from the lake below the window and the window's own rows, one block
 * or several per fetch.
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
import { DEVNET } from '../support/chains.ts'
import { inLogOrder, positionView, startPositionsDevnet, type PositionsDevnet } from '../support/positions-devnet.ts'
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

/** Follows the devnet from above `anchor` (the lake holds blocks up to it) to its head; the positions rows delivered. */
async function follow(anchor: number, maxBlocksPerTick: number): Promise<Row[]> {
  const { store } = await tempStore()
  if (anchor >= 0) await runIngest({ chain: DEVNET, rpcUrl: devnet.anvil.url, from: 0, to: anchor, store, partitionBlocks: 4 })
  const rpc = createRpcClient(devnet.anvil.url)
  const source = evmLiveSource(rpc, { chain: { family: 'evm', id: DEVNET.id }, store, positions: lakePositions(store, DEVNET) })
  const [header] = await source.headers([anchor])
  const follower = new HeadFollower(source, new UnfinalizedWindow({ number: anchor, hash: header!.hash }), { maxBlocksPerTick })
  const rows: Row[] = []
  while (follower.window.tip.number < devnet.head)
    await follower.tick(e => {
      if (e.type === 'block') rows.push(...rowsOf(e.batches[dexPositions.storage]))
    })
  return inLogOrder(rows.map(positionView))
}

describe('dex/positions live', () => {
  it('gives the rows of one ingest, owner and fees included, from the lake and the window below each fetch', async () => {
    const expected = oneRun.filter(r => (r.block_number as bigint) > BigInt(devnet.mid))
    expect(expected.some(r => r.event === 'collect' && r.fees0 !== null)).toBe(true)
    for (const perTick of [1, 3]) expect(await follow(devnet.mid, perTick)).toEqual(expected)
    // The lake ending well before the split: positions' earlier events are in the window.
    const early = Number(oneRun.find(r => r.token_id === devnet.decreased)!.block_number) + 1
    expect(await follow(early, 2)).toEqual(oneRun.filter(r => (r.block_number as bigint) > BigInt(early)))
  }, 120_000)
})

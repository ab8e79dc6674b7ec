/**
 * DEX position state across ingest runs and ingesters, on anvil running the real
 * NonfungiblePositionManager (the devnet workload): a range ingested in two runs split in
 * the middle of positions' lives (a decrease before the split and its collect after it, a
 * transfer before and a plain transfer after) gives the dex/positions rows of one run; a
 * later range published before the earlier one has owner and fees unknown (never guessed),
 * and a re-decode of it once the earlier range is in gives the one-run rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dexPositions } from '../../src/datasets/dex.ts'
import { unitPool } from '../../src/ingest/pool.ts'
import { lakePositions, PositionTracker } from '../../src/ingest/positions.ts'
import { redecode } from '../../src/ingest/redecode.ts'
import { chainRefOf, runIngest } from '../../src/ingest/run.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import type { Anvil } from '../../scripts/dev/devnet/anvil.ts'
import type { WorkloadContext } from '../../scripts/dev/devnet/workload.ts'
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
import { readRows } from './fixtures.ts'

const SPAN = 4
const ref = chainRefOf(DEVNET)

let devnet: PositionsDevnet
let anvil: Anvil
let ctx: WorkloadContext
let mid: number
let head: number
let transferred: bigint
let decreased: bigint

type Row = Record<string, unknown>
const positionsOf = async (store: ObjectStore): Promise<Row[]> =>
  inLogOrder((await readRows(store, ref, dexPositions.storage)).map(positionView))
const ingest = (store: ObjectStore, from: number, to: number) =>
  runIngest({ chain: DEVNET, rpcUrl: anvil.url, from, to, store, partitionBlocks: SPAN })
/** As `npm run ingest` does by default: units built in worker threads, the position state kept in this thread. */
async function ingestThreaded(store: ObjectStore, from: number, to: number) {
  const pool = unitPool({ chain: ref, rpcUrl: anvil.url, workers: 2, positions: new PositionTracker(lakePositions(store, DEVNET)) })
  try {
    await runIngest({ chain: DEVNET, rpcUrl: anvil.url, from, to, store, partitionBlocks: SPAN, builder: pool, concurrency: pool.capacity })
  } finally {
    await pool.close()
  }
}

beforeAll(async () => {
  devnet = await startPositionsDevnet()
  ;({ anvil, ctx, mid, head, transferred, decreased } = devnet)
}, 180_000)

afterAll(async () => {
  await devnet?.anvil.stop()
  await removeTempDirs()
})

describe('dex/positions across runs', () => {
  let oneRun: Row[]

  beforeAll(async () => {
    const { store } = await tempStore()
    await ingest(store, 0, head)
    oneRun = await positionsOf(store)
  }, 120_000)

  it('a second run starts from the state the first one published: rows equal to one run', async () => {
    const { store } = await tempStore()
    await ingest(store, 0, mid)
    await ingest(store, mid + 1, head)
    const rows = await positionsOf(store)
    expect(rows).toEqual(oneRun)
    // What the state carried: the collect of principal withdrawn before the split, owners and pools of later events.
    const later = rows.filter(r => (r.block_number as bigint) > BigInt(mid))
    const collectB = later.find(r => r.token_id === decreased && r.event === 'collect')!
    expect(collectB.fees0).not.toBeNull()
    expect((collectB.amount0 as bigint) > (collectB.fees0 as bigint)).toBe(true)
    const ofA = later.filter(r => r.token_id === transferred)
    expect(ofA.map(r => r.event)).toEqual(['decrease_liquidity', 'collect', 'transfer'])
    expect(ofA.map(r => r.owner)).toEqual([
      ...Array(2).fill(ctx.dev.accounts[NEW_OWNER].address.toLowerCase()),
      ctx.dev.accounts[THIRD_OWNER].address.toLowerCase(),
    ])
    for (const r of later) expect([r.pool, r.tick_lower, r.owner]).not.toContain(null)
  }, 120_000)

  it('worker threads: units built in different threads at once decode in block order, in one run or two', async () => {
    for (const split of [false, true]) {
      const { store } = await tempStore()
      if (split) {
        await ingestThreaded(store, 0, mid)
        await ingestThreaded(store, mid + 1, head)
      } else await ingestThreaded(store, 0, head)
      expect(await positionsOf(store)).toEqual(oneRun)
    }
  }, 120_000)

  it('a later range published first leaves owner and fees unknown, and a re-decode once the earlier range is in gives one run', async () => {
    const { store } = await tempStore()
    await ingest(store, mid + 1, head)
    const early = await positionsOf(store)
    const expected = oneRun.filter(r => (r.block_number as bigint) > BigInt(mid))
    expect(early).toHaveLength(expected.length)
    // Never guessed: each value is the one-run value or null.
    early.forEach((r, i) => {
      for (const [k, v] of Object.entries(r)) if (v !== null) expect([k, v]).toEqual([k, expected[i][k]])
    })
    const collectB = early.find(r => r.token_id === decreased && r.event === 'collect')!
    expect([collectB.fees0, collectB.fees1, collectB.owner]).toEqual([null, null, null])

    await ingest(store, 0, mid)
    await redecode({ chain: DEVNET, store, from: mid + 1 })
    expect(await positionsOf(store)).toEqual(oneRun)
  }, 120_000)
})

/**
 * Position matching and state: the ordering rule checked on every recorded NonfungiblePositionManager
 * event (pool events found independently with viem), then the state cases the recorded data
 * cannot show (a plain transfer with known state, a burn, the fee split, batched calls).
 */
import { describe, expect, it } from 'vitest'
import { decodeEventLog } from 'viem'
import type { Abi, Hex } from 'viem'
import { decodeDex, positionKeys, scanBlocks } from '../../src/dex/decode.ts'
import type { DexBlock, DexLog } from '../../src/dex/decode.ts'
import { applyPositionChanges, foldPositionRows, positionKey } from '../../src/dex/positions.ts'
import type { PositionEntry, StoredPositionRow } from '../../src/dex/positions.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import { ARTIFACT_ABIS, TOPIC, allRecordedBlocks, establishPools, logsBlocks, receiptsBlock } from './recorded.ts'

type Row = Record<string, unknown>
const view = (row: object): Row => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? bytesToHex(v) : v]))
const lower = (a: unknown): string => String(a).toLowerCase()

// Published deployments: Uniswap's and PancakeSwap's v3 NonfungiblePositionManager on Ethereum.
const UNISWAP_NPM = '0xc36442b4a4522e871399cd717abdd847ab11fe88'
const PANCAKE_NPM = '0x46a15b0b27311cedf172ab29e4f4766fbe7f4364'
const MANAGERS = new Set([UNISWAP_NPM, PANCAKE_NPM])
const ZERO = '0x0000000000000000000000000000000000000000'

/** The pool event kind each manager event reports. */
const REPORTS: Record<string, { pool: Hex; values: string[] }> = {
  [TOPIC.increase]: { pool: TOPIC.v3Mint, values: ['liquidity', 'amount0', 'amount1'] },
  [TOPIC.decrease]: { pool: TOPIC.v3Burn, values: ['liquidity', 'amount0', 'amount1'] },
  [TOPIC.npmCollect]: { pool: TOPIC.v3Collect, values: ['recipient', 'amount0', 'amount1'] },
}

const args = (abi: Abi, log: DexLog): Row =>
  decodeEventLog({ abi, data: log.data, topics: log.topics as [Hex, ...Hex[]] }).args as unknown as Row

/** Pool values under the manager event's names (the pool's Mint/Burn call liquidity `amount`). */
const poolValues = (log: DexLog): Row => {
  const a = args(ARTIFACT_ABIS.v3Pool, log)
  return { ...a, liquidity: a.amount, recipient: a.recipient === undefined ? undefined : lower(a.recipient) }
}

const decode = (blocks: DexBlock[], state = new Map<string, PositionEntry>()) => decodeDex(scanBlocks(1, blocks), new Map(), state)

describe('recorded position manager events', () => {
  const sources = allRecordedBlocks()

  it('each follows its pool event, the nearest preceding one of its kind owned by the manager, with equal values', () => {
    let checked = 0
    for (const { source, blocks } of sources) {
      const rows = new Map(
        decode(blocks)
          .positions.map(view)
          .map(r => [`${r.transaction_hash}/${r.log_index}`, r]),
      )
      for (const block of blocks) {
        const logs = [...block.logs].sort((a, b) => Number(BigInt(a.logIndex) - BigInt(b.logIndex)))
        logs.forEach((log, i) => {
          const reports = REPORTS[log.topics[0]]
          if (!reports || !MANAGERS.has(lower(log.address))) return
          const manager = lower(log.address)
          const pool = logs
            .slice(0, i)
            .reverse()
            .find(
              p =>
                p.transactionHash === log.transactionHash &&
                p.topics[0] === reports.pool &&
                lower(`0x${p.topics[1].slice(26)}`) === manager,
            )
          expect(pool, `${source} ${log.transactionHash}: no pool event before the manager's`).toBeDefined()
          const m = args(ARTIFACT_ABIS.positionManager, log)
          const want: Row = { ...m, recipient: m.recipient === undefined ? undefined : lower(m.recipient) }
          const got = poolValues(pool!)
          for (const v of reports.values) expect(got[v], `${source} ${log.transactionHash} ${v}`).toEqual(want[v])
          const row = rows.get(`${log.transactionHash}/${BigInt(log.logIndex)}`)!
          const p = args(ARTIFACT_ABIS.v3Pool, pool!)
          expect([row.pool, row.tick_lower, row.tick_upper, row.pool_log_index, row.token_id, row.position_manager]).toEqual([
            lower(pool!.address),
            BigInt(p.tickLower as number),
            BigInt(p.tickUpper as number),
            BigInt(pool!.logIndex),
            m.tokenId,
            manager,
          ])
          checked++
        })
      }
    }
    expect(checked).toBeGreaterThanOrEqual(15)
  })

  it("gives a mint's NFT Transfer the pool and ticks of the IncreaseLiquidity after it, and starts a complete history", () => {
    const block = receiptsBlock(17999999)
    const out = decode([block])
    const rows = out.positions.map(view)
    const transfer = rows.find(r => r.event === 'transfer')!
    const increase = rows.find(r => r.event === 'increase_liquidity' && r.token_id === transfer.token_id)!
    expect(transfer.previous_owner).toBe(ZERO)
    expect([transfer.pool, transfer.tick_lower, transfer.tick_upper]).toEqual([increase.pool, increase.tick_lower, increase.tick_upper])
    expect(transfer.pool).not.toBeNull()
    expect(increase.owner).toBe(transfer.owner)
    const entry = out.positionChanges.get(positionKey(UNISWAP_NPM, transfer.token_id as bigint))!
    expect(entry).toMatchObject({ pool: increase.pool, owner: transfer.owner, owed0: 0n, owed1: 0n })
    expect(positionKeys(scanBlocks(1, [block]))).toEqual([positionKey(UNISWAP_NPM, transfer.token_id as bigint)])
  })

  it("matches PancakeSwap's manager to a CREATE2-verified PancakeSwap v3 pool", () => {
    const blocks = logsBlocks('mainnet_logs_18851891_18851891_all_127344.json')
    const logs = blocks.flatMap(b => b.logs)
    const established = establishPools(logs)
    const pools = new Map(
      [...established].map(([p, e]) => [p as Hex, { token0: e.token0, token1: e.token1, fee: e.fee === null ? null : BigInt(e.fee) }]),
    )
    const out = decodeDex(scanBlocks(1, blocks), pools, new Map())
    const row = view(out.positions.find(p => bytesToHex(p.position_manager) === PANCAKE_NPM && p.event === 'increase_liquidity')!)
    expect(row.protocol).toBe('pancakeswap_v3')
    expect(established.get(row.pool as string)?.protocol).toBe('pancakeswap_v3')
    expect([row.token0, row.token1]).toEqual([established.get(row.pool as string)!.token0, established.get(row.pool as string)!.token1])
    const mint = view(out.liquidity.find(l => l.log_index === row.pool_log_index)!)
    expect([mint.protocol, mint.pool_verified, mint.owner]).toEqual(['pancakeswap_v3', true, PANCAKE_NPM])
  })
})

describe('position state', () => {
  // A recorded position NFT Transfer (a mint: its file holds only some of the block's logs),
  // made a plain owner-to-owner transfer with no pool event in its transaction.
  const recorded = logsBlocks('mainnet_logs_16000000_16000003_filtered_cbffea.json')
  const recordedTransfer = recorded.flatMap(b => b.logs).find(l => lower(l.address) === UNISWAP_NPM && l.topics[0] === TOPIC.transfer)!
  const OWNER = '0x00000000000000000000000000000000000000e1'
  const transferLog = {
    ...recordedTransfer,
    topics: [recordedTransfer.topics[0], `0x${OWNER.slice(2).padStart(64, '0')}`, ...recordedTransfer.topics.slice(2)] as Hex[],
  }
  const transferBlocks = recorded.map(b => ({ ...b, logs: b.logs.map(l => (l === recordedTransfer ? transferLog : l)) }))
  const t = args(ARTIFACT_ABIS.positionManager, transferLog)
  const tokenId = t.tokenId as bigint
  const key = positionKey(UNISWAP_NPM, tokenId)
  const known: PositionEntry = {
    pool: '0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640',
    tick_lower: -887270n,
    tick_upper: 887270n,
    token0: '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48',
    token1: '0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2',
    owner: OWNER,
    owed0: 5n,
    owed1: 0n,
  }

  it("leaves a plain transfer's pool null without state", () => {
    const row = view(decode(transferBlocks).positions.find(r => r.token_id === tokenId)!)
    expect(row).toMatchObject({
      event: 'transfer',
      pool: null,
      tick_lower: null,
      tick_upper: null,
      owner: lower(t.to),
      previous_owner: OWNER,
      pool_log_index: null,
    })
    expect(decode(transferBlocks).positionChanges.get(key)).toMatchObject({ owner: lower(t.to), owed0: null })
  })

  it('fills a plain transfer from state and moves the owner', () => {
    const out = decode(transferBlocks, new Map([[key, known]]))
    const row = view(out.positions.find(r => r.token_id === tokenId)!)
    expect(row).toMatchObject({
      pool: known.pool,
      tick_lower: known.tick_lower,
      tick_upper: known.tick_upper,
      token0: known.token0,
      token1: known.token1,
      owner: lower(t.to),
      liquidity: 0n,
    })
    expect(out.positionChanges.get(key)).toEqual({ ...known, owner: lower(t.to) })
    const state = new Map([[key, known]])
    applyPositionChanges(state, out.positionChanges)
    expect(state.get(key)!.owner).toBe(lower(t.to))
  })

  it('starts a complete history at a mint transfer', () => {
    const out = decode(recorded)
    expect(args(ARTIFACT_ABIS.positionManager, recordedTransfer).from).toBe(ZERO)
    expect(out.positionChanges.get(key)).toMatchObject({ owner: lower(t.to), owed0: 0n, owed1: 0n })
  })

  // decreaseLiquidity then collect in one transaction (block 13441042), fees earned on both tokens.
  const collectBlocks = logsBlocks('mainnet_logs_13441042_13441042_all_bfad60.json')
  const managerLogs = collectBlocks.flatMap(b => b.logs).filter(l => lower(l.address) === UNISWAP_NPM)
  const dec = args(
    ARTIFACT_ABIS.positionManager,
    managerLogs.find(l => l.topics[0] === TOPIC.decrease)!,
  )
  const col = args(
    ARTIFACT_ABIS.positionManager,
    managerLogs.find(l => l.topics[0] === TOPIC.npmCollect)!,
  )
  const collectKey = positionKey(UNISWAP_NPM, dec.tokenId as bigint)
  const collectRow = (state: Map<string, PositionEntry>) => view(decode(collectBlocks, state).positions.find(r => r.event === 'collect')!)

  it('splits a Collect into principal and fees when the history is complete', () => {
    const [d0, d1, c0, c1] = [dec.amount0, dec.amount1, col.amount0, col.amount1] as bigint[]
    expect(c0 > d0 && c1 > d1).toBe(true)
    const complete = new Map([[collectKey, { ...known, owed0: 0n, owed1: 0n }]])
    expect(collectRow(complete)).toMatchObject({ amount0: c0, amount1: c1, fees0: c0 - d0, fees1: c1 - d1 })
    // Principal still owed from an earlier decrease is paid first; what exceeds the collect stays owed.
    const [o0, o1] = [(c0 - d0) / 2n, c1 - d1 + 7n]
    const owing = new Map([[collectKey, { ...known, owed0: o0, owed1: o1 }]])
    expect(collectRow(owing)).toMatchObject({ fees0: c0 - d0 - o0, fees1: 0n })
    expect(decode(collectBlocks, owing).positionChanges.get(collectKey)).toMatchObject({ owed0: 0n, owed1: 7n })
    const out = decode(collectBlocks, complete)
    expect(out.positionChanges.get(collectKey)).toMatchObject({ owed0: 0n, owed1: 0n })
  })

  it('leaves fees null when the position was first seen after its mint', () => {
    expect(collectRow(new Map())).toMatchObject({ fees0: null, fees1: null })
    expect(decode(collectBlocks).positionChanges.get(collectKey)).toMatchObject({ owner: null, owed0: null, owed1: null })
  })

  it('forgets a burned NFT', () => {
    const burn = {
      ...transferLog,
      topics: [transferLog.topics[0], transferLog.topics[1], `0x${'0'.repeat(64)}`, transferLog.topics[3]] as Hex[],
    }
    const blocks = transferBlocks.map(b => ({ ...b, logs: b.logs.map(l => (l === transferLog ? burn : l)) }))
    const out = decode(blocks, new Map([[key, known]]))
    expect(out.positionChanges.get(key)).toBeNull()
    const state = new Map([[key, known]])
    applyPositionChanges(state, out.positionChanges)
    expect(state.has(key)).toBe(false)
  })
})

describe('matching inside one transaction', () => {
  const word = (n: bigint): string => (n < 0n ? (1n << 256n) + n : n).toString(16).padStart(64, '0')
  const topic = (a: string): Hex => `0x${a.slice(2).padStart(64, '0')}`
  const POOL_A = '0x00000000000000000000000000000000000000a1'
  const FAKE = '0x00000000000000000000000000000000000000f0'
  const tx = `0x${'12'.repeat(32)}` as Hex
  const mint = (pool: string, lower: bigint, upper: bigint, liquidity: bigint, a0: bigint, a1: bigint) => ({
    address: pool as Hex,
    topics: [TOPIC.v3Mint, topic(UNISWAP_NPM), `0x${word(lower)}`, `0x${word(upper)}`] as Hex[],
    data: `0x${[BigInt(UNISWAP_NPM), liquidity, a0, a1].map(word).join('')}` as Hex,
  })
  const increase = (tokenId: bigint, liquidity: bigint, a0: bigint, a1: bigint) => ({
    address: UNISWAP_NPM as Hex,
    topics: [TOPIC.increase, `0x${word(tokenId)}`] as Hex[],
    data: `0x${[liquidity, a0, a1].map(word).join('')}` as Hex,
  })
  const block = (logs: Omit<DexLog, 'logIndex' | 'transactionIndex' | 'transactionHash'>[]): DexBlock => ({
    number: '0x1',
    hash: `0x${'34'.repeat(32)}`,
    timestamp: '0x0',
    transactions: [{ hash: tx, from: ZERO }],
    logs: logs.map((l, i) => ({ ...l, logIndex: `0x${i.toString(16)}`, transactionIndex: '0x0', transactionHash: tx })),
  })

  it('pairs batched calls with equal values by nearest preceding, ignoring an impostor earlier in the transaction', () => {
    const out = decode([
      block([
        mint(FAKE, -60n, 60n, 7n, 1n, 1n),
        mint(POOL_A, -10n, 10n, 7n, 1n, 1n),
        increase(1n, 7n, 1n, 1n),
        mint(POOL_A, -20n, 20n, 7n, 1n, 1n),
        increase(2n, 7n, 1n, 1n),
      ]),
    ])
    expect(out.positions.map(r => [r.token_id, bytesToHex(r.pool!), r.tick_lower, r.pool_log_index])).toEqual([
      [1n, POOL_A, -10n, 1n],
      [2n, POOL_A, -20n, 3n],
    ])
  })

  it("does not match a pool event with other values, nor one after the manager's", () => {
    const out = decode([block([mint(POOL_A, -10n, 10n, 7n, 1n, 2n), increase(1n, 7n, 1n, 1n), mint(POOL_A, -10n, 10n, 7n, 1n, 1n)])])
    expect(view(out.positions[0])).toMatchObject({ pool: null, pool_log_index: null, liquidity: 7n })
  })
})

describe('folding stored rows into state', () => {
  const POOL: Hex = '0x1111111111111111111111111111111111111111'
  const [ALICE, BOB]: Hex[] = ['0xa11ce00000000000000000000000000000000000', '0xb0b0000000000000000000000000000000000000']
  const row = (block: number, event: StoredPositionRow['event'], more: Partial<StoredPositionRow> = {}): StoredPositionRow => ({
    block_number: BigInt(block),
    event,
    pool: event === 'transfer' ? null : POOL,
    tick_lower: event === 'transfer' ? null : -60n,
    tick_upper: event === 'transfer' ? null : 60n,
    token0: null,
    token1: null,
    amount0: 0n,
    amount1: 0n,
    fees0: null,
    fees1: null,
    owner: null,
    previous_owner: null,
    ...more,
  })
  // A mint (Transfer from zero, then IncreaseLiquidity), a decrease, a partial collect, a transfer.
  const history = [
    row(10, 'transfer', { previous_owner: ZERO as Hex, owner: ALICE }),
    row(10, 'increase_liquidity', { amount0: 100n, amount1: 200n, owner: ALICE }),
    row(20, 'decrease_liquidity', { amount0: 50n, amount1: 70n, owner: ALICE }),
    row(30, 'collect', { amount0: 30n, amount1: 90n, fees0: 0n, fees1: 20n, owner: ALICE }),
    row(40, 'transfer', { previous_owner: ALICE, owner: BOB }),
  ]
  const complete = { pool: POOL, tick_lower: -60n, tick_upper: 60n, token0: null, token1: null }

  it('replays owner and owed principal over a complete history, pool and ticks kept through a plain transfer', () => {
    expect(foldPositionRows(history, [[0, 50]], 50)).toEqual({ ...complete, owner: BOB, owed0: 20n, owed1: 0n })
  })

  it('makes owner and owed unknown after a gap, keeping pool and ticks', () => {
    const unknown = { ...complete, owner: null, owed0: null, owed1: null }
    // Blocks 45-50 not published: a transfer or collect may be missing.
    expect(foldPositionRows(history, [[0, 44]], 50)).toEqual(unknown)
    // A gap between the decrease and the collect.
    expect(
      foldPositionRows(
        history.slice(0, 4),
        [
          [0, 24],
          [26, 50],
        ],
        50,
      ),
    ).toEqual(unknown)
    // A transfer after the gap makes the owner known again, owed stays unknown.
    expect(
      foldPositionRows(
        history,
        [
          [0, 35],
          [37, 50],
        ],
        50,
      ),
    ).toEqual({ ...unknown, owner: BOB })
    // No rows before the first covered block is a history first seen late, not a gap.
    expect(foldPositionRows(history, [[5, 50]], 50)).toEqual({ ...complete, owner: BOB, owed0: 20n, owed1: 0n })
  })

  it('gives nothing for a burned NFT', () => {
    expect(foldPositionRows([...history, row(45, 'transfer', { previous_owner: BOB, owner: ZERO as Hex })], [[0, 50]], 50)).toBeNull()
  })
})

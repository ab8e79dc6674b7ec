/**
 * The decoder on every recorded mainnet block, against an independent decode: viem's
 * decodeEventLog with the npm Uniswap artifacts' ABIs, pool keys established from ERC-20
 * transfers and CREATE2 (recorded.ts), prices by string arithmetic (decimal.ts).
 */
import { describe, expect, it } from 'vitest'
import { decodeEventLog } from 'viem'
import type { Abi, Hex } from 'viem'
import { decodeDex, poolsToResolve, scanBlocks } from '../../src/dex/decode.ts'
import type { DexBlock, DexLog, DexOutput } from '../../src/dex/decode.ts'
import type { PoolInfo } from '../../src/dex/pools.ts'
import { PRICE_DIGITS } from '../../src/dex/price.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import { dyadicText, longDivision, truncateText } from './decimal.ts'
import { ARTIFACT_ABIS, FULL_BLOCKS, TOPIC, allRecordedBlocks, establishPools, fullBlock, receiptsBlock } from './recorded.ts'
import type { EstablishedPool } from './recorded.ts'

type Row = Record<string, unknown>
type Dataset = 'swaps' | 'liquidity'

/** Which ABI decodes each pool topic, and which dataset its row belongs in. */
const POOL_TOPICS: Record<string, { abi: Abi; family: 'v2' | 'v3'; dataset: Dataset }> = {
  [TOPIC.v2Swap]: { abi: ARTIFACT_ABIS.v2Pair, family: 'v2', dataset: 'swaps' },
  [TOPIC.v2Mint]: { abi: ARTIFACT_ABIS.v2Pair, family: 'v2', dataset: 'liquidity' },
  [TOPIC.v2Burn]: { abi: ARTIFACT_ABIS.v2Pair, family: 'v2', dataset: 'liquidity' },
  [TOPIC.v3Swap]: { abi: ARTIFACT_ABIS.v3Pool, family: 'v3', dataset: 'swaps' },
  [TOPIC.v3Mint]: { abi: ARTIFACT_ABIS.v3Pool, family: 'v3', dataset: 'liquidity' },
  [TOPIC.v3Burn]: { abi: ARTIFACT_ABIS.v3Pool, family: 'v3', dataset: 'liquidity' },
  [TOPIC.v3Collect]: { abi: ARTIFACT_ABIS.v3Pool, family: 'v3', dataset: 'liquidity' },
  [TOPIC.pancakeSwap]: { abi: ARTIFACT_ABIS.pancakeV3Pool, family: 'v3', dataset: 'swaps' },
}

/** The registry's v2 fees as each protocol documents them (checked against swap math below). */
const V2_FEES: Record<string, bigint> = { uniswap_v2: 3000n, sushiswap_v2: 3000n, pancakeswap_v2: 2500n }

/** Bytes as lowercase hex, everything else as is. */
const view = (row: object): Row => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? bytesToHex(v) : v]))
const lower = (a: unknown): string => String(a).toLowerCase()
const int = (v: unknown): bigint => BigInt(v as bigint | number)

function decodeWithViem(log: DexLog): { eventName: string; args: Record<string, unknown> } | null {
  const known = POOL_TOPICS[log.topics[0]]
  try {
    return decodeEventLog({ abi: known.abi, data: log.data, topics: log.topics as [Hex, ...Hex[]], strict: true }) as never
  } catch {
    return null
  }
}

/** Expected pool columns from the established key. */
function poolColumns(pool: string, family: 'v2' | 'v3', est: EstablishedPool | undefined): Row {
  return {
    pool,
    family,
    pool_verified: est !== undefined,
    protocol: est?.protocol ?? null,
    factory: est?.factory ?? null,
    token0: est?.token0 ?? null,
    token1: est?.token1 ?? null,
    fee: est === undefined ? null : family === 'v3' ? BigInt(est.fee!) : V2_FEES[est.protocol],
  }
}

/** The expected row of a pool log, from viem's decode alone. */
function expectedRow(log: DexLog, previous: DexLog | undefined, est: EstablishedPool | undefined): { dataset: Dataset; row: Row } | null {
  const decoded = decodeWithViem(log)
  if (!decoded) return null
  const { family, dataset } = POOL_TOPICS[log.topics[0]]
  const a = decoded.args
  const pool = poolColumns(lower(log.address), family, est)
  if (dataset === 'liquidity') {
    const v3 = family === 'v3'
    return {
      dataset,
      row: {
        ...pool,
        event: decoded.eventName.toLowerCase(),
        owner: v3 ? lower(a.owner) : null,
        sender: a.sender === undefined ? null : lower(a.sender),
        recipient: a.to !== undefined ? lower(a.to) : a.recipient !== undefined ? lower(a.recipient) : null,
        tick_lower: v3 ? int(a.tickLower) : null,
        tick_upper: v3 ? int(a.tickUpper) : null,
        liquidity: a.amount === undefined ? null : int(a.amount),
        amount0: int(a.amount0),
        amount1: int(a.amount1),
      },
    }
  }
  let amounts: Row
  let price: string | null
  if (family === 'v2') {
    const [in0, in1, out0, out1] = [a.amount0In, a.amount1In, a.amount0Out, a.amount1Out].map(int)
    amounts = {
      amount0: in0 - out0,
      amount1: in1 - out1,
      amount0_in: in0,
      amount1_in: in1,
      amount0_out: out0,
      amount1_out: out1,
      sqrt_price_x96: null,
      liquidity: null,
      tick: null,
    }
    const sync =
      previous && previous.topics[0] === TOPIC.v2Sync && lower(previous.address) === lower(log.address)
        ? (decodeEventLog({ abi: ARTIFACT_ABIS.v2Pair, data: previous.data, topics: previous.topics as [Hex, ...Hex[]] })
            .args as unknown as Row)
        : null
    price = sync && int(sync.reserve0) > 0n ? longDivision(int(sync.reserve1), int(sync.reserve0), PRICE_DIGITS) : null
  } else {
    const s = int(a.sqrtPriceX96)
    amounts = {
      amount0: int(a.amount0),
      amount1: int(a.amount1),
      amount0_in: null,
      amount1_in: null,
      amount0_out: null,
      amount1_out: null,
      sqrt_price_x96: s,
      liquidity: int(a.liquidity),
      tick: int(a.tick),
    }
    price = truncateText(dyadicText(s * s, 192), PRICE_DIGITS)
  }
  const [n0, n1] = [amounts.amount0 as bigint, amounts.amount1 as bigint]
  // The taker paid in the token the pool's balance grew by, and received the one it shrank by.
  const side = n0 > 0n && n1 < 0n ? { sold: 0, bought: 1 } : n1 > 0n && n0 < 0n ? { sold: 1, bought: 0 } : null
  const tokens = [pool.token0, pool.token1]
  return {
    dataset,
    row: {
      ...pool,
      sender: lower(a.sender),
      recipient: lower(a.to ?? a.recipient),
      ...amounts,
      protocol_fees_token0: a.protocolFeesToken0 === undefined ? null : int(a.protocolFeesToken0),
      protocol_fees_token1: a.protocolFeesToken1 === undefined ? null : int(a.protocolFeesToken1),
      price,
      taker: lower(a.to ?? a.recipient),
      ...(side && {
        token_sold_address: tokens[side.sold],
        token_bought_address: tokens[side.bought],
        token_sold_amount_raw: side.sold === 0 ? n0 : n1,
        token_bought_amount_raw: side.bought === 0 ? -n0 : -n1,
      }),
    },
  }
}

const pick = (row: Row, keys: string[]): Row => Object.fromEntries(keys.map(k => [k, row[k]]))
const key = (hash: unknown, index: unknown): string => `${lower(hash)}/${BigInt(index as string)}`

interface Decoded {
  source: string
  blocks: DexBlock[]
  established: Map<string, EstablishedPool>
  out: DexOutput
}

const infoOf = (est: Map<string, EstablishedPool>): Map<Hex, PoolInfo> =>
  new Map([...est].map(([pool, e]) => [pool as Hex, { token0: e.token0, token1: e.token1, fee: e.fee === null ? null : BigInt(e.fee) }]))

const decodeAll = (): Decoded[] =>
  allRecordedBlocks().map(({ source, blocks }) => {
    const established = establishPools(blocks.flatMap(b => b.logs))
    return { source, blocks, established, out: decodeDex(scanBlocks(1, blocks), infoOf(established), new Map()) }
  })

describe('recorded mainnet blocks', () => {
  const all = decodeAll()

  it("turns every registered pool log into exactly one row equal to viem's decode", () => {
    let checked = 0
    const refused: DexLog[] = []
    for (const { source, blocks, established, out } of all) {
      const rows: Record<Dataset, Map<string, Row>> = { swaps: new Map(), liquidity: new Map() }
      for (const dataset of ['swaps', 'liquidity'] as const) {
        for (const r of out[dataset].map(view)) {
          const k = key(r.transaction_hash, r.log_index)
          expect(rows[dataset].has(k), `${source} ${dataset} ${k} twice`).toBe(false)
          rows[dataset].set(k, r)
        }
      }
      const expected: Record<Dataset, number> = { swaps: 0, liquidity: 0 }
      for (const block of blocks) {
        const logs = [...block.logs].sort((x, y) => Number(BigInt(x.logIndex) - BigInt(y.logIndex)))
        logs.forEach((log, i) => {
          if (!POOL_TOPICS[log.topics[0]]) return
          const previous = logs[i - 1]?.transactionHash === log.transactionHash ? logs[i - 1] : undefined
          const want = expectedRow(log, previous, established.get(lower(log.address)))
          const k = key(log.transactionHash, log.logIndex)
          if (!want) {
            refused.push(log)
            expect(rows.swaps.has(k) || rows.liquidity.has(k), `${source} ${k}: viem refuses it, so must the decoder`).toBe(false)
            return
          }
          expected[want.dataset]++
          const got = rows[want.dataset].get(k)
          expect(got, `${source} ${k} missing from ${want.dataset}`).toBeDefined()
          expect(pick(got!, Object.keys(want.row)), `${source} ${k}`).toEqual(want.row)
          if (want.dataset === 'swaps' && !('token_sold_address' in want.row))
            expect(
              pick(got!, ['token_sold_address', 'token_bought_address', 'token_sold_amount_raw', 'token_bought_amount_raw']),
              `${source} ${k}`,
            ).toEqual({
              token_sold_address: null,
              token_bought_address: null,
              token_sold_amount_raw: null,
              token_bought_amount_raw: null,
            })
          const tx = block.transactions[Number(log.transactionIndex)]
          expect(pick(got!, ['block_number', 'block_hash', 'block_timestamp', 'transaction_index', 'tx_from', 'tx_to'])).toEqual({
            block_number: BigInt(block.number),
            block_hash: lower(block.hash),
            block_timestamp: BigInt(block.timestamp),
            transaction_index: BigInt(log.transactionIndex),
            tx_from: lower(tx.from),
            tx_to: tx.to ? lower(tx.to) : null,
          })
          checked++
        })
      }
      expect(out.swaps.length, source).toBe(expected.swaps)
      expect(out.liquidity.length, source).toBe(expected.liquidity)
    }
    expect(checked).toBeGreaterThan(1200)
    // Other contracts emit v2 Mint's topic0 with no indexed parameter: same signature, another layout.
    expect(refused.length).toBeGreaterThan(0)
    for (const log of refused) expect([log.topics[0], log.topics.length]).toEqual([TOPIC.v2Mint, 1])
  })

  it('takes tx_from, tx_to and the timestamp of full blocks from the block body', () => {
    for (const n of FULL_BLOCKS) {
      const block = fullBlock(n)
      const out = decodeDex(scanBlocks(1, [block]), new Map(), new Map())
      expect(out.swaps.length).toBeGreaterThan(15)
      for (const r of [...out.swaps, ...out.liquidity].map(view)) {
        const tx = block.transactions.find(t => t.hash === r.transaction_hash)!
        expect([r.tx_from, r.tx_to, r.block_timestamp]).toEqual([tx.from, tx.to ?? null, BigInt(block.timestamp)])
      }
    }
  })

  it('verifies real pools of every registered mainnet factory by CREATE2', () => {
    const verified = new Map<string, Set<string>>()
    for (const { out } of all) {
      for (const r of [...out.swaps, ...out.liquidity].map(view)) {
        if (r.pool_verified) verified.set(r.protocol as string, (verified.get(r.protocol as string) ?? new Set()).add(r.pool as string))
      }
    }
    const counts = Object.fromEntries([...verified].map(([p, s]) => [p, s.size]))
    // A real pair emits Sync right before Swap, so every verified v2 swap has its reserves price.
    const v2 = all.flatMap(({ out }) => out.swaps.filter(s => s.pool_verified && s.family === 'v2'))
    expect(v2.length).toBeGreaterThan(800)
    expect(v2.filter(s => s.price === null)).toEqual([])
    expect(counts.uniswap_v2).toBeGreaterThan(400)
    expect(counts.sushiswap_v2).toBeGreaterThan(20)
    expect(counts.uniswap_v3).toBeGreaterThan(100)
    expect(counts.pancakeswap_v2).toBeGreaterThanOrEqual(2)
    expect(counts.pancakeswap_v3).toBeGreaterThanOrEqual(3)
  })

  it('asks the resolver for exactly the pools with events and no creation in the batch', () => {
    for (const { blocks } of all) {
      const pools = new Set(
        blocks
          .flatMap(b => b.logs)
          .filter(l => POOL_TOPICS[l.topics[0]] && decodeWithViem(l))
          .map(l => lower(l.address)),
      )
      expect(poolsToResolve(scanBlocks(1, blocks))).toEqual([...pools].sort())
    }
  })

  it("keeps a spoofed swap, unverified, even when it claims a real pool's key", () => {
    const SPOOF = '0x000000000000000000000000000000000000dead'
    for (const n of FULL_BLOCKS) {
      const block = fullBlock(n)
      const established = establishPools(block.logs)
      for (const topic of [TOPIC.v2Swap, TOPIC.v3Swap]) {
        const real = block.logs.find(l => l.topics[0] === topic && established.has(lower(l.address)))!
        const spoof = { ...real, address: SPOOF as Hex }
        const claims = new Map([...infoOf(established)].map(([pool, info]) => [pool === lower(real.address) ? (SPOOF as Hex) : pool, info]))
        const out = decodeDex(scanBlocks(1, [{ ...block, logs: block.logs.map(l => (l === real ? spoof : l)) }]), claims, new Map())
        const row = view(out.swaps.find(s => bytesToHex(s.pool) === SPOOF)!)
        const est = established.get(lower(real.address))!
        expect(pick(row, ['pool_verified', 'factory', 'protocol', 'token0', 'token1'])).toEqual({
          pool_verified: false,
          factory: null,
          protocol: null,
          token0: est.token0,
          token1: est.token1,
        })
        expect(row.amount0).toBe(expectedRow(real, undefined, est)!.row.amount0)
      }
    }
  })

  it('keeps the swaps of a contract no factory created, with nothing guessed', () => {
    // 0xfbd8e260… emits v2 Swap events in block 18100000 with no Sync and no token moving.
    const block = receiptsBlock(18100000)
    const spoofer = '0xfbd8e260cf7e41830b82aacbe1065277ad8a261b'
    const scan = scanBlocks(1, [block])
    expect(poolsToResolve(scan)).toContain(spoofer)
    const rows = decodeDex(scan, infoOf(establishPools(block.logs)), new Map())
      .swaps.map(view)
      .filter(r => r.pool === spoofer)
    expect(rows.length).toBeGreaterThan(30)
    for (const r of rows) {
      expect(pick(r, ['pool_verified', 'factory', 'protocol', 'token0', 'token1', 'fee', 'price', 'token_sold_address'])).toEqual({
        pool_verified: false,
        factory: null,
        protocol: null,
        token0: null,
        token1: null,
        fee: null,
        price: null,
        token_sold_address: null,
      })
    }
  })

  it("reproduces the swap math of verified v2 pairs with the registry's fee", () => {
    // The reserves a v2 Swap left, from the Sync right before it (viem's decode).
    const syncs = new Map<string, [bigint, bigint]>()
    for (const { blocks } of all) {
      for (const logs of blocks.map(b => b.logs)) {
        logs.forEach((log, i) => {
          const prev = logs[i - 1]
          if (log.topics[0] !== TOPIC.v2Swap || prev?.topics[0] !== TOPIC.v2Sync || prev.address !== log.address) return
          const { reserve0, reserve1 } = decodeEventLog({
            abi: ARTIFACT_ABIS.v2Pair,
            data: prev.data,
            topics: prev.topics as [Hex, ...Hex[]],
          }).args as unknown as Row
          syncs.set(key(log.transactionHash, log.logIndex), [int(reserve0), int(reserve1)])
        })
      }
    }
    // Router output for an exact input: in·(1 − fee)·reserveOut / (reserveIn + in·(1 − fee)), fee in millionths.
    const tally = new Map<string, { swaps: number; registryFee: number; otherFee: number }>()
    for (const { out } of all) {
      for (const s of out.swaps) {
        const after = syncs.get(key(bytesToHex(s.transaction_hash), s.log_index))
        if (!s.pool_verified || s.family !== 'v2' || !after) continue
        const [in0, in1, out0, out1] = [s.amount0_in!, s.amount1_in!, s.amount0_out!, s.amount1_out!]
        if (in0 > 0n === in1 > 0n) continue
        // The old reserves are the new ones − in + out.
        const [r0, r1] = [after[0] - in0 + out0, after[1] - in1 + out1]
        const [amountIn, amountOut, rIn, rOut] = in0 > 0n ? [in0, out1, r0, r1] : [in1, out0, r1, r0]
        const quote = (fee: bigint) => (amountIn * (1_000_000n - fee) * rOut) / (rIn * 1_000_000n + amountIn * (1_000_000n - fee))
        const t = tally.get(s.protocol!) ?? { swaps: 0, registryFee: 0, otherFee: 0 }
        tally.set(s.protocol!, t)
        t.swaps++
        if (quote(s.fee!) === amountOut) t.registryFee++
        if (quote(s.fee! === 3000n ? 2500n : 3000n) === amountOut) t.otherFee++
      }
    }
    const pancake = tally.get('pancakeswap_v2')!
    expect(pancake.swaps).toBeGreaterThanOrEqual(2)
    expect(pancake.registryFee).toBe(pancake.swaps)
    expect(pancake.otherFee).toBe(0)
    for (const p of ['uniswap_v2', 'sushiswap_v2']) {
      const t = tally.get(p)!
      expect(t.registryFee / t.swaps, p).toBeGreaterThan(0.85)
      expect(t.otherFee / t.swaps, p).toBeLessThan(0.02)
    }
  })
})

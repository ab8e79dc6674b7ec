/**
 * A batch of blocks' logs and transactions → rows of dex/pools, dex/swaps, dex/liquidity and
 * dex/positions. Pure, in two phases around the only I/O the datasets need:
 *
 *   const scan = scanBlocks(chainId, blocks)                    // decode every registered event
 *   const pools = await resolver.resolve(chainId, poolsToResolve(scan))
 *   const out = decodeDex(scan, pools, positionState)           // rows + state changes
 *
 * Inputs are the JSON-RPC shapes the ingester already holds (eth_getBlockByNumber(n, true)
 * and the receipts' logs), declared structurally so its types fit without conversion.
 */
import type { Hex } from 'viem'
import { bytesToHex, hexToBytes } from '../schema/hex.ts'
import { decodeLog } from './abi.ts'
import { factoryAt, poolAddress, positionManagerAt, verifyPool } from './factories.ts'
import type { FactoryEntry, PositionManagerEntry } from './factories.ts'
import { positionKey, trackPositions } from './positions.ts'
import type { ManagerEvent, PoolLiquidityEvent, PositionChanges, PositionState } from './positions.ts'
import type { PoolInfo } from './pools.ts'
import { reservesToPrice, sqrtPriceToPrice } from './price.ts'
import { MANAGER_EVENTS_BY_TOPIC, POOL_EVENTS_BY_TOPIC, protocolEmits } from './protocols.ts'
import type { CreatedFields, LiquidityFields, ManagerEventSpec, ManagerFields, PoolEventSpec, SwapFields, SyncFields } from './protocols.ts'
import type { EventColumns, LiquidityRow, PoolColumns, PoolRow, PositionRow, SwapRow } from './rows.ts'

/** The transaction fields rows carry (an eth_getBlockByNumber(n, true) transaction fits). */
export interface DexTransaction {
  hash: Hex
  from: Hex
  to?: Hex | null
}

/** A receipt log. */
export interface DexLog {
  address: Hex
  topics: readonly Hex[]
  data: Hex
  logIndex: Hex
  transactionIndex: Hex
  transactionHash: Hex
}

/** A block with its transactions in order and every log of its receipts. */
export interface DexBlock {
  number: Hex
  hash: Hex
  timestamp: Hex
  transactions: readonly DexTransaction[]
  logs: readonly DexLog[]
}

/** A log decoded with a registered event; a v2 Swap also carries the Sync right before it. */
type Decoded =
  | { kind: 'pool'; log: DexLog; address: Hex; spec: PoolEventSpec; fields: unknown; sync: SyncFields | null }
  | { kind: 'manager'; log: DexLog; address: Hex; spec: ManagerEventSpec; manager: PositionManagerEntry; fields: ManagerFields }

interface ScannedBlock {
  block: DexBlock
  /** Registered events in log order; undecodable logs are absent. */
  events: Decoded[]
}

/** Phase one's result: every registered event of the batch decoded, verified creations known. */
export interface DexScan {
  chainId: number
  blocks: ScannedBlock[]
  /** Pools created in the batch by a registered factory, CREATE2-verified: cache them. */
  created: Map<Hex, PoolInfo>
}

/** The log as the registry reads it, or null: unregistered topic0, unregistered manager, or not conforming. */
function classify(chainId: number, log: DexLog): Decoded | null {
  const topic0 = log.topics[0]?.toLowerCase() as Hex | undefined
  if (topic0 === undefined) return null
  const address = log.address.toLowerCase() as Hex
  const manager = positionManagerAt(chainId, address)
  const managerSpec = manager && MANAGER_EVENTS_BY_TOPIC.get(topic0)
  if (manager && managerSpec) {
    const args = decodeLog(managerSpec.event, log)
    return args && { kind: 'manager', log, address, spec: managerSpec, manager, fields: managerSpec.fields(args) }
  }
  const spec = POOL_EVENTS_BY_TOPIC.get(topic0)
  const args = spec && decodeLog(spec.event, log)
  return args ? { kind: 'pool', log, address, spec: spec!, fields: spec!.fields(args), sync: null } : null
}

/** The pair's Sync emitted right before a v2 Swap in the same transaction: the reserves it left. */
function syncBefore(swap: Decoded, previous: Decoded | null): SyncFields | null {
  if (swap.kind !== 'pool' || swap.spec.role !== 'swap' || swap.spec.family !== 'v2' || previous?.kind !== 'pool') return null
  return previous.spec.role === 'sync' && previous.address === swap.address ? (previous.fields as SyncFields) : null
}

/** The registered factory at the creation's emitter, if its CREATE2 rule yields the created pool. */
function creator(chainId: number, emitter: Hex, spec: PoolEventSpec, f: CreatedFields): FactoryEntry | null {
  const entry = factoryAt(chainId, emitter)
  return entry && protocolEmits(entry.protocol, spec) && poolAddress(entry, f) === f.pool ? entry : null
}

/** Phase one: decodes every registered event of the blocks and learns the verified creations. */
export function scanBlocks(chainId: number, blocks: readonly DexBlock[]): DexScan {
  const created = new Map<Hex, PoolInfo>()
  const scanned = blocks.map(block => {
    const logs = [...block.logs].sort((a, b) => Number(BigInt(a.logIndex) - BigInt(b.logIndex)))
    const events: Decoded[] = []
    let last: { tx: Hex; decoded: Decoded | null } | null = null
    for (const log of logs) {
      const decoded = classify(chainId, log)
      if (decoded?.kind === 'pool') decoded.sync = syncBefore(decoded, last?.tx === log.transactionHash ? last.decoded : null)
      if (decoded) {
        events.push(decoded)
        if (decoded.kind === 'pool' && decoded.spec.role === 'created') {
          const f = decoded.fields as CreatedFields
          if (creator(chainId, decoded.address, decoded.spec, f)) created.set(f.pool, { token0: f.token0, token1: f.token1, fee: f.fee })
        }
      }
      last = { tx: log.transactionHash, decoded }
    }
    return { block, events }
  })
  return { chainId, blocks: scanned, created }
}

/** Pools whose events the batch holds but whose creation it does not: ask a PoolResolver. */
export function poolsToResolve(scan: DexScan): Hex[] {
  const pools = new Set<Hex>()
  for (const b of scan.blocks) {
    for (const e of b.events) {
      if (e.kind === 'pool' && e.spec.role !== 'created' && e.spec.role !== 'sync' && !scan.created.has(e.address)) pools.add(e.address)
    }
  }
  return [...pools].sort()
}

/** Position state keys the batch's manager events touch: what a store-backed state must load. */
export function positionKeys(scan: DexScan): string[] {
  const keys = new Set<string>()
  for (const b of scan.blocks)
    for (const e of b.events) if (e.kind === 'manager') keys.add(positionKey(e.manager.address, e.fields.token_id))
  return [...keys].sort()
}

/** Phase two's result. */
export interface DexOutput {
  pools: PoolRow[]
  swaps: SwapRow[]
  liquidity: LiquidityRow[]
  positions: PositionRow[]
  /** Position entries the batch changed (null: burned), to store for the next batch. */
  positionChanges: PositionChanges
}

const bin = (hex: Hex): Uint8Array => hexToBytes(hex)
const binOrNull = (hex: Hex | null | undefined): Uint8Array | null => (hex === null || hex === undefined ? null : hexToBytes(hex))

/**
 * Phase two: the rows of the batch. `pools` answers for pools not created in the batch (keys
 * lowercase; absent or null = unknown), `positions` is the position state before the batch.
 */
export function decodeDex(scan: DexScan, pools: ReadonlyMap<Hex, PoolInfo | null>, positions: PositionState): DexOutput {
  const { chainId } = scan
  const out: DexOutput = { pools: [], swaps: [], liquidity: [], positions: [], positionChanges: new Map() }
  const infoOf = (pool: Hex): PoolInfo | null => scan.created.get(pool) ?? pools.get(pool) ?? null
  const verified = new Map<string, FactoryEntry | null>()
  const verify = (pool: Hex, spec: PoolEventSpec, info: PoolInfo): FactoryEntry | null => {
    const key = `${pool}/${spec.id}`
    if (!verified.has(key)) verified.set(key, verifyPool(chainId, spec, pool, info))
    return verified.get(key)!
  }
  const poolColumns = (pool: Hex, spec: PoolEventSpec): PoolColumns => {
    const info = infoOf(pool)
    const entry = info && verify(pool, spec, info)
    return {
      pool: bin(pool),
      protocol: entry?.protocol ?? null,
      family: spec.family,
      factory: entry ? bin(entry.factory) : null,
      pool_verified: entry !== null,
      token0: binOrNull(info?.token0),
      token1: binOrNull(info?.token1),
      fee: spec.family === 'v3' ? (info?.fee ?? null) : (entry?.fee ?? null),
    }
  }

  for (const { block, events } of scan.blocks) {
    const at = (log: DexLog): EventColumns => {
      const tx = block.transactions[Number(log.transactionIndex)]
      if (!tx || tx.hash.toLowerCase() !== log.transactionHash.toLowerCase()) {
        throw new Error(`log ${log.logIndex} of block ${block.number}: transaction ${log.transactionIndex} is not ${log.transactionHash}`)
      }
      return {
        block_number: BigInt(block.number),
        block_hash: bin(block.hash),
        block_timestamp: BigInt(block.timestamp),
        transaction_index: BigInt(log.transactionIndex),
        transaction_hash: bin(log.transactionHash),
        log_index: BigInt(log.logIndex),
        tx_from: bin(tx.from),
        tx_to: binOrNull(tx.to),
      }
    }

    let txHash: Hex | null = null
    let poolEvents: PoolLiquidityEvent[] = []
    let managerEvents: { event: ManagerEvent; log: DexLog; manager: PositionManagerEntry }[] = []
    const flush = () => {
      const updates = trackPositions(
        managerEvents.map(m => m.event),
        poolEvents,
        positions,
        out.positionChanges,
        infoOf,
      )
      updates.forEach((u, i) => {
        const f = u.event.fields
        const sign = u.event.role === 'decrease_liquidity' ? -1n : 1n
        out.positions.push({
          ...at(managerEvents[i].log),
          position_manager: bin(u.event.manager),
          protocol: managerEvents[i].manager.protocol,
          token_id: f.token_id,
          event: u.event.role,
          pool: binOrNull(u.entry.pool),
          tick_lower: u.entry.tick_lower,
          tick_upper: u.entry.tick_upper,
          token0: binOrNull(u.entry.token0),
          token1: binOrNull(u.entry.token1),
          liquidity: sign * (f.liquidity ?? 0n),
          amount0: f.amount0 ?? 0n,
          amount1: f.amount1 ?? 0n,
          fees0: u.fees0,
          fees1: u.fees1,
          recipient: binOrNull(f.recipient),
          owner: binOrNull(u.entry.owner),
          previous_owner: binOrNull(u.previous_owner),
          pool_log_index: u.match?.log_index ?? null,
        })
      })
      managerEvents = []
    }

    for (const e of events) {
      if (e.log.transactionHash !== txHash) {
        if (managerEvents.length) flush()
        poolEvents = []
        txHash = e.log.transactionHash
      }
      const log_index = BigInt(e.log.logIndex)
      if (e.kind === 'manager') {
        managerEvents.push({
          event: { role: e.spec.role, manager: e.manager.address, log_index, fields: e.fields },
          log: e.log,
          manager: e.manager,
        })
        continue
      }
      const spec = e.spec
      if (spec.role === 'created') {
        const f = e.fields as CreatedFields
        const entry = creator(chainId, e.address, spec, f)
        out.pools.push({
          ...at(e.log),
          factory: bin(e.address),
          pool: bin(f.pool),
          protocol: entry?.protocol ?? null,
          family: spec.family,
          token0: bin(f.token0),
          token1: bin(f.token1),
          fee: spec.family === 'v3' ? f.fee : (entry?.fee ?? null),
          tick_spacing: f.tick_spacing,
          pool_verified: entry !== null,
        })
      } else if (spec.role === 'swap') {
        out.swaps.push(swapRow(at(e.log), poolColumns(e.address, spec), e.fields as SwapFields, e.sync))
      } else if (spec.role !== 'sync') {
        const f = e.fields as LiquidityFields
        out.liquidity.push({
          ...at(e.log),
          ...poolColumns(e.address, spec),
          event: spec.role,
          owner: binOrNull(f.owner),
          sender: binOrNull(f.sender),
          recipient: binOrNull(f.recipient),
          tick_lower: f.tick_lower,
          tick_upper: f.tick_upper,
          liquidity: f.liquidity,
          amount0: f.amount0,
          amount1: f.amount1,
        })
        if (spec.family === 'v3') poolEvents.push({ role: spec.role, pool: e.address, log_index, fields: f })
      }
    }
    if (managerEvents.length) flush()
  }
  return out
}

/**
 * Tokens the batch's rows name (lowercase), each with the first block naming it: the
 * dex/tokens rows of the batch, filled through a TokenResolver.
 */
export function tokensFirstSeen(out: DexOutput): Map<Hex, bigint> {
  const first = new Map<Hex, bigint>()
  for (const r of [...out.pools, ...out.swaps, ...out.liquidity, ...out.positions]) {
    for (const t of [r.token0, r.token1]) {
      if (!t) continue
      const token = bytesToHex(t) as Hex
      const seen = first.get(token)
      if (seen === undefined || r.block_number < seen) first.set(token, r.block_number)
    }
  }
  return first
}

/** Tokens the batch's rows name (lowercase, sorted). */
export const tokensOf = (out: DexOutput): Hex[] => [...tokensFirstSeen(out).keys()].sort()

function swapRow(at: EventColumns, pool: PoolColumns, f: SwapFields, sync: SyncFields | null): SwapRow {
  const sold0 = f.amount0 > 0n && f.amount1 <= 0n
  const sold1 = f.amount1 > 0n && f.amount0 <= 0n
  const price = f.sqrt_price_x96 !== null ? sqrtPriceToPrice(f.sqrt_price_x96) : sync && reservesToPrice(sync.reserve0, sync.reserve1)
  return {
    ...at,
    ...pool,
    sender: bin(f.sender),
    recipient: bin(f.recipient),
    amount0: f.amount0,
    amount1: f.amount1,
    amount0_in: f.amount0_in,
    amount1_in: f.amount1_in,
    amount0_out: f.amount0_out,
    amount1_out: f.amount1_out,
    sqrt_price_x96: f.sqrt_price_x96,
    liquidity: f.liquidity,
    tick: f.tick,
    protocol_fees_token0: f.protocol_fees_token0,
    protocol_fees_token1: f.protocol_fees_token1,
    price,
    token_bought_address: sold0 ? pool.token1 : sold1 ? pool.token0 : null,
    token_sold_address: sold0 ? pool.token0 : sold1 ? pool.token1 : null,
    token_bought_amount_raw: sold0 ? -f.amount1 : sold1 ? -f.amount0 : null,
    token_sold_amount_raw: sold0 ? f.amount0 : sold1 ? f.amount1 : null,
    taker: bin(f.recipient),
  }
}

/**
 * v3 position NFTs: which pool and ticks a NonfungiblePositionManager event is about, and the
 * state that carries them to events that do not say (a plain NFT transfer).
 *
 * The manager's events name only the token id. Its pool call comes first: `mint` and
 * `increaseLiquidity` call `pool.mint` (pool Mint, owner = the manager) before emitting
 * IncreaseLiquidity, `decreaseLiquidity` calls `pool.burn` before DecreaseLiquidity, `collect`
 * calls `pool.collect` before Collect, each reporting the pool call's own liquidity and
 * amounts. So the matching pool event is the nearest preceding, not yet matched pool event of
 * that kind in the same transaction whose owner is the manager and whose values are equal
 * (README.md has the evidence from mainnet and devnet transactions).
 *
 * State is a pure input and output: the decoder reads entries through a view and returns the
 * changed entries, which the ingester stores for the next batch.
 */
import type { Hex } from 'viem'
import type { LiquidityFields, ManagerEventSpec, ManagerFields } from './protocols.ts'
import type { PoolInfo } from './pools.ts'

/** What is known of one position NFT after the events seen so far. */
export interface PositionEntry {
  /** Null until an event of the position with a matched pool event is seen. */
  pool: Hex | null
  tick_lower: bigint | null
  tick_upper: bigint | null
  token0: Hex | null
  token1: Hex | null
  /** Null until the NFT's mint or a transfer is seen. */
  owner: Hex | null
  /**
   * Principal withdrawn by DecreaseLiquidity and not yet collected, per token: what a Collect
   * pays before fees. Null when the position's history is incomplete (first seen after its
   * mint), since earlier withdrawals may still be owed.
   */
  owed0: bigint | null
  owed1: bigint | null
}

/** Position state by `positionKey`. */
export type PositionState = ReadonlyMap<string, PositionEntry>

/** Entries changed by a batch; null when the NFT was burned. */
export type PositionChanges = Map<string, PositionEntry | null>

/** The state key of a manager's token id. */
export const positionKey = (manager: Hex, tokenId: bigint): string => `${manager.toLowerCase()}:${tokenId}`

/** Applies a batch's changes to the ingester's own state map. */
export function applyPositionChanges(state: Map<string, PositionEntry>, changes: PositionChanges): void {
  for (const [key, entry] of changes) {
    if (entry === null) state.delete(key)
    else state.set(key, entry)
  }
}

/** A v3 pool's Mint, Burn or Collect, as the matcher sees it. */
export interface PoolLiquidityEvent {
  role: 'mint' | 'burn' | 'collect'
  pool: Hex
  log_index: bigint
  fields: LiquidityFields
}

/** A registered position manager's event. */
export interface ManagerEvent {
  role: ManagerEventSpec['role']
  manager: Hex
  log_index: bigint
  fields: ManagerFields
}

/** Which pool event reports each manager event, and which of its values must be equal. */
const MATCH: Record<
  Exclude<ManagerEvent['role'], 'transfer'>,
  { role: PoolLiquidityEvent['role']; same: (m: ManagerFields, p: LiquidityFields) => boolean }
> = {
  increase_liquidity: { role: 'mint', same: (m, p) => m.liquidity === p.liquidity && m.amount0 === p.amount0 && m.amount1 === p.amount1 },
  decrease_liquidity: { role: 'burn', same: (m, p) => m.liquidity === p.liquidity && m.amount0 === p.amount0 && m.amount1 === p.amount1 },
  collect: { role: 'collect', same: (m, p) => m.recipient === p.recipient && m.amount0 === p.amount0 && m.amount1 === p.amount1 },
}

/**
 * The pool event a manager event reports: the nearest preceding one in the transaction of the
 * right kind, owned by the manager, with equal values, not in `used`; null if there is none.
 * `poolEvents` are the transaction's, in log order.
 */
export function matchPoolEvent(
  event: ManagerEvent,
  poolEvents: readonly PoolLiquidityEvent[],
  used: ReadonlySet<PoolLiquidityEvent>,
): PoolLiquidityEvent | null {
  if (event.role === 'transfer') return null
  const rule = MATCH[event.role]
  for (let i = poolEvents.length - 1; i >= 0; i--) {
    const p = poolEvents[i]
    if (
      p.log_index < event.log_index &&
      p.role === rule.role &&
      !used.has(p) &&
      p.fields.owner === event.manager &&
      rule.same(event.fields, p.fields)
    )
      return p
  }
  return null
}

/** A manager event with what the matching and the state say about it. */
export interface PositionUpdate {
  event: ManagerEvent
  /** The pool event it reports (none for a transfer). */
  match: PoolLiquidityEvent | null
  /** The position after the event. */
  entry: PositionEntry
  /** Transfer: the owner before. */
  previous_owner: Hex | null
  /** Collect: the part that is fees (collected − principal owed), null when the principal owed is unknown. */
  fees0: bigint | null
  fees1: bigint | null
}

const ZERO = '0x0000000000000000000000000000000000000000'

type Location = Pick<PositionEntry, 'pool' | 'tick_lower' | 'tick_upper'>

const EMPTY: PositionEntry = {
  pool: null,
  tick_lower: null,
  tick_upper: null,
  token0: null,
  token1: null,
  owner: null,
  owed0: null,
  owed1: null,
}

/** Principal paid first: min(collected, owed); the rest of a Collect is fees. */
function split(collected: bigint | null, owed: bigint | null): { fees: bigint | null; owed: bigint | null } {
  if (collected === null || owed === null) return { fees: null, owed }
  const principal = collected < owed ? collected : owed
  return { fees: collected - principal, owed: owed - principal }
}

/**
 * One transaction's manager events, in log order, against its pool events: matches them,
 * fills pool and ticks (from the event's match, else from another event of the same token id
 * in the transaction, else from state), tracks owner and owed principal, and records every
 * changed entry in `changes`. `state` is read only through `changes` first.
 */
export function trackPositions(
  managerEvents: readonly ManagerEvent[],
  poolEvents: readonly PoolLiquidityEvent[],
  state: PositionState,
  changes: PositionChanges,
  poolInfo: (pool: Hex) => PoolInfo | null,
): PositionUpdate[] {
  const used = new Set<PoolLiquidityEvent>()
  const matches = managerEvents.map(e => {
    const m = matchPoolEvent(e, poolEvents, used)
    if (m) used.add(m)
    return m
  })
  const located = new Map<string, Location>()
  managerEvents.forEach((e, i) => {
    const m = matches[i]
    const key = positionKey(e.manager, e.fields.token_id)
    if (m && !located.has(key)) located.set(key, { pool: m.pool, tick_lower: m.fields.tick_lower, tick_upper: m.fields.tick_upper })
  })

  return managerEvents.map((event, i) => {
    const key = positionKey(event.manager, event.fields.token_id)
    const before = changes.has(key) ? changes.get(key) : state.get(key)
    const m = matches[i]
    const prev = before ?? EMPTY
    const where: Location = m
      ? { pool: m.pool, tick_lower: m.fields.tick_lower, tick_upper: m.fields.tick_upper }
      : (located.get(key) ?? { pool: prev.pool, tick_lower: prev.tick_lower, tick_upper: prev.tick_upper })
    const info = where.pool === null ? null : poolInfo(where.pool)
    const entry: PositionEntry = { ...prev, ...where, token0: info?.token0 ?? prev.token0, token1: info?.token1 ?? prev.token1 }
    const f = event.fields
    let fees0: bigint | null = null
    let fees1: bigint | null = null
    if (event.role === 'transfer') {
      if (f.from === ZERO) Object.assign(entry, { owed0: 0n, owed1: 0n })
      entry.owner = f.to
    } else if (event.role === 'decrease_liquidity') {
      entry.owed0 = entry.owed0 === null ? null : entry.owed0 + f.amount0!
      entry.owed1 = entry.owed1 === null ? null : entry.owed1 + f.amount1!
    } else if (event.role === 'collect') {
      const s0 = split(f.amount0, entry.owed0)
      const s1 = split(f.amount1, entry.owed1)
      Object.assign(entry, { owed0: s0.owed, owed1: s1.owed })
      fees0 = s0.fees
      fees1 = s1.fees
    }
    changes.set(key, event.role === 'transfer' && f.to === ZERO ? null : entry)
    return { event, match: m, entry, previous_owner: event.role === 'transfer' ? f.from : null, fees0, fees1 }
  })
}

/** A stored dex/positions row as the fold reads it (addresses lowercase 0x-hex). */
export interface StoredPositionRow {
  block_number: bigint
  event: ManagerEvent['role']
  pool: Hex | null
  tick_lower: bigint | null
  tick_upper: bigint | null
  token0: Hex | null
  token1: Hex | null
  amount0: bigint
  amount1: bigint
  fees0: bigint | null
  fees1: bigint | null
  owner: Hex | null
  previous_owner: Hex | null
}

/** True when some block of `from`..`to` is outside `covered` (sorted, disjoint ranges). */
function uncovered(covered: readonly (readonly [number, number])[], from: number, to: number): boolean {
  let next = from
  for (const [a, b] of covered) {
    if (next > to) return false
    if (b < next) continue
    if (a > next) return true
    next = b + 1
  }
  return next <= to
}

/**
 * The entry the ingester's state would hold after one position's stored rows (in block and
 * log order, `through` the last block they cover), replaying what `trackPositions` did when it
 * wrote them: pool, ticks and tokens from the rows (immutable for a token id), owner from
 * transfers, owed principal from the mint (a transfer from the zero address), decreases and
 * collects (principal paid first, as `trackPositions` splits them). Where `covered` (the blocks the
 * rows were read from) leaves a gap between two rows or between the last row and `through`,
 * events may be missing: owner and owed become unknown, as for a position first seen after
 * its mint, never guessed. Null when the last row burned the NFT. `initial`: the entry before
 * the rows (folded from older rows), when they continue a fold.
 */
export function foldPositionRows(
  rows: readonly StoredPositionRow[],
  covered: readonly (readonly [number, number])[],
  through: number,
  initial: PositionEntry | null = null,
): PositionEntry | null {
  let entry: PositionEntry | null = initial
  let last: number | null = null
  const forget = (e: PositionEntry | null): PositionEntry | null => e && { ...e, owner: null, owed0: null, owed1: null }
  for (const row of rows) {
    const block = Number(row.block_number)
    if (last !== null && uncovered(covered, last + 1, block - 1)) entry = forget(entry)
    last = block
    const prev = entry ?? EMPTY
    const next: PositionEntry = {
      ...prev,
      pool: row.pool ?? prev.pool,
      tick_lower: row.tick_lower ?? prev.tick_lower,
      tick_upper: row.tick_upper ?? prev.tick_upper,
      token0: row.token0 ?? prev.token0,
      token1: row.token1 ?? prev.token1,
    }
    if (row.event === 'transfer') {
      if (row.previous_owner === ZERO) Object.assign(next, { owed0: 0n, owed1: 0n })
      next.owner = row.owner
    } else if (row.event === 'decrease_liquidity') {
      next.owed0 = next.owed0 === null ? null : next.owed0 + row.amount0
      next.owed1 = next.owed1 === null ? null : next.owed1 + row.amount1
    } else if (row.event === 'collect') {
      next.owed0 = split(row.amount0, next.owed0).owed
      next.owed1 = split(row.amount1, next.owed1).owed
    }
    entry = row.event === 'transfer' && row.owner === ZERO ? null : next
  }
  if (last !== null && uncovered(covered, last + 1, through)) entry = forget(entry)
  return entry
}

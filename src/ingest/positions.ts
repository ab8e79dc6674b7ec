/**
 * DEX position state across units, runs and ingesters. A position's pool, ticks, owner and
 * owed principal depend on its earlier events, which may lie in an earlier unit of this run,
 * in an earlier run, or in a range another ingester published. The tracker carries what this
 * source decoded itself while its units come in block order, and asks the loader for the rest:
 * the published dex/positions rows of the position below a block, folded the way the decoder
 * would have carried them (src/dex/positions.ts `foldPositionRows`). A range not published yet
 * leaves owner and owed unknown rather than guessed; `npm run redecode` over the range fills
 * them once everything before it is in the lake.
 */
import type { Hex } from 'viem'
import type { Chain } from '../chains/registry.ts'
import { dexPositions } from '../datasets/dex.ts'
import {
  applyPositionChanges,
  foldPositionRows,
  type PositionChanges,
  type PositionEntry,
  type PositionState,
  type StoredPositionRow,
} from '../dex/positions.ts'
import { cellOf, type ColumnBatch } from '../columns/batch.ts'
import { ManifestReader } from '../manifest/read.ts'
import type { BlockRange } from '../manifest/types.ts'
import { runQuery } from '../query/engine.ts'
import { NoDataError } from '../query/errors.ts'
import { bytesToInt, intToBytes } from '../schema/kinds.ts'
import { bytesToHex, hexToBytes } from '../schema/hex.ts'
import type { ObjectStore } from '../store/types.ts'

/** Where position entries the tracker lacks come from. */
export interface PositionLoader {
  /** The entries of `keys` after every block below `before`; a key left out is unknown (or burned). */
  load(keys: readonly string[], before: number): Promise<Map<string, PositionEntry>>
}

const FIELDS = [
  'block_number',
  'log_index',
  'position_manager',
  'token_id',
  'event',
  'pool',
  'tick_lower',
  'tick_upper',
  'token0',
  'token1',
  'amount0',
  'amount1',
  'fees0',
  'fees1',
  'owner',
  'previous_owner',
] as const
const field = (name: string) => dexPositions.fields.find(f => f.name === name)!

/**
 * The loader over a lake: per position manager, one query of dex/positions through the engine
 * (`position_manager` = it, `token_id__in` the ids, blocks 0 to `before − 1`), each position's
 * rows folded with the coverage the query served, so a gap in what is published makes owner
 * and owed unknown. The manifest root is read afresh each time (other ingesters publish).
 */
export function lakePositions(store: ObjectStore, chain: Chain): PositionLoader {
  const manifest = new ManifestReader(store, { rootTtlMs: 0 })
  return {
    async load(keys, before) {
      const out = new Map<string, PositionEntry>()
      if (before <= 0) return out
      const byManager = new Map<string, bigint[]>()
      for (const key of keys) {
        const [manager, id] = key.split(':')
        byManager.set(manager, [...(byManager.get(manager) ?? []), BigInt(id)])
      }
      for (const [manager, ids] of byManager) {
        let result
        try {
          result = await runQuery(
            { store, manifest },
            {
              chain,
              dataset: dexPositions,
              from: 0,
              to: before - 1,
              predicates: [
                { field: field('position_manager'), op: 'eq', values: [hexToBytes(manager)] },
                { field: field('token_id'), op: 'in', values: ids.map(intToBytes) },
              ],
              fields: FIELDS.map(field),
            },
          )
        } catch (e) {
          if (e instanceof NoDataError) return out
          throw e
        }
        const rows = new Map<string, StoredPositionRow[]>()
        for await (const b of result.batches) {
          for (let i = 0; i < b.length; i++) {
            const key = `${manager}:${int(cellOf(b, 'token_id', i))}`
            const list = rows.get(key) ?? []
            list.push(storedRow(name => cellOf(b, name, i)))
            rows.set(key, list)
          }
        }
        for (const [key, list] of rows) {
          const entry = foldPositionRows(list, result.served, before - 1)
          if (entry) out.set(key, entry)
        }
      }
      return out
    },
  }
}

const int = (v: unknown): bigint => bytesToInt(v as Uint8Array)
const intOrNull = (v: unknown): bigint | null => (v === null ? null : int(v))
const hexOrNull = (v: unknown): Hex | null => (v === null ? null : (bytesToHex(v as Uint8Array).toLowerCase() as Hex))

function storedRow(c: (name: string) => unknown): StoredPositionRow {
  return {
    block_number: c('block_number') as bigint,
    event: c('event') as StoredPositionRow['event'],
    pool: hexOrNull(c('pool')),
    tick_lower: intOrNull(c('tick_lower')),
    tick_upper: intOrNull(c('tick_upper')),
    token0: hexOrNull(c('token0')),
    token1: hexOrNull(c('token1')),
    amount0: int(c('amount0')),
    amount1: int(c('amount1')),
    fees0: intOrNull(c('fees0')),
    fees1: intOrNull(c('fees1')),
    owner: hexOrNull(c('owner')),
    previous_owner: hexOrNull(c('previous_owner')),
  }
}

/**
 * The live path's loader: the lake below `low` (the unfinalized window's first block), then
 * `recent`, the dex/positions rows of the window's blocks from `low` on, in block order (the
 * canonical ones: read after any rollback, so a reorg leaves nothing to unwind).
 */
export function withRecentRows(lake: PositionLoader | null, low: number, recent: () => Promise<readonly ColumnBatch[]>): PositionLoader {
  return {
    async load(keys, before) {
      const base = lake ? await lake.load(keys, Math.min(low, before)) : new Map<string, PositionEntry>()
      const wanted = new Set(keys)
      const rows = new Map<string, StoredPositionRow[]>()
      if (before > low)
        for (const b of await recent()) {
          for (let i = 0; i < b.length; i++) {
            const c = (name: string) => b.columns[name][i]
            const key = `${hexOrNull(c('position_manager'))}:${int(c('token_id'))}`
            if (!wanted.has(key) || Number(c('block_number')) >= before) continue
            rows.set(key, [...(rows.get(key) ?? []), storedRow(c)])
          }
        }
      const out = new Map<string, PositionEntry>()
      for (const key of keys) {
        const entry = foldPositionRows(rows.get(key) ?? [], [[low, before - 1]], before - 1, base.get(key) ?? null)
        if (entry) out.set(key, entry)
      }
      return out
    },
  }
}

/** Gives a unit the position state before it, holding at least the keys its events touch (`positionKeys`). */
export type PositionStateOf = (keys: readonly string[]) => Promise<PositionState>

/** Runs a unit's work with the position state before it and keeps the changes it returns. */
export interface UnitPositions {
  unit<T extends { positionChanges: PositionChanges }>(range: BlockRange, work: (stateOf: PositionStateOf) => Promise<T>): Promise<T>
}

/**
 * The position state one source carries from unit to unit. What it decoded itself holds
 * while units come in block order (each starting right after the last); entries a unit
 * touches and the state lacks come from the loader, as of the block the state started at
 * (the state saw every event since, so such a position had none). A unit that does not
 * follow the last one (units built in parallel threads, or a new run) starts the state over
 * at its first block. Units are registered when their work starts, so one whose predecessor
 * is still being built by this tracker waits for it before reading the state: units fetched
 * together still decode in block order.
 */
export class PositionTracker implements UnitPositions {
  private state = new Map<string, PositionEntry>()
  /** Burned since `start`: not to be loaded again. */
  private burned = new Set<string>()
  private start = -1
  private next = -1
  private building = new Map<number, Promise<void>>()

  private readonly loader: PositionLoader | null

  constructor(loader: PositionLoader | null) {
    this.loader = loader
  }

  /**
   * Runs the work of the unit `range`: `work` fetches, asks `stateOf(keys)` for the state
   * before the unit, decodes, and returns the changes, which are kept for the next unit.
   */
  async unit<T extends { positionChanges: PositionChanges }>(
    range: BlockRange,
    work: (stateOf: PositionStateOf) => Promise<T>,
  ): Promise<T> {
    let done!: () => void
    this.building.set(range[1], new Promise<void>(resolve => (done = resolve)))
    const before = this.building.get(range[0] - 1)
    let used: Map<string, PositionEntry> | undefined
    const stateOf: PositionStateOf = async keys => {
      // The lake's part does not depend on the predecessor when the state goes on from the same
      // start: asked before waiting for it, so the query is off the ordered path.
      const start = before || range[0] === this.next ? this.start : range[0]
      const early = this.loader && keys.length > 0 ? this.loader.load(keys, start) : null
      early?.catch(() => {})
      await before
      if (range[0] !== this.next) {
        this.state = new Map()
        this.burned = new Set()
        this.start = range[0]
      }
      used = this.state
      this.next = -1
      const missing = keys.filter(k => !used!.has(k) && !this.burned.has(k))
      if (this.loader && missing.length > 0) {
        const loaded = early && start === this.start ? await early : await this.loader.load(missing, this.start)
        for (const k of missing) {
          const e = loaded.get(k)
          if (e) used.set(k, e)
        }
      }
      return used
    }
    try {
      const out = await work(stateOf)
      // Another unit may have started the state over meanwhile: these changes are then not its.
      if (used === this.state) {
        for (const [k, e] of out.positionChanges) if (e === null) this.burned.add(k)
        applyPositionChanges(this.state, out.positionChanges)
        this.next = range[1] + 1
      }
      return out
    } finally {
      this.building.delete(range[1])
      done()
    }
  }
}

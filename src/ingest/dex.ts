/**
 * The DEX datasets at ingest: the verified blocks of a unit → src/dex's two phases →
 * column batches of dex/pools, dex/swaps, dex/liquidity and dex/positions (and dex/tokens). Pools the
 * unit's logs name but did not see created are resolved with `token0()`, `token1()`,
 * `fee()` by `eth_call` (immutable getters: any node answers at its head), each answer
 * cached in the store, so a rerun decodes the same rows without asking again. Tokens are
 * asked `symbol()`, `name()`, `decimals()` the same way.
 */
import type { Hex } from 'viem'
import { chainKey } from '../chains/registry.ts'
import { dexLiquidity, dexPools, dexPositions, dexSwaps, dexTokens } from '../datasets/dex.ts'
import {
  decodeDex,
  poolsToResolve,
  positionKeys,
  scanBlocks,
  tokensFirstSeen,
  type DexBlock,
  type DexOutput,
  type DexScan,
  type DexTransaction,
} from '../dex/decode.ts'
import { POOL_CALLS, poolInfoFromCalls, type PoolInfo, type PoolResolver } from '../dex/pools.ts'
import type { PositionChanges } from '../dex/positions.ts'
import { TOKEN_CALLS, tokenRow, type TokenCallResults, type TokenResolver } from '../dex/tokens.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import { columnOf } from '../schema/dataset.ts'
import { intToBytes, type StoredValue } from '../schema/kinds.ts'
import type { ObjectStore } from '../store/types.ts'
import type { ColumnBatch } from '../columns/batch.ts'
import { storedFields } from '../parquet/write.ts'
import { BatchBuilder } from './batch.ts'
import type { RawBlock } from './evm-json.ts'
import type { PositionStateOf } from './positions.ts'
import type { RpcClient } from './rpc.ts'

/** The four DEX batches keyed by storage name. */
export type DexBatches = Record<string, ColumnBatch>

/** The fields of a verified block the decoder reads (a RawBlock holds more). */
export function dexBlockOf({ block, receipts }: RawBlock): DexBlock {
  return {
    number: block.number,
    hash: block.hash,
    timestamp: block.timestamp,
    transactions: block.transactions.map(tx => ({ hash: tx.hash, from: tx.from, to: tx.to })),
    logs: receipts.flatMap(r => r.logs),
  }
}

/** Each DEX dataset's stored columns (name, and whether the kind is `int`), derived once rather than per row. */
const storedColumns = new Map<DatasetDecl, { name: string; int: boolean }[]>()

/** A decoded row as stored: `int` fields as their stored bytes, `removed` false. */
function storedRow(dataset: DatasetDecl, row: object): Record<string, StoredValue | null> {
  const values = row as Record<string, unknown>
  const out: Record<string, StoredValue | null> = {}
  let columns = storedColumns.get(dataset)
  if (!columns) storedColumns.set(dataset, (columns = storedFields(dataset).map(f => ({ name: columnOf(f), int: f.kind === 'int' }))))
  for (const { name, int } of columns) {
    const v = name === 'removed' ? false : values[name]
    if (v === undefined) throw new Error(`${dataset.name}: the decoder gave no ${name}`)
    out[name] = v === null ? null : int ? intToBytes(v as bigint) : (v as StoredValue)
  }
  return out
}

/** The decoder's rows as column batches, keyed by storage name. */
export function dexBatches(out: DexOutput): DexBatches {
  const pairs: [DatasetDecl, readonly object[]][] = [
    [dexPools, out.pools],
    [dexSwaps, out.swaps],
    [dexLiquidity, out.liquidity],
    [dexPositions, out.positions],
  ]
  return Object.fromEntries(
    pairs.map(([d, rows]) => {
      const b = new BatchBuilder(d)
      for (const r of rows) b.push(storedRow(d, r))
      return [d.storage, b.finish()]
    }),
  )
}

/** Store key of a pool's cached getter answers. */
export const poolCacheKey = (chain: { family: 'evm' | 'move'; id: number }, pool: Hex): string =>
  `${chainKey(chain)}/dex-pools/${pool.toLowerCase()}.json`

/** Store key of a token's cached getter answers. */
export const tokenCacheKey = (chain: { family: 'evm' | 'move'; id: number }, token: Hex): string =>
  `${chainKey(chain)}/dex-tokens/${token.toLowerCase()}.json`

interface CachedPool {
  /** Null: the pool's getters answered nothing usable (a revert, empty data). */
  info: { token0: Hex; token1: Hex; fee: string | null } | null
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * Every getter of every target in one batch of `eth_call`s at the node's head. A call the node
 * answers with an error (a revert) gives null; `unsupported` says the node has no `eth_call`
 * (nothing it said may be cached); a transport failure throws.
 */
async function callGetters<K extends string>(
  rpc: RpcClient,
  targets: readonly Hex[],
  calls: Readonly<Record<K, Hex>>,
): Promise<{ target: Hex; results: Record<K, Hex | null>; unsupported: boolean }[]> {
  const names = Object.keys(calls) as K[]
  const settled = await rpc.batchSettled<Hex>(
    targets.flatMap(to => names.map(n => ({ method: 'eth_call', params: [{ to, data: calls[n] }, 'latest'] }))),
  )
  return targets.map((target, i) => {
    let unsupported = false
    const results = Object.fromEntries(
      names.map((n, k) => {
        const s = settled[i * names.length + k]
        if (s.ok) return [n, s.result]
        if (s.error.kind === 'unsupported') unsupported = true
        else if (s.error.code === undefined || s.error.kind !== 'fatal') throw s.error
        return [n, null]
      }),
    ) as Record<K, Hex | null>
    return { target, results, unsupported }
  })
}

/** What a cached getter resolver asks of the contracts it resolves, and how it stores the answers. */
interface GetterSpec<K extends string, T> {
  calls: Readonly<Record<K, Hex>>
  /** The value of a contract from its getters' results (null for a revert). */
  fromCalls(results: Record<K, Hex | null>): T
  /** The value when nothing can answer (no node): for this run only. */
  unknown: T
  key(target: Hex): string
  encode(value: T): unknown
  decode(stored: unknown): T
}

/**
 * Getter answers over the store cache and the node: memory, then the store, then the getters
 * of every miss in one batch (`callGetters`), each answer remembered and cached. A node
 * without `eth_call` answers nothing (remembered for this run, not cached); without a node
 * (`rpc` null, a re-decode) misses are `unknown` and not remembered.
 */
function cachedGetters<K extends string, T>(rpc: RpcClient | null, store: ObjectStore | null, spec: GetterSpec<K, T>) {
  const memory = new Map<Hex, T>()
  const remember = async (target: Hex, value: T) => {
    memory.set(target, value)
    if (store) await store.put(spec.key(target), encoder.encode(JSON.stringify(spec.encode(value))), { contentType: 'application/json' })
  }
  return {
    memory,
    remember,
    async resolve(targets: readonly Hex[]): Promise<Map<Hex, T>> {
      const out = new Map<Hex, T>()
      const misses: Hex[] = []
      await Promise.all(
        targets.map(async target => {
          if (memory.has(target)) return out.set(target, memory.get(target)!)
          const got = store && (await store.get(spec.key(target)))
          if (!got) return misses.push(target)
          const value = spec.decode(JSON.parse(decoder.decode(got.body)))
          memory.set(target, value)
          out.set(target, value)
        }),
      )
      if (misses.length === 0) return out
      if (rpc === null) {
        for (const target of misses) out.set(target, spec.unknown)
        return out
      }
      misses.sort()
      await Promise.all(
        (await callGetters(rpc, misses, spec.calls)).map(async ({ target, results, unsupported }) => {
          const value = spec.fromCalls(results)
          out.set(target, value)
          if (unsupported) memory.set(target, value)
          else await remember(target, value)
        }),
      )
      return out
    },
  }
}

/**
 * A PoolResolver over the store cache and the node (`cachedGetters`): a call the node answers
 * with an error (a revert) counts as no answer; a call that fails in transport fails the unit,
 * so an unreachable node never turns into cached nulls.
 */
export interface CachingPoolResolver extends PoolResolver {
  /** Records pools known from their verified creation. */
  add(created: ReadonlyMap<Hex, PoolInfo>): Promise<void>
}

export function rpcPoolResolver(
  rpc: RpcClient | null,
  store: ObjectStore | null,
  chain: { family: 'evm'; id: number },
): CachingPoolResolver {
  const getters = cachedGetters<keyof typeof POOL_CALLS, PoolInfo | null>(rpc, store, {
    calls: POOL_CALLS,
    fromCalls: poolInfoFromCalls,
    unknown: null,
    key: pool => poolCacheKey(chain, pool),
    encode: (info): CachedPool => ({
      info: info && { token0: info.token0, token1: info.token1, fee: info.fee === null ? null : String(info.fee) },
    }),
    decode: stored => {
      const { info } = stored as CachedPool
      return info && { token0: info.token0, token1: info.token1, fee: info.fee === null ? null : BigInt(info.fee) }
    },
  })
  return {
    async add(created) {
      await Promise.all([...created].filter(([pool]) => !getters.memory.has(pool)).map(([pool, info]) => getters.remember(pool, info)))
    },
    resolve: (_chainId, pools) => getters.resolve(pools),
  }
}

const NO_ANSWER: TokenCallResults = { symbol: null, name: null, decimals: null }

/**
 * A TokenResolver over the store cache and the node (`cachedGetters`): `symbol()`, `name()`,
 * `decimals()`, cached as they came. A revert is an answer (null, cached); a node without
 * `eth_call` or no node gives nulls, not cached.
 */
export function rpcTokenResolver(rpc: RpcClient | null, store: ObjectStore | null, chain: { family: 'evm'; id: number }): TokenResolver {
  const getters = cachedGetters<keyof typeof TOKEN_CALLS, TokenCallResults>(rpc, store, {
    calls: TOKEN_CALLS,
    fromCalls: results => results,
    unknown: NO_ANSWER,
    key: token => tokenCacheKey(chain, token),
    encode: results => results,
    decode: stored => stored as TokenCallResults,
  })
  return { resolve: (_chainId, tokens) => getters.resolve(tokens) }
}

/** The dex/tokens batch of a unit's decoded rows: each token they name, at the first block naming it. */
export async function tokensBatch(chainId: number, out: DexOutput, resolver: TokenResolver): Promise<ColumnBatch> {
  const first = tokensFirstSeen(out)
  const answers = await resolver.resolve(chainId, [...first.keys()].sort())
  const b = new BatchBuilder(dexTokens)
  for (const [token, block] of first)
    b.push(storedRow(dexTokens, { block_number: block, ...tokenRow(token, answers.get(token) ?? NO_ANSWER) }))
  return b.finish()
}

/**
 * Phase one over a step of verified blocks, keeping only what phase two reads: each
 * block's decoded events and the transactions they name (a unit's every log and
 * transaction would not fit in memory on a busy chain).
 */
export function scanStep(chainId: number, raws: readonly RawBlock[]): DexScan {
  const scan = scanBlocks(chainId, raws.map(dexBlockOf))
  for (const b of scan.blocks) {
    const used: DexTransaction[] = []
    for (const e of b.events) {
      const i = Number(e.log.transactionIndex)
      used[i] = b.block.transactions[i]
    }
    b.block = { ...b.block, logs: [], transactions: used }
  }
  return scan
}

/** Step scans in block order as one. */
export function mergeScans(chainId: number, scans: readonly DexScan[]): DexScan {
  return {
    chainId,
    blocks: scans.flatMap(s => s.blocks),
    created: new Map(scans.flatMap(s => [...s.created])),
  }
}

/**
 * Phase two over a unit's scan (its steps merged in block order) into the DEX batches.
 * Verified pool creations are cached like resolved pools, so a later unit's swaps of
 * them need no call. With `tokens`, also dex/tokens. `positions` gives the position state
 * before the unit (positions.ts), asked once the pools are resolved; the unit's changes to it
 * are returned.
 */
export async function decodeUnit(
  scan: DexScan,
  resolver: CachingPoolResolver,
  positions: PositionStateOf,
  tokens?: TokenResolver,
): Promise<{ batches: DexBatches; positionChanges: PositionChanges }> {
  const { chainId } = scan
  await resolver.add(scan.created)
  const pools = await resolver.resolve(chainId, poolsToResolve(scan))
  const out = decodeDex(scan, pools, await positions(positionKeys(scan)))
  const batches = dexBatches(out)
  if (tokens) batches[dexTokens.storage] = await tokensBatch(chainId, out, tokens)
  return { batches, positionChanges: out.positionChanges }
}

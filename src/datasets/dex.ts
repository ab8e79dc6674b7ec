/**
 * DEX datasets of EVM chains: Uniswap-v2/v3-style pools, swaps, liquidity events and v3
 * position NFTs, decoded at ingest from the logs (src/dex). Field names and meanings are
 * those of src/dex/rows.ts; kinds follow src/schema/kinds.ts: signed quantities (amounts,
 * ticks, liquidity deltas) and large unsigned ones that are read as numbers (v3 liquidity,
 * sqrt prices, token ids) are `int` (decimal text), `price` is exact decimal text.
 *
 * Every row carries the event's place (block, transaction, log index), the transaction's
 * `tx_from`/`tx_to` and `removed` (true only on the live stream's retractions).
 */
import type { DatasetDecl, FieldDecl, LookupDecl } from '../schema/dataset.ts'

/** Every protocol of src/dex/protocols.ts (a test keeps the two in step). */
export const DEX_PROTOCOLS = ['uniswap_v2', 'sushiswap_v2', 'pancakeswap_v2', 'uniswap_v3', 'pancakeswap_v3'] as const
const FAMILIES = ['v2', 'v3']

const head: readonly FieldDecl[] = [
  { name: 'chain', kind: 'u64int', virtual: 'chain' },
  { name: 'block_number', kind: 'u64hex' },
  { name: 'block_hash', kind: 'hash' },
  { name: 'block_timestamp', kind: 'u64int' },
  { name: 'transaction_index', kind: 'u64int' },
  { name: 'transaction_hash', kind: 'hash', bloom: true },
  { name: 'log_index', kind: 'u64hex' },
]

const tail: readonly FieldDecl[] = [
  { name: 'tx_from', kind: 'address', bloom: true, index: true },
  { name: 'tx_to', kind: 'address', nullable: true, bloom: true },
  { name: 'removed', kind: 'bool' },
]

/** What a pool event's row says about its pool (src/dex/rows.ts PoolColumns). */
const poolColumns: readonly FieldDecl[] = [
  { name: 'pool', kind: 'address', bloom: true, index: true },
  { name: 'protocol', kind: 'string', nullable: true, values: DEX_PROTOCOLS },
  { name: 'family', kind: 'string', values: FAMILIES },
  { name: 'factory', kind: 'address', nullable: true, bloom: true },
  { name: 'pool_verified', kind: 'bool' },
  { name: 'token0', kind: 'address', nullable: true, bloom: true, index: true },
  { name: 'token1', kind: 'address', nullable: true, bloom: true, index: true },
  { name: 'fee', kind: 'u64int', nullable: true },
]

const eventDataset = (name: string, orderBy: readonly string[], fields: readonly FieldDecl[], lookup?: LookupDecl): DatasetDecl => ({
  name: `dex/${name}`,
  family: 'evm',
  path: `dex/${name}`,
  storage: `dex_${name}`,
  rangeKey: 'block_number',
  orderBy,
  fields: [...head, ...fields, ...tail],
  ...(lookup ? { lookup } : {}),
})

export const dexPools = eventDataset(
  'pools',
  ['block_number', 'log_index'],
  [
    { name: 'factory', kind: 'address', bloom: true },
    { name: 'pool', kind: 'address', bloom: true, index: true },
    { name: 'protocol', kind: 'string', nullable: true, values: DEX_PROTOCOLS },
    { name: 'family', kind: 'string', values: FAMILIES },
    { name: 'token0', kind: 'address', bloom: true, index: true },
    { name: 'token1', kind: 'address', bloom: true, index: true },
    { name: 'fee', kind: 'u64int', nullable: true },
    { name: 'tick_spacing', kind: 'int', nullable: true },
    { name: 'pool_verified', kind: 'bool' },
  ],
)

export const dexSwaps = eventDataset(
  'swaps',
  ['block_number', 'log_index'],
  [
    ...poolColumns,
    { name: 'sender', kind: 'address', bloom: true },
    { name: 'recipient', kind: 'address', bloom: true },
    { name: 'amount0', kind: 'int' },
    { name: 'amount1', kind: 'int' },
    { name: 'amount0_in', kind: 'int', nullable: true },
    { name: 'amount1_in', kind: 'int', nullable: true },
    { name: 'amount0_out', kind: 'int', nullable: true },
    { name: 'amount1_out', kind: 'int', nullable: true },
    { name: 'sqrt_price_x96', kind: 'int', nullable: true },
    { name: 'liquidity', kind: 'int', nullable: true },
    { name: 'tick', kind: 'int', nullable: true },
    { name: 'price', kind: 'string', nullable: true },
    { name: 'token_bought_address', kind: 'address', nullable: true },
    { name: 'token_sold_address', kind: 'address', nullable: true },
    { name: 'token_bought_amount_raw', kind: 'int', nullable: true },
    { name: 'token_sold_amount_raw', kind: 'int', nullable: true },
    // One wallet's swaps: a few hundred over a chain's history, in nearly every row group of the
    // block-ordered partitions, so the index keeps them inline up to 256 a segment (BENCHMARKS.md run 6).
    { name: 'taker', kind: 'address', bloom: true, index: { inlineRows: 256, inlineBytes: 64 * 1024 } },
    { name: 'protocol_fees_token0', kind: 'int', nullable: true, extra: true },
    { name: 'protocol_fees_token1', kind: 'int', nullable: true, extra: true },
  ],
  // One pool's swaps, the commonest DEX question: a busy pool is in every page of the
  // block-ordered partitions, so its copy is read up to a quarter of a partition (a top
  // pool holds ~5-10% of a chain's swaps). 1,024 rows (~130 KB) per read; see BENCHMARKS.md.
  { column: 'pool', rowGroupSize: 1024, share: 1 / 4 },
)

export const dexLiquidity = eventDataset(
  'liquidity',
  ['block_number', 'log_index'],
  [
    ...poolColumns,
    { name: 'event', kind: 'string', values: ['mint', 'burn', 'collect'] },
    { name: 'owner', kind: 'address', nullable: true, bloom: true, index: true },
    { name: 'sender', kind: 'address', nullable: true, bloom: true },
    { name: 'recipient', kind: 'address', nullable: true, bloom: true },
    { name: 'tick_lower', kind: 'int', nullable: true },
    { name: 'tick_upper', kind: 'int', nullable: true },
    { name: 'liquidity', kind: 'int', nullable: true },
    { name: 'amount0', kind: 'int' },
    { name: 'amount1', kind: 'int' },
  ],
)

export const dexPositions = eventDataset(
  'positions',
  ['block_number', 'log_index'],
  [
    { name: 'position_manager', kind: 'address', bloom: true },
    { name: 'protocol', kind: 'string', values: DEX_PROTOCOLS },
    { name: 'token_id', kind: 'int', bloom: true },
    { name: 'event', kind: 'string', values: ['increase_liquidity', 'decrease_liquidity', 'collect', 'transfer'] },
    { name: 'pool', kind: 'address', nullable: true, bloom: true, index: true },
    { name: 'tick_lower', kind: 'int', nullable: true },
    { name: 'tick_upper', kind: 'int', nullable: true },
    { name: 'token0', kind: 'address', nullable: true, bloom: true, index: true },
    { name: 'token1', kind: 'address', nullable: true, bloom: true, index: true },
    { name: 'liquidity', kind: 'int' },
    { name: 'amount0', kind: 'int' },
    { name: 'amount1', kind: 'int' },
    { name: 'fees0', kind: 'int', nullable: true },
    { name: 'fees1', kind: 'int', nullable: true },
    { name: 'recipient', kind: 'address', nullable: true, bloom: true },
    { name: 'owner', kind: 'address', nullable: true, bloom: true, index: true },
    { name: 'previous_owner', kind: 'address', nullable: true, bloom: true },
    { name: 'pool_log_index', kind: 'u64hex', nullable: true },
  ],
)

/**
 * dex/tokens: a token's `symbol()`, `name()`, `decimals()` as its getters answer them at
 * ingest (null where a getter reverts or answers nothing decodable), one row per token per
 * ingest unit whose DEX rows name it, at the first block of the unit that does: rows are a
 * function of the unit alone, so parallel and rerun ingests write the same partitions.
 * Not on the live stream (the live window holds no token calls).
 */
export const dexTokens: DatasetDecl = {
  name: 'dex/tokens',
  family: 'evm',
  path: 'dex/tokens',
  storage: 'dex_tokens',
  rangeKey: 'block_number',
  orderBy: ['block_number', 'address'],
  fields: [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex' },
    { name: 'address', kind: 'address', bloom: true, index: true },
    { name: 'symbol', kind: 'string', nullable: true },
    { name: 'name', kind: 'string', nullable: true },
    { name: 'decimals', kind: 'u64int', nullable: true },
  ],
}

/** The DEX event datasets, filled by the EVM ingester from the logs it verified (and by live compaction). */
export const DEX_DATASETS: readonly DatasetDecl[] = [dexPools, dexSwaps, dexLiquidity, dexPositions]

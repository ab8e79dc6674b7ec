/**
 * The plain reference of the real-data end-to-end tests: the spec records of the
 * recorded mainnet blocks computed straight from their JSON-RPC JSON, and filters
 * applied to those records in plain JS. Written from the spec
 * (../shared/spec/service-spec.md) alone: nothing from src/ is used, so a bug in the
 * ingester, the schema or the encoders cannot hide in the expectation too.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sharedPath } from '../support/shared.ts'

/**
 * How a field reads in the spec's JSON:
 * - `int` a JSON number (indexes, timestamps, types, v);
 * - `u64` a minimal 0x-hex quantity that fits 64 bits (block numbers, gas, nonces);
 * - `u256` a minimal 0x-hex quantity that can pass 2^64 (wei amounts, difficulty, r, s);
 * - `pad` a quantity written as 32 bytes of hex (the spec's `value`);
 * - `hash`, `address` 32 and 20 bytes of lowercase hex; `bytes` any length of hex;
 * - `bool`; `string` text (`raw`, null in all cases seen); `json` a nested JSON value.
 */
export type SpecType = 'int' | 'u64' | 'u256' | 'pad' | 'hash' | 'address' | 'bytes' | 'bool' | 'string' | 'json'

/** One field of a spec record. */
export interface SpecField {
  name: string
  type: SpecType
  nullable?: boolean
  /** Not in the spec's record table: returned only when asked for with `fields=`. */
  extra?: boolean
}

/** A record as the API's JSON gives it. */
export type SpecRecord = Record<string, unknown>
/** Recorded JSON-RPC JSON, read as is. */
export type Json = any

/** The EVM endpoints (and datasets) under test. */
export type DatasetName = 'blocks' | 'transactions' | 'logs'

const f = (name: string, type: SpecType, more: Partial<SpecField> = {}): SpecField => ({ name, type, ...more })

/** The fields of each dataset: the spec's record tables in order, then the extra fields. */
export const SPEC_FIELDS: Record<DatasetName, readonly SpecField[]> = {
  blocks: [
    f('chain', 'int'),
    f('block_number', 'u64'),
    f('hash', 'hash'),
    f('parent_hash', 'hash'),
    f('uncles_hash', 'hash'),
    f('miner', 'address'),
    f('state_root', 'hash'),
    f('transactions_root', 'hash'),
    f('receipts_root', 'hash'),
    f('gas_used', 'u64'),
    f('gas_limit', 'u64'),
    f('base_fee_per_gas', 'u256', { nullable: true }),
    f('extra_data', 'bytes'),
    f('logs_bloom', 'bytes'),
    f('timestamp', 'int'),
    f('difficulty', 'u256'),
    f('total_difficulty', 'u256', { nullable: true }),
    f('size', 'u64'),
    f('mix_hash', 'hash'),
    f('nonce', 'bytes'),
    f('transaction_count', 'int', { extra: true }),
    f('withdrawals_root', 'hash', { nullable: true, extra: true }),
    f('withdrawals', 'json', { nullable: true, extra: true }),
    f('blob_gas_used', 'u64', { nullable: true, extra: true }),
    f('excess_blob_gas', 'u64', { nullable: true, extra: true }),
    f('parent_beacon_block_root', 'hash', { nullable: true, extra: true }),
    f('requests_hash', 'hash', { nullable: true, extra: true }),
  ],
  transactions: [
    f('chain', 'int'),
    f('block_number', 'u64'),
    f('block_hash', 'hash'),
    f('transaction_index', 'int'),
    f('hash', 'hash'),
    f('nonce', 'u64'),
    f('from', 'address'),
    f('to', 'address', { nullable: true }),
    f('value', 'pad'),
    f('gas_price', 'u256', { nullable: true }),
    f('gas', 'u64'),
    f('input', 'bytes'),
    f('v', 'int'),
    f('r', 'u256'),
    f('s', 'u256'),
    f('raw', 'string', { nullable: true }),
    f('type', 'int'),
    f('max_fee_per_gas', 'u256', { nullable: true }),
    f('max_priority_fee_per_gas', 'u256', { nullable: true }),
    f('block_timestamp', 'int', { extra: true }),
    f('chain_id', 'int', { nullable: true, extra: true }),
    f('y_parity', 'int', { nullable: true, extra: true }),
    f('access_list', 'json', { nullable: true, extra: true }),
    f('max_fee_per_blob_gas', 'u256', { nullable: true, extra: true }),
    f('blob_versioned_hashes', 'json', { nullable: true, extra: true }),
    f('authorization_list', 'json', { nullable: true, extra: true }),
    f('status', 'int', { nullable: true, extra: true }),
    f('gas_used', 'u64', { extra: true }),
    f('cumulative_gas_used', 'u64', { extra: true }),
    f('effective_gas_price', 'u256', { nullable: true, extra: true }),
    f('contract_address', 'address', { nullable: true, extra: true }),
    f('logs_count', 'int', { extra: true }),
  ],
  logs: [
    f('chain', 'int'),
    f('block_number', 'u64'),
    f('block_hash', 'hash'),
    f('transaction_index', 'int'),
    f('transaction_hash', 'hash'),
    f('log_index', 'u64'),
    f('address', 'address'),
    f('topic0', 'hash', { nullable: true }),
    f('topic1', 'hash', { nullable: true }),
    f('topic2', 'hash', { nullable: true }),
    f('topic3', 'hash', { nullable: true }),
    f('data', 'bytes'),
    f('removed', 'bool'),
    f('block_timestamp', 'int', { extra: true }),
  ],
}

/** The spec's record (no extra fields). */
export const defaultFields = (dataset: DatasetName): SpecField[] => SPEC_FIELDS[dataset].filter(x => !x.extra)

/** Types whose values have an order, so `__gte`/`__lte` apply (byte order for hashes, addresses and bytes: their lowercase hex sorts alike). */
export const ORDERED_TYPES: ReadonlySet<SpecType> = new Set(['int', 'u64', 'u256', 'pad', 'string', 'hash', 'address', 'bytes'])
/** Types that hold a number, sent as decimal or 0x-hex in a filter. */
export const NUMERIC_TYPES: ReadonlySet<SpecType> = new Set(['int', 'u64', 'u256', 'pad'])

/** Ethereum mainnet, chain 1 (`ETH`). */
export const CHAIN_ID = 1
/** Recorded mainnet blocks that have their receipts too. */
export const RECORDED_BLOCKS = [17000000, 18000000, 18500000]

const DATA = sharedPath('data', 'evm-mainnet')
const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8'))

/** `eth_getBlockByNumber(n, true)` and `eth_getBlockReceipts(n)` as recorded. */
export function recorded(n: number): { block: Json; receipts: Json[] } {
  return {
    block: readJson(join(DATA, 'blocks', `mainnet_block_${n}_full.json`)),
    receipts: readJson(join(DATA, 'receipts', `mainnet_receipts_${n}.json`)),
  }
}

const orNull = <T>(x: T | undefined | null, to: (x: T) => unknown): unknown => (x === undefined || x === null ? null : to(x))
const hex = (x: string) => x.toLowerCase()
const quantity = (x: string) => '0x' + BigInt(x).toString(16)
const padded = (x: string) => '0x' + BigInt(x).toString(16).padStart(64, '0')
const int = (x: string) => Number(BigInt(x))

function blockRecord(b: Json): SpecRecord {
  return {
    chain: CHAIN_ID,
    block_number: quantity(b.number),
    hash: hex(b.hash),
    parent_hash: hex(b.parentHash),
    uncles_hash: hex(b.sha3Uncles),
    miner: hex(b.miner),
    state_root: hex(b.stateRoot),
    transactions_root: hex(b.transactionsRoot),
    receipts_root: hex(b.receiptsRoot),
    gas_used: quantity(b.gasUsed),
    gas_limit: quantity(b.gasLimit),
    base_fee_per_gas: orNull(b.baseFeePerGas, quantity),
    extra_data: hex(b.extraData),
    logs_bloom: hex(b.logsBloom),
    timestamp: int(b.timestamp),
    difficulty: quantity(b.difficulty),
    total_difficulty: orNull(b.totalDifficulty, quantity),
    size: quantity(b.size),
    mix_hash: hex(b.mixHash),
    nonce: hex(b.nonce),
    transaction_count: b.transactions.length,
    withdrawals_root: orNull(b.withdrawalsRoot, hex),
    withdrawals: b.withdrawals ?? null,
    blob_gas_used: orNull(b.blobGasUsed, quantity),
    excess_blob_gas: orNull(b.excessBlobGas, quantity),
    parent_beacon_block_root: orNull(b.parentBeaconBlockRoot, hex),
    requests_hash: orNull(b.requestsHash, hex),
  }
}

/**
 * A legacy (type 0) transaction's chain id and signature parity come from v:
 * EIP-155 makes v = 35 + 2·chain_id + parity; before it v = 27 + parity and the
 * transaction names no chain. Typed transactions carry both fields themselves.
 */
function signatureOf(tx: Json): { chain_id: number | null; y_parity: number } {
  const v = int(tx.v ?? tx.yParity)
  if (int(tx.type ?? '0x0') !== 0) return { chain_id: int(tx.chainId), y_parity: int(tx.yParity ?? tx.v) }
  return v >= 35 ? { chain_id: Math.floor((v - 35) / 2), y_parity: (v - 35) % 2 } : { chain_id: null, y_parity: v - 27 }
}

function transactionRecord(b: Json, tx: Json, r: Json): SpecRecord {
  if (hex(r.transactionHash) !== hex(tx.hash)) throw new Error(`receipt ${r.transactionHash} is not that of transaction ${tx.hash}`)
  const type = int(tx.type ?? '0x0')
  return {
    chain: CHAIN_ID,
    block_number: quantity(b.number),
    block_hash: hex(b.hash),
    transaction_index: int(tx.transactionIndex),
    hash: hex(tx.hash),
    nonce: quantity(tx.nonce),
    from: hex(tx.from),
    to: orNull(tx.to, hex),
    value: padded(tx.value),
    gas_price: orNull(tx.gasPrice, quantity),
    gas: quantity(tx.gas),
    input: hex(tx.input),
    v: int(tx.v ?? tx.yParity),
    r: quantity(tx.r),
    s: quantity(tx.s),
    raw: null,
    type,
    max_fee_per_gas: orNull(tx.maxFeePerGas, quantity),
    max_priority_fee_per_gas: orNull(tx.maxPriorityFeePerGas, quantity),
    block_timestamp: int(b.timestamp),
    ...signatureOf(tx),
    access_list: type === 0 ? null : (tx.accessList ?? null),
    max_fee_per_blob_gas: orNull(tx.maxFeePerBlobGas, quantity),
    blob_versioned_hashes: tx.blobVersionedHashes ?? null,
    authorization_list: tx.authorizationList ?? null,
    status: orNull(r.status, int),
    gas_used: quantity(r.gasUsed),
    cumulative_gas_used: quantity(r.cumulativeGasUsed),
    effective_gas_price: orNull(r.effectiveGasPrice, quantity),
    contract_address: orNull(r.contractAddress, hex),
    logs_count: r.logs.length,
  }
}

function logRecord(b: Json, log: Json): SpecRecord {
  const topic = (i: number) => orNull(log.topics[i], hex)
  return {
    chain: CHAIN_ID,
    block_number: quantity(b.number),
    block_hash: hex(b.hash),
    transaction_index: int(log.transactionIndex),
    transaction_hash: hex(log.transactionHash),
    log_index: quantity(log.logIndex),
    address: hex(log.address),
    topic0: topic(0),
    topic1: topic(1),
    topic2: topic(2),
    topic3: topic(3),
    data: hex(log.data),
    removed: log.removed ?? false,
    block_timestamp: int(b.timestamp),
  }
}

const byNumbers = (keys: string[]) => (a: SpecRecord, b: SpecRecord) => {
  for (const k of keys) {
    const d = BigInt(a[k] as string | number) - BigInt(b[k] as string | number)
    if (d !== 0n) return d < 0n ? -1 : 1
  }
  return 0
}

/** Every record (extra fields included) of the three datasets, in the order the API returns them. */
export function referenceRecords(blocks: readonly number[] = RECORDED_BLOCKS): Record<DatasetName, SpecRecord[]> {
  const sources = blocks.map(recorded)
  return {
    blocks: sources.map(s => blockRecord(s.block)).sort(byNumbers(['block_number'])),
    transactions: sources
      .flatMap(({ block, receipts }) => block.transactions.map((tx: Json, i: number) => transactionRecord(block, tx, receipts[i])))
      .sort(byNumbers(['block_number', 'transaction_index'])),
    logs: sources
      .flatMap(({ block, receipts }) => receipts.flatMap((r: Json) => r.logs.map((l: Json) => logRecord(block, l))))
      .sort(byNumbers(['block_number', 'log_index'])),
  }
}

/** A record with only `fields`, in their order. */
export const project = (record: SpecRecord, fields: readonly SpecField[]): SpecRecord =>
  Object.fromEntries(fields.map(x => [x.name, record[x.name]]))

/** `%00` as it arrives after URL decoding. */
export const NUL = '\u0000'

/** A filter operator: `F=`, `F__in=`, `F__gte=`, `F__lte=`. */
export type Op = 'eq' | 'in' | 'gte' | 'lte'

/** A filter value (query-string text, `NUL` for null) as the value of a record it should match. */
function filterValue(type: SpecType, text: string): bigint | string | boolean | null {
  if (text === NUL) return null
  if (NUMERIC_TYPES.has(type)) return BigInt(text)
  if (type === 'bool') return text === 'true'
  if (type === 'string') return text
  return text.toLowerCase()
}

/** A record's value, comparable with `filterValue`. */
function recordValue(type: SpecType, v: unknown): bigint | string | boolean | null {
  if (v === null) return null
  if (NUMERIC_TYPES.has(type)) return BigInt(v as string | number)
  return v as string | boolean
}

/**
 * Whether a record passes `F<op>=texts`: equality and lists match null only to
 * `%00`; the order operators never match null.
 */
export function matches(field: SpecField, op: Op, texts: readonly string[], record: SpecRecord): boolean {
  const v = recordValue(field.type, record[field.name])
  const wanted = texts.map(t => filterValue(field.type, t))
  if (op === 'eq' || op === 'in') return wanted.some(w => w === v)
  if (v === null) return false
  const w = wanted[0]!
  return op === 'gte' ? v >= w : v <= w
}

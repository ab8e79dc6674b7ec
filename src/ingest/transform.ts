/**
 * Transform: verified JSON-RPC blocks and receipts into the stored columns of the
 * blocks, transactions and logs declarations (values per kind as documented in
 * schema/kinds.ts). Pure: no I/O, no checks beyond what filling a column needs.
 */
import { blocks, logs, transactions } from '../datasets/evm.ts'
import { digitsInto, hexDecoder, smallQuantity } from '../schema/hex.ts'
import { u256ToBytes } from '../schema/kinds.ts'
import { BatchBuilder } from './batch.ts'
import type { Hex, RawBlock, RpcBlock, RpcLog, RpcReceipt, RpcTransaction } from './evm-json.ts'
import type { ColumnBatch } from '../columns/batch.ts'

export interface EvmBatches {
  blocks: ColumnBatch
  transactions: ColumnBatch
  logs: ColumnBatch
}

type Maybe = Hex | null | undefined

/**
 * One BigInt per value below 4096 (indexes, counts, types, statuses, parities), shared by
 * every row that holds it: rows live until their unit is encoded, so each BigInt made per
 * row is one more object for every garbage collection until then.
 */
const SMALL = Array.from({ length: 4096 }, (_, i) => BigInt(i))
const small = (n: number): bigint => (n < 4096 ? SMALL[n] : BigInt(n))

/**
 * Arrays for the rows' byte values, carved out of shared slabs: a unit's rows hold millions of
 * values until the unit is encoded, and a view of a slab is one object where an array of its own
 * is two (and, past 64 bytes, a backing store of its own for the collector to track). Nothing
 * writes into a value once made, and a slab lives as long as any value cut from it.
 */
const SLAB = 1 << 20
let slab = new Uint8Array(SLAB)
let slabAt = 0
function slabBytes(n: number): Uint8Array {
  if (n > SLAB >> 4) return new Uint8Array(n)
  if (slabAt + n > SLAB) {
    slab = new Uint8Array(SLAB)
    slabAt = 0
  }
  const out = slab.subarray(slabAt, slabAt + n)
  slabAt += n
  return out
}

const bin: (hex: Hex) => Uint8Array = hexDecoder(slabBytes)

/** A quantity as u64: from the shared small values for up to three digits, else BigInt (which also refuses what is not a number). */
function u64(hex: Hex): bigint {
  const v = hex.length <= 5 ? smallQuantity(hex) : -1
  return v >= 0 ? SMALL[v] : BigInt(hex)
}
/** A 256-bit quantity's 32 stored bytes, read from its hex digits (u256ToBytes(BigInt(hex)) without the BigInt arithmetic). */
export function u256(hex: Hex): Uint8Array {
  if (hex.length < 3 || hex.charCodeAt(0) !== 48 || (hex.charCodeAt(1) | 0x20) !== 120) return u256ToBytes(BigInt(hex))
  let start = 2
  while (start < hex.length && hex.charCodeAt(start) === 48) start++
  const digits = hex.length - start
  if (digits > 64) throw new RangeError(`quantity wider than 256 bits: ${hex}`)
  const out = slabBytes(32)
  digitsInto(hex, start, out, 32 - ((digits + 1) >> 1))
  return out
}
const orNull = <T>(value: Maybe, f: (hex: Hex) => T): T | null => (value === null || value === undefined ? null : f(value))

function required(value: Maybe, what: string): Hex {
  if (value === null || value === undefined) throw new Error(`${what} is missing from the node's response`)
  return value
}

/** Chain id and y-parity of a legacy signature, from v (EIP-155: v = 35 + 2·chainId + parity; before: 27 + parity). */
export function legacySignature(v: bigint): { chainId: bigint | null; yParity: bigint | null } {
  if (v === 27n || v === 28n) return { chainId: null, yParity: v - 27n }
  if (v >= 35n) return { chainId: (v - 35n) / 2n, yParity: (v - 35n) % 2n }
  return { chainId: null, yParity: null }
}

const json = (value: unknown): string => JSON.stringify(value)

/** Bytes of a hash or address in hex: `bin`, or a cache of it (`hexInterner`). */
type Bin = (hex: Hex) => Uint8Array

/**
 * `bin` with one array per distinct text, for the hashes and addresses that repeat
 * across rows (the block hash in every transaction and log, a transaction's hash in
 * each of its logs, hot contracts and topics): decoded once a step. Rows share the
 * arrays, which nothing writes into (packing copies their bytes).
 */
export function hexInterner(): Bin {
  const seen = new Map<string, Uint8Array>()
  return hex => {
    let bytes = seen.get(hex)
    if (bytes === undefined) seen.set(hex, (bytes = bin(hex)))
    return bytes
  }
}

/** The block row. */
export function blockRow(b: RpcBlock, key: Bin = bin) {
  const n = Number(u64(b.number))
  return {
    block_number: u64(b.number),
    hash: key(b.hash),
    parent_hash: bin(b.parentHash),
    uncles_hash: bin(b.sha3Uncles),
    miner: key(b.miner),
    state_root: bin(b.stateRoot),
    transactions_root: bin(b.transactionsRoot),
    receipts_root: bin(b.receiptsRoot),
    gas_used: u64(b.gasUsed),
    gas_limit: u64(b.gasLimit),
    base_fee_per_gas: orNull(b.baseFeePerGas, u256),
    extra_data: bin(b.extraData),
    logs_bloom: bin(b.logsBloom),
    timestamp: u64(b.timestamp),
    difficulty: u256(b.difficulty),
    total_difficulty: orNull(b.totalDifficulty, u256),
    size: u64(required(b.size, `size of block ${n}`)),
    mix_hash: bin(b.mixHash),
    nonce: bin(b.nonce),
    transaction_count: small(b.transactions.length),
    withdrawals_root: orNull(b.withdrawalsRoot, bin),
    withdrawals: b.withdrawals
      ? json(b.withdrawals.map(w => ({ index: w.index, validatorIndex: w.validatorIndex, address: w.address, amount: w.amount })))
      : null,
    blob_gas_used: orNull(b.blobGasUsed, u64),
    excess_blob_gas: orNull(b.excessBlobGas, u64),
    parent_beacon_block_root: orNull(b.parentBeaconBlockRoot, bin),
    requests_hash: orNull(b.requestsHash, bin),
  }
}

/** What every transaction and log row of a block repeats: parsed and decoded once per block. */
interface BlockKeys {
  number: bigint
  hash: Uint8Array
  timestamp: bigint
}

const blockKeys = (b: RpcBlock, key: Bin): BlockKeys => ({ number: u64(b.number), hash: key(b.hash), timestamp: u64(b.timestamp) })

/** The transaction row: the transaction, its receipt, and the block's number, hash and timestamp. */
export function transactionRow(
  b: RpcBlock,
  tx: RpcTransaction,
  r: RpcReceipt,
  index: number,
  key: Bin = bin,
  block: BlockKeys = blockKeys(b, key),
) {
  const type = u64(tx.type ?? '0x0')
  const v = u64(required(tx.v ?? tx.yParity, `v of transaction ${tx.hash}`))
  const legacy = type === 0n ? legacySignature(v) : null
  return {
    block_number: block.number,
    block_hash: block.hash,
    transaction_index: small(index),
    hash: key(tx.hash),
    nonce: u64(tx.nonce),
    from: key(tx.from),
    to: orNull(tx.to, key),
    value: u256(tx.value),
    gas_price: orNull(tx.gasPrice ?? r.effectiveGasPrice, u256),
    gas: u64(tx.gas),
    input: bin(tx.input),
    v,
    r: u256(tx.r),
    s: u256(tx.s),
    type,
    max_fee_per_gas: orNull(tx.maxFeePerGas, u256),
    max_priority_fee_per_gas: orNull(tx.maxPriorityFeePerGas, u256),
    block_timestamp: block.timestamp,
    chain_id: legacy ? legacy.chainId : orNull(tx.chainId, u64),
    y_parity: legacy ? legacy.yParity : tx.yParity ? u64(tx.yParity) : v,
    access_list: legacy ? null : json((tx.accessList ?? []).map(a => ({ address: a.address, storageKeys: a.storageKeys }))),
    max_fee_per_blob_gas: orNull(tx.maxFeePerBlobGas, u256),
    blob_versioned_hashes: tx.blobVersionedHashes ? json(tx.blobVersionedHashes) : null,
    authorization_list: tx.authorizationList
      ? json(
          tx.authorizationList.map(a => ({ chainId: a.chainId, address: a.address, nonce: a.nonce, yParity: a.yParity, r: a.r, s: a.s })),
        )
      : null,
    status: orNull(r.status, u64),
    gas_used: u64(r.gasUsed),
    cumulative_gas_used: u64(r.cumulativeGasUsed),
    effective_gas_price: orNull(r.effectiveGasPrice, u256),
    contract_address: orNull(r.contractAddress, key),
    logs_count: small(r.logs.length),
  }
}

/** The log row, topics split into topic0..topic3 (null where absent). */
export function logRow(b: RpcBlock, log: RpcLog, key: Bin = bin, block: BlockKeys = blockKeys(b, key)) {
  const topics = log.topics
  return {
    block_number: block.number,
    block_hash: block.hash,
    transaction_index: u64(log.transactionIndex),
    transaction_hash: key(log.transactionHash),
    log_index: u64(log.logIndex),
    address: key(log.address),
    topic0: orNull(topics[0], key),
    topic1: orNull(topics[1], key),
    topic2: orNull(topics[2], key),
    topic3: orNull(topics[3], key),
    data: bin(log.data),
    removed: log.removed ?? false,
    block_timestamp: block.timestamp,
  }
}

/** Column batches of all three EVM datasets for verified blocks, keyed by storage name, sorted. */
export function transformBlocks(raws: readonly RawBlock[], key: Bin = hexInterner()): EvmBatches {
  const out = { blocks: new BatchBuilder(blocks), transactions: new BatchBuilder(transactions), logs: new BatchBuilder(logs) }
  for (const { block, receipts } of raws) {
    out.blocks.push(blockRow(block, key))
    const k = blockKeys(block, key)
    block.transactions.forEach((tx, i) => {
      const receipt = receipts[i]
      out.transactions.push(transactionRow(block, tx, receipt, i, key, k))
      for (const log of receipt.logs) out.logs.push(logRow(block, log, key, k))
    })
  }
  return { blocks: out.blocks.finish(), transactions: out.transactions.finish(), logs: out.logs.finish() }
}

/**
 * EVM datasets. Default fields follow the spec's record tables in order; `extra`
 * fields are what users of peer services ask for, returned only with `fields=`.
 */
import type { DatasetDecl, IndexDecl } from '../schema/dataset.ts'

/**
 * Inline-row caps of the columns looked up by a wallet, a contract or an event: a value's rows
 * are kept in the index while it has at most 1,024 of them in a segment (256 KiB of slice).
 * With the index's defaults (64 rows, 16 KiB: ~60 logs of the bench shape) a value of 64–265
 * logs spread over all history opened every partition holding it: 135–529 reads and 24–89
 * rounds at the full-history shape (BENCHMARKS.md run H8). A transaction hash is one row.
 */
const BY_VALUE: IndexDecl = { inlineRows: 1024, inlineBytes: 256 * 1024 }

export const blocks: DatasetDecl = {
  name: 'blocks',
  family: 'evm',
  path: 'blocks',
  storage: 'blocks',
  rangeKey: 'block_number',
  orderBy: ['block_number'],
  fields: [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex' },
    { name: 'hash', kind: 'hash', bloom: true, index: true },
    { name: 'parent_hash', kind: 'hash' },
    { name: 'uncles_hash', kind: 'hash' },
    { name: 'miner', kind: 'address', bloom: true },
    { name: 'state_root', kind: 'hash' },
    { name: 'transactions_root', kind: 'hash' },
    { name: 'receipts_root', kind: 'hash' },
    { name: 'gas_used', kind: 'u64hex' },
    { name: 'gas_limit', kind: 'u64hex' },
    { name: 'base_fee_per_gas', kind: 'u256hex', nullable: true },
    { name: 'extra_data', kind: 'bytes' },
    { name: 'logs_bloom', kind: 'bytes' },
    { name: 'timestamp', kind: 'u64int' },
    { name: 'difficulty', kind: 'u256hex' },
    { name: 'total_difficulty', kind: 'u256hex', nullable: true },
    { name: 'size', kind: 'u64hex' },
    { name: 'mix_hash', kind: 'hash' },
    { name: 'nonce', kind: 'bytes' },
    { name: 'transaction_count', kind: 'u64int', extra: true },
    { name: 'withdrawals_root', kind: 'hash', nullable: true, extra: true },
    { name: 'withdrawals', kind: 'json', nullable: true, extra: true },
    { name: 'blob_gas_used', kind: 'u64hex', nullable: true, extra: true },
    { name: 'excess_blob_gas', kind: 'u64hex', nullable: true, extra: true },
    { name: 'parent_beacon_block_root', kind: 'hash', nullable: true, extra: true },
    { name: 'requests_hash', kind: 'hash', nullable: true, extra: true },
  ],
}

export const transactions: DatasetDecl = {
  name: 'transactions',
  family: 'evm',
  path: 'transactions',
  storage: 'transactions',
  rangeKey: 'block_number',
  orderBy: ['block_number', 'transaction_index'],
  // One wallet's transactions: a page per column per row group in the block-ordered partition,
  // one ranged read in this copy. 1,024 rows (~400 KB) per read: smaller groups cost more to
  // write (~7–10 ms a group) and a larger footer for little less read; see BENCHMARKS.md.
  lookup: { column: 'from', rowGroupSize: 1024 },
  fields: [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex' },
    { name: 'block_hash', kind: 'hash' },
    { name: 'transaction_index', kind: 'u64int' },
    { name: 'hash', kind: 'hash', bloom: true, index: true },
    { name: 'nonce', kind: 'u64hex' },
    { name: 'from', kind: 'address', bloom: true, index: BY_VALUE },
    { name: 'to', kind: 'address', nullable: true, bloom: true, index: BY_VALUE },
    { name: 'value', kind: 'u256pad' },
    { name: 'gas_price', kind: 'u256hex', nullable: true },
    { name: 'gas', kind: 'u64hex' },
    { name: 'input', kind: 'bytes' },
    { name: 'v', kind: 'u64int' },
    { name: 'r', kind: 'u256hex' },
    { name: 's', kind: 'u256hex' },
    { name: 'raw', kind: 'string', nullable: true, virtual: 'null' },
    // Legacy, EIP-2930, EIP-1559, EIP-4844, EIP-7702.
    { name: 'type', kind: 'u64int', values: ['0', '1', '2', '3', '4'] },
    { name: 'max_fee_per_gas', kind: 'u256hex', nullable: true },
    { name: 'max_priority_fee_per_gas', kind: 'u256hex', nullable: true },
    { name: 'block_timestamp', kind: 'u64int', extra: true },
    { name: 'chain_id', kind: 'u64int', nullable: true, extra: true },
    { name: 'y_parity', kind: 'u64int', nullable: true, extra: true },
    { name: 'access_list', kind: 'json', nullable: true, extra: true },
    { name: 'max_fee_per_blob_gas', kind: 'u256hex', nullable: true, extra: true },
    { name: 'blob_versioned_hashes', kind: 'json', nullable: true, extra: true },
    { name: 'authorization_list', kind: 'json', nullable: true, extra: true },
    { name: 'status', kind: 'u64int', nullable: true, extra: true },
    { name: 'gas_used', kind: 'u64hex', extra: true },
    { name: 'cumulative_gas_used', kind: 'u64hex', extra: true },
    { name: 'effective_gas_price', kind: 'u256hex', nullable: true, extra: true },
    { name: 'contract_address', kind: 'address', nullable: true, extra: true },
    { name: 'logs_count', kind: 'u64int', extra: true },
  ],
}

export const logs: DatasetDecl = {
  name: 'logs',
  family: 'evm',
  path: 'logs',
  storage: 'logs',
  rangeKey: 'block_number',
  orderBy: ['block_number', 'log_index'],
  // A contract's logs: the most asked-for lookup. 1,024 rows (~80 KB) per read; see BENCHMARKS.md.
  lookup: { column: 'address', rowGroupSize: 1024 },
  fields: [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex' },
    { name: 'block_hash', kind: 'hash' },
    { name: 'transaction_index', kind: 'u64int' },
    { name: 'transaction_hash', kind: 'hash', bloom: true },
    { name: 'log_index', kind: 'u64hex' },
    { name: 'address', kind: 'address', bloom: true, index: BY_VALUE },
    { name: 'topic0', kind: 'hash', nullable: true, bloom: true, index: BY_VALUE },
    { name: 'topic1', kind: 'hash', nullable: true, bloom: true, index: BY_VALUE },
    { name: 'topic2', kind: 'hash', nullable: true, bloom: true, index: BY_VALUE },
    { name: 'topic3', kind: 'hash', nullable: true, bloom: true, index: BY_VALUE },
    { name: 'data', kind: 'bytes' },
    { name: 'removed', kind: 'bool' },
    { name: 'block_timestamp', kind: 'u64int', extra: true },
  ],
}

export const EVM_DATASETS: readonly DatasetDecl[] = [blocks, transactions, logs]

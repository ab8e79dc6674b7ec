/**
 * Move-VM datasets. Both read the same partitions (storage `move_transactions`):
 * `transactions` shows quantities as integers, `transactions/decoded` as hex, with
 * the decoded entry function and the per-kind fields of the spec's decoded record.
 * A version is both the block number and the transaction index.
 *
 * Every stored column appears in both declarations (as an `extra` field where the
 * spec's record does not list it), so whichever of the two the ingester writes
 * with, the partition has every column; a test checks the two stored schemas are
 * the same. Values per kind (`src/move/tx-kind.ts`): fields of another kind are
 * null, except `block_metadata_failed_proposer_indices`, which is `[]`.
 *
 * `block_hash` and `parent_transaction_hash` are nullable: the REST API gives
 * neither, so they are carried from the block's metadata transaction and the
 * previous version, and are unknown for the first versions of a range whose
 * predecessors were not read.
 */
import type { DatasetDecl, FieldDecl } from '../schema/dataset.ts'

/** Columns of the partitions that no spec record lists: returned with `fields=`. */
/** `kind`: the REST `type` in the spec's style (src/move/tx-kind.ts); a type the API adds later is added here. */
export const MOVE_KINDS = [
  'UserTransaction',
  'BlockMetadataTransaction',
  'StateCheckpointTransaction',
  'BlockEpilogueTransaction',
  'GenesisTransaction',
  'ValidatorTransaction',
] as const

/** `status`: `Success` or the failed execution status (src/move/tx-kind.ts). */
export const MOVE_STATUSES = ['Success', 'OutOfGas', 'MoveAbort', 'ExecutionFailure', 'MiscellaneousError'] as const

const EXTRAS: readonly FieldDecl[] = [
  { name: 'entry_function_id', kind: 'string', nullable: true, bloom: true, index: true, extra: true },
  { name: 'success', kind: 'bool', extra: true },
  { name: 'vm_status', kind: 'string', extra: true },
  { name: 'events_count', kind: 'u64int', extra: true },
  { name: 'events', kind: 'json', extra: true, inline: false },
  { name: 'changes', kind: 'json', extra: true, inline: false },
  { name: 'fee_payer', kind: 'address32', nullable: true, bloom: true, extra: true },
  { name: 'replay_protection_nonce', kind: 'u64int', nullable: true, extra: true },
  { name: 'hash_verified', kind: 'bool', extra: true },
]

/** The decoded record's per-kind fields; `extra` in the plain dataset. */
function decodedOnly(extra: boolean, quantity: 'u64int' | 'u64hex'): FieldDecl[] {
  const x = extra ? { extra: true } : {}
  return [
    { name: 'state_checkpoint_hash', kind: 'hash', nullable: true, ...x },
    { name: 'genesis_direct', kind: 'json', nullable: true, ...x },
    { name: 'genesis_script', kind: 'json', nullable: true, ...x },
    { name: 'genesis_execute_as', kind: 'address32', nullable: true, ...x },
    { name: 'block_metadata_id', kind: 'hash', nullable: true, ...x },
    { name: 'block_metadata_epoch', kind: quantity, nullable: true, ...x },
    { name: 'block_metadata_round', kind: quantity, nullable: true, ...x },
    { name: 'block_metadata_proposer', kind: 'address32', nullable: true, ...x },
    { name: 'block_metadata_previous_block_votes_bitvec', kind: 'bytes', nullable: true, ...x },
    { name: 'block_metadata_randomness', kind: 'bytes', nullable: true, ...x },
    { name: 'state_checkpoint_transaction_hash', kind: 'hash', nullable: true, ...x },
    { name: 'validator_transaction', kind: 'json', nullable: true, ...x },
    { name: 'block_id', kind: 'hash', nullable: true, ...x },
    { name: 'block_gas_limit_reached', kind: 'bool', nullable: true, ...x },
    { name: 'block_output_limit_reached', kind: 'bool', nullable: true, ...x },
    { name: 'block_effective_block_gas_units', kind: quantity, nullable: true, ...x },
    { name: 'block_approx_output_size', kind: quantity, nullable: true, ...x },
    { name: 'script_decoded', kind: 'json', nullable: true, ...x },
    { name: 'multisig_entry_function_decoded', kind: 'json', nullable: true, ...x },
    { name: 'entry_function_decoded', kind: 'json', nullable: true, ...x },
  ]
}

/**
 * The spec's Move transaction record, in its order. The decoded record is the same but for
 * `quantity` fields (integers in one, 0x-hex in the other) and `tx_chain_id`, named `chain_id`.
 */
function record(quantity: 'u64int' | 'u64hex'): FieldDecl[] {
  return [
    { name: 'chain', kind: 'u64int', virtual: 'chain' },
    { name: 'block_number', kind: 'u64hex', column: 'version' },
    { name: 'block_hash', kind: 'hash', nullable: true },
    { name: 'transaction_index', kind: quantity, column: 'version' },
    { name: 'hash', kind: 'hash', bloom: true, index: true },
    { name: 'version', kind: quantity },
    { name: 'parent_transaction_hash', kind: 'hash', nullable: true },
    { name: 'timestamp', kind: 'u64int' },
    { name: 'kind', kind: 'string', values: MOVE_KINDS },
    { name: 'gas_used', kind: quantity },
    { name: 'status', kind: 'string', values: MOVE_STATUSES },
    { name: 'event_root_hash', kind: 'hash' },
    { name: 'state_change_hash', kind: 'hash' },
    { name: 'accumulator_root_hash', kind: 'hash' },
    { name: 'authenticator', kind: 'bytes', nullable: true },
    { name: 'sender', kind: 'address32', nullable: true, bloom: true, index: true },
    { name: 'sequence_number', kind: quantity, nullable: true },
    { name: 'max_gas_amount', kind: quantity, nullable: true },
    { name: 'gas_unit_price', kind: quantity, nullable: true },
    { name: 'expiration_timestamp_secs', kind: quantity, nullable: true },
    quantity === 'u64int'
      ? { name: 'tx_chain_id', kind: 'u64int', nullable: true }
      : { name: 'chain_id', kind: 'u64int', nullable: true, column: 'tx_chain_id' },
    { name: 'block_metadata_failed_proposer_indices', kind: 'json' },
    { name: 'block_metadata_timestamp_usecs', kind: 'u64int', nullable: true },
    { name: 'payload', kind: 'json', nullable: true },
  ]
}

/** `GET /v1/api/transactions` on a Move host: the spec's Move transaction record. */
export const moveTransactions: DatasetDecl = {
  name: 'transactions',
  family: 'move',
  path: 'transactions',
  storage: 'move_transactions',
  rangeKey: 'version',
  orderBy: ['version'],
  fields: [...record('u64int'), ...decodedOnly(true, 'u64int'), ...EXTRAS],
}

/** `GET /v1/api/transactions/decoded`: the spec's decoded record, over the same partitions. */
export const moveDecodedTransactions: DatasetDecl = {
  ...moveTransactions,
  name: 'transactions_decoded',
  path: 'transactions/decoded',
  fields: [
    ...record('u64hex'),
    { name: 'state_cemetery_hash', kind: 'hash', nullable: true, virtual: 'null' },
    ...decodedOnly(false, 'u64hex'),
    ...EXTRAS,
  ],
}

/** Both Move datasets; the ingester writes partitions with either (their stored schemas are equal). */
export const MOVE_DATASETS: readonly DatasetDecl[] = [moveTransactions, moveDecodedTransactions]

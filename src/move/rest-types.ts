/**
 * The fullnode REST API's JSON (`GET /v1/transactions`), as far as the ingester
 * reads it: u64 values are decimal strings, bytes and hashes 0x-hex, addresses the
 * trimmed hex literal (`0x1`), timestamps microseconds.
 */
import type { AbiModule } from './abi-cache.ts'

export interface RestLedgerInfo {
  chain_id: number
  epoch: string
  ledger_version: string
  oldest_ledger_version: string
  ledger_timestamp: string
  node_role: string
  oldest_block_height: string
  block_height: string
  git_hash?: string | null
}

export interface RestEvent {
  guid: { creation_number: string; account_address: string }
  sequence_number: string
  type: string
  data: unknown
}

/** Fields every committed transaction carries. */
export interface RestCommon {
  version: string
  hash: string
  state_change_hash: string
  event_root_hash: string
  state_checkpoint_hash: string | null
  gas_used: string
  success: boolean
  vm_status: string
  accumulator_root_hash: string
  changes: unknown[]
  events?: RestEvent[]
  timestamp?: string
}

export interface RestEntryFunctionPayload {
  type: 'entry_function_payload'
  function: string
  type_arguments: string[]
  arguments: unknown[]
}

export interface RestScriptPayload {
  type: 'script_payload'
  code: { bytecode: string; abi?: { params: string[]; generic_type_params?: unknown[] } }
  type_arguments: string[]
  arguments: unknown[]
}

export interface RestMultisigPayload {
  type: 'multisig_payload'
  multisig_address: string
  transaction_payload?: RestEntryFunctionPayload | null
}

export interface RestModuleBundlePayload {
  type: 'module_bundle_payload'
  modules: { bytecode: string }[]
}

export type RestPayload = RestEntryFunctionPayload | RestScriptPayload | RestMultisigPayload | RestModuleBundlePayload

/** A signature as the API prints it; the `type` field names the variant. */
export type RestSignature = { type: string } & Record<string, unknown>

export interface RestUserTransaction extends RestCommon {
  type: 'user_transaction'
  sender: string
  sequence_number: string
  max_gas_amount: string
  gas_unit_price: string
  expiration_timestamp_secs: string
  payload: RestPayload
  signature?: RestSignature | null
  replay_protection_nonce?: string | null
  timestamp: string
}

export interface RestBlockMetadataTransaction extends RestCommon {
  type: 'block_metadata_transaction'
  id: string
  epoch: string
  round: string
  proposer: string
  previous_block_votes_bitvec: number[]
  failed_proposer_indices: number[]
  timestamp: string
  block_metadata_extension?: { type: string; randomness?: string | null } | null
}

export interface RestStateCheckpointTransaction extends RestCommon {
  type: 'state_checkpoint_transaction'
  timestamp: string
}

export interface RestBlockEpilogueTransaction extends RestCommon {
  type: 'block_epilogue_transaction'
  timestamp: string
  block_end_info?: {
    block_gas_limit_reached: boolean
    block_output_limit_reached: boolean
    block_effective_block_gas_units: number | string
    block_approx_output_size: number | string
  } | null
}

export interface RestGenesisTransaction extends RestCommon {
  type: 'genesis_transaction'
  payload: {
    type: 'write_set_payload'
    write_set:
      | { type: 'direct_write_set'; changes: unknown[]; events: unknown[] }
      | { type: 'script_write_set'; execute_as: string; script: unknown }
  }
}

export interface RestValidatorTransaction extends RestCommon {
  type: 'validator_transaction'
  timestamp: string
  validator_transaction_type?: string
  [body: string]: unknown
}

/** A committed transaction (pending transactions are never ingested). */
export type RestTransaction =
  | RestUserTransaction
  | RestBlockMetadataTransaction
  | RestStateCheckpointTransaction
  | RestBlockEpilogueTransaction
  | RestGenesisTransaction
  | RestValidatorTransaction

/** `GET /v1/accounts/{address}/module/{name}`. */
export interface RestModule {
  bytecode: string
  abi?: AbiModule
}

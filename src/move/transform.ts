/**
 * The transform half of the Move ingester: REST transactions (already fetched,
 * with their ABIs prefetched) to one columnar batch of the `move_transactions`
 * storage, plus a report. Pure: no I/O, deterministic for its inputs.
 *
 * Every user transaction is rebuilt to BCS and its hash recomputed (`bcs.ts`);
 * one whose rebuild hashes to something else is refused (left out and listed with
 * its version), one that cannot be rebuilt is kept with `hash_verified` false.
 * System transactions are checked where the REST JSON holds their whole body.
 */
import { storedFields } from '../parquet/write.ts'
import { columnOf } from '../schema/dataset.ts'
import { hexToBytes } from '../schema/hex.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { moveTransactions } from '../datasets/move.ts'
import { splitFunctionId, type AbiSource } from './abi-cache.ts'
import { verifyUserTransaction } from './bcs.ts'
import { decodeEntryFunction, decodeScript, type DecodeResult } from './decode.ts'
import { feePayerOf } from './authenticator.ts'
import { blockEpilogueHash, blockMetadataHashes, stateCheckpointHash } from './hash.ts'
import { kindOf, statusOf } from './tx-kind.ts'
import { longAddress } from './type-tags.ts'
import type { ColumnBatch, ColumnValues } from '../columns/batch.ts'
import type {
  RestBlockEpilogueTransaction,
  RestBlockMetadataTransaction,
  RestGenesisTransaction,
  RestTransaction,
  RestUserTransaction,
} from './rest-types.ts'

/** What one batch hands to the next: the last transaction's version, hash and block. */
export interface MoveCarry {
  version: bigint
  hash: string
  /** Id of the block the transaction is in; null when unknown or when the block ended with it. */
  blockId: string | null
}

export interface MoveTransformContext {
  abis: AbiSource
  /** Chain id the user transactions were signed for (from the node's ledger info). */
  chainId: number
  /** The transaction just before this batch (the previous batch's `last`), for block and parent hashes. */
  prev?: MoveCarry | null
  /** Argument encodings tried per transaction without a fitting ABI (default 1024). */
  inferLimit?: number
}

export interface MoveTransformReport {
  /** Rows written per `kind`. */
  byKind: Record<string, number>
  /** Rows whose hash was recomputed and equals the node's. */
  verified: number
  /** Rows kept without a hash check, and why (genesis and validator transactions cannot be checked). */
  unverified: { version: string; kind: string; reason: string }[]
  /** Calls (entry function, script, multisig) that could not be decoded, and why. */
  undecoded: { version: string; reason: string }[]
  /** Transactions left out: their rebuilt BCS hashes to something else than their hash. */
  refused: { version: string; reason: string }[]
}

export interface MoveRows {
  batch: ColumnBatch
  report: MoveTransformReport
  /** Carry for the next batch; null when the batch is empty. */
  last: MoveCarry | null
}

type Row = Record<string, StoredValue | null>

const COLUMNS = storedFields(moveTransactions).map(columnOf)
const COMMON_KEYS = new Set([
  'version',
  'hash',
  'state_change_hash',
  'event_root_hash',
  'state_checkpoint_hash',
  'gas_used',
  'success',
  'vm_status',
  'accumulator_root_hash',
  'changes',
  'events',
  'timestamp',
  'type',
])

const bytes = (hex: string | null | undefined) => (hex ? hexToBytes(hex) : null)
const address = (a: string | null | undefined) => (a ? hexToBytes(longAddress(a)) : null)
const u64 = (v: string | number | null | undefined) => (v === null || v === undefined ? null : BigInt(v))

/** A 32-byte hash field every committed transaction has; throws naming the field. */
function hash32(tx: RestTransaction, key: 'hash' | 'state_change_hash' | 'event_root_hash' | 'accumulator_root_hash'): Uint8Array {
  const v = tx[key]
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(v)) throw new Error(`${key} missing or not a 32-byte hash: ${JSON.stringify(v)}`)
  return hexToBytes(v)
}

/** Columns every committed transaction fills. */
function commonRow(tx: RestTransaction, blockId: string | null, parent: string | null): Row {
  const row: Row = Object.fromEntries(COLUMNS.map(c => [c, null]))
  Object.assign(row, {
    version: BigInt(tx.version),
    block_hash: bytes(blockId),
    hash: hash32(tx, 'hash'),
    parent_transaction_hash: bytes(parent),
    timestamp: BigInt(tx.timestamp ?? 0),
    kind: kindOf(tx.type),
    gas_used: BigInt(tx.gas_used),
    status: statusOf(tx.success, tx.vm_status),
    event_root_hash: hash32(tx, 'event_root_hash'),
    state_change_hash: hash32(tx, 'state_change_hash'),
    accumulator_root_hash: hash32(tx, 'accumulator_root_hash'),
    block_metadata_failed_proposer_indices: '[]',
    success: tx.success,
    vm_status: tx.vm_status,
    events_count: BigInt(tx.events?.length ?? 0),
    events: JSON.stringify(tx.events ?? []),
    changes: JSON.stringify(tx.changes ?? []),
    state_checkpoint_hash: bytes(tx.state_checkpoint_hash),
    hash_verified: false,
  })
  return row
}

/** `0x1::coin::transfer`: the function id with its address trimmed, as users filter on it. */
function functionIdOf(id: string): string {
  const { address, module, name } = splitFunctionId(id)
  return `${address}::${module}::${name}`
}

const decodedJson = (r: DecodeResult) => (r.ok ? JSON.stringify(r.decoded) : null)

/** Fills a user transaction's columns; false when it is refused. */
function userRow(tx: RestUserTransaction, row: Row, ctx: MoveTransformContext, report: MoveTransformReport): boolean {
  const check = verifyUserTransaction(tx, ctx)
  if (!check.ok && check.mismatch) {
    report.refused.push({ version: tx.version, reason: check.reason })
    return false
  }
  const p = tx.payload
  const call = p.type === 'entry_function_payload' ? p : p.type === 'multisig_payload' ? (p.transaction_payload ?? null) : null
  Object.assign(row, {
    sender: address(tx.sender),
    sequence_number: u64(tx.sequence_number),
    max_gas_amount: u64(tx.max_gas_amount),
    gas_unit_price: u64(tx.gas_unit_price),
    expiration_timestamp_secs: u64(tx.expiration_timestamp_secs),
    tx_chain_id: BigInt(ctx.chainId),
    fee_payer: address(feePayerOf(tx.signature)),
    replay_protection_nonce: u64(tx.replay_protection_nonce),
    entry_function_id: call ? functionIdOf(call.function) : null,
  })
  if (!check.ok) {
    row.authenticator = check.partial.authenticator
    row.payload = check.partial.payload && JSON.stringify(check.partial.payload)
    report.unverified.push({ version: tx.version, kind: row.kind as string, reason: check.reason })
    if (p.type !== 'module_bundle_payload' && !(p.type === 'multisig_payload' && !call)) {
      report.undecoded.push({ version: tx.version, reason: 'arguments not rebuilt' })
    }
    return true
  }
  const raw = check.raw
  Object.assign(row, { authenticator: raw.authenticator, payload: JSON.stringify(raw.payload), hash_verified: true })
  report.verified++
  const typeArgs = raw.typeArgs
  let decoded: DecodeResult | null = null
  if (call) {
    const stored = raw.payload.entry_function ?? raw.payload.multisig?.entry_function
    decoded = decodeEntryFunction(call, typeArgs, (stored?.args ?? []).map(hexToBytes), ctx.abis)
    row[p.type === 'multisig_payload' ? 'multisig_entry_function_decoded' : 'entry_function_decoded'] = decodedJson(decoded)
  } else if (p.type === 'script_payload') {
    decoded = decodeScript(p, typeArgs, (raw.payload.script?.args ?? []).map(hexToBytes), ctx.abis)
    row.script_decoded = decodedJson(decoded)
  }
  if (decoded && !decoded.ok) report.undecoded.push({ version: tx.version, reason: decoded.reason })
  return true
}

function blockMetadataRow(tx: RestBlockMetadataTransaction, row: Row): string | null {
  Object.assign(row, {
    block_metadata_id: hexToBytes(tx.id),
    block_metadata_epoch: u64(tx.epoch),
    block_metadata_round: u64(tx.round),
    block_metadata_proposer: address(tx.proposer),
    block_metadata_previous_block_votes_bitvec: Uint8Array.from(tx.previous_block_votes_bitvec),
    block_metadata_failed_proposer_indices: JSON.stringify(tx.failed_proposer_indices),
    block_metadata_timestamp_usecs: u64(tx.timestamp),
    block_metadata_randomness: bytes(tx.block_metadata_extension?.randomness),
  })
  return blockMetadataHashes(tx).includes(tx.hash.toLowerCase())
    ? null
    : 'neither BlockMetadata nor BlockMetadataExt without randomness gives the hash'
}

function blockEpilogueRow(tx: RestBlockEpilogueTransaction, row: Row, blockId: string | null): string | null {
  const info = tx.block_end_info
  Object.assign(row, {
    block_id: bytes(blockId),
    block_gas_limit_reached: info?.block_gas_limit_reached ?? null,
    block_output_limit_reached: info?.block_output_limit_reached ?? null,
    block_effective_block_gas_units: u64(info?.block_effective_block_gas_units),
    block_approx_output_size: u64(info?.block_approx_output_size),
  })
  if (!blockId) return 'block id unknown'
  if (!info) return 'no block_end_info'
  return blockEpilogueHash(blockId, info) === tx.hash.toLowerCase()
    ? null
    : 'BlockEpilogue V0 does not give the hash (V1 carries a fee distribution the API does not show)'
}

function genesisRow(tx: RestGenesisTransaction, row: Row): string {
  const ws = tx.payload?.write_set
  if (ws?.type === 'direct_write_set') row.genesis_direct = JSON.stringify({ changes: ws.changes, events: ws.events })
  if (ws?.type === 'script_write_set') {
    row.genesis_script = JSON.stringify(ws.script)
    row.genesis_execute_as = address(ws.execute_as)
  }
  return 'genesis write sets are not rebuilt'
}

/** Fields of a transaction beyond the common ones: a validator transaction's body. */
function bodyOf(tx: RestTransaction): string {
  return JSON.stringify(Object.fromEntries(Object.entries(tx).filter(([k]) => !COMMON_KEYS.has(k))))
}

/** One row, or null when the transaction is refused (recorded in the report). */
function transactionRow(
  tx: RestTransaction,
  blockId: string | null,
  parent: string | null,
  ctx: MoveTransformContext,
  report: MoveTransformReport,
): Row | null {
  const row = commonRow(tx, blockId, parent)
  let unverified: string | null = null
  switch (tx.type) {
    case 'user_transaction':
      return userRow(tx, row, ctx, report) ? row : null
    case 'block_metadata_transaction':
      unverified = blockMetadataRow(tx, row)
      break
    case 'state_checkpoint_transaction':
      row.state_checkpoint_transaction_hash = bytes(blockId)
      unverified = !blockId
        ? 'block id unknown'
        : stateCheckpointHash(blockId) === tx.hash.toLowerCase()
          ? null
          : 'StateCheckpoint(block id) does not give the hash'
      break
    case 'block_epilogue_transaction':
      unverified = blockEpilogueRow(tx, row, blockId)
      break
    case 'genesis_transaction':
      unverified = genesisRow(tx, row)
      break
    case 'validator_transaction':
      row.validator_transaction = bodyOf(tx)
      unverified = 'validator transactions are not rebuilt'
      break
    default:
      unverified = `unknown transaction type ${(tx as { type: string }).type}`
  }
  if (unverified === null) {
    row.hash_verified = true
    report.verified++
  } else report.unverified.push({ version: tx.version, kind: row.kind as string, reason: `version ${tx.version}: ${unverified}` })
  return row
}

/**
 * Turns REST transactions into one `move_transactions` batch, sorted by version.
 * `ctx.abis` must already hold the ABIs `missingModules` lists (see `prefetchAbis`).
 */
export function toMoveRows(restTxs: readonly RestTransaction[], ctx: MoveTransformContext): MoveRows {
  const report: MoveTransformReport = { byKind: {}, verified: 0, unverified: [], undecoded: [], refused: [] }
  const txs: RestTransaction[] = []
  for (const tx of restTxs) {
    if (typeof tx.version === 'string' && /^\d+$/.test(tx.version)) txs.push(tx)
    else report.refused.push({ version: String(tx.version), reason: `transaction ${tx.hash} has no version (pending?)` })
  }
  txs.sort((a, b) => (BigInt(a.version) < BigInt(b.version) ? -1 : BigInt(a.version) > BigInt(b.version) ? 1 : 0))
  const rows: Row[] = []
  let carry = ctx.prev ?? null
  for (const tx of txs) {
    const version = BigInt(tx.version)
    if (carry && version <= carry.version) {
      report.refused.push({ version: tx.version, reason: `version ${tx.version}: duplicate or out of order` })
      continue
    }
    const contiguous = carry !== null && version === carry.version + 1n
    let blockId = contiguous ? carry!.blockId : null
    if (tx.type === 'block_metadata_transaction') blockId = tx.id
    let row: Row | null
    try {
      row = transactionRow(tx, blockId, contiguous ? carry!.hash : null, ctx, report)
    } catch (e) {
      // A transaction missing what every committed one has is the node's fault: never stored half-read.
      report.refused.push({ version: tx.version, reason: `version ${tx.version}: ${e instanceof Error ? e.message : String(e)}` })
      row = null
    }
    const ends = tx.type === 'state_checkpoint_transaction' || tx.type === 'block_epilogue_transaction'
    carry = { version, hash: tx.hash, blockId: ends ? null : blockId }
    if (!row) continue
    rows.push(row)
    report.byKind[row.kind as string] = (report.byKind[row.kind as string] ?? 0) + 1
  }
  const columns: Record<string, ColumnValues> = {}
  for (const c of COLUMNS) columns[c] = rows.map(r => r[c])
  return { batch: { length: rows.length, columns }, report, last: carry }
}

/**
 * Transaction hashes: sha3-256(sha3-256("APTOS::Transaction") ‖ BCS(Transaction)),
 * where BCS(Transaction) starts with the variant index of the transaction enum.
 * Recomputing them proves that what was rebuilt from the REST JSON is byte for
 * byte what the chain committed.
 */
import { AccountAddress, hashValues, Serializer } from '@aptos-labs/ts-sdk'
import { bytesToHex, hexToBytes } from '../schema/hex.ts'
import type { RestBlockMetadataTransaction } from './rest-types.ts'

/** Variant indexes of the `Transaction` enum (aptos-core `types/src/transaction/mod.rs`). */
export const TRANSACTION_VARIANT = {
  UserTransaction: 0,
  GenesisTransaction: 1,
  BlockMetadata: 2,
  StateCheckpoint: 3,
  ValidatorTransaction: 4,
  BlockMetadataExt: 5,
  BlockEpilogue: 6,
} as const

const PREFIX = hashValues(['APTOS::Transaction'])

/** Hash of a transaction given its variant and the BCS of its body. */
export function transactionHash(variant: number, body: Uint8Array): string {
  return bytesToHex(hashValues([PREFIX, new Uint8Array([variant]), body]))
}

/** Hash of a user transaction from the BCS of its `SignedTransaction`, given whole or in consecutive parts. */
export function userTransactionHash(...signedTransaction: Uint8Array[]): string {
  return bytesToHex(hashValues([PREFIX, new Uint8Array([TRANSACTION_VARIANT.UserTransaction]), ...signedTransaction]))
}

/** The fields a block metadata transaction's hash covers, as the REST API gives them. */
export type BlockMetadataFields = Pick<
  RestBlockMetadataTransaction,
  'id' | 'epoch' | 'round' | 'proposer' | 'previous_block_votes_bitvec' | 'failed_proposer_indices' | 'timestamp'
>

function blockMetadataBody(b: BlockMetadataFields, s: Serializer): void {
  s.serializeFixedBytes(hexToBytes(b.id))
  s.serializeU64(BigInt(b.epoch))
  s.serializeU64(BigInt(b.round))
  AccountAddress.fromString(b.proposer, { maxMissingChars: 63 }).serialize(s)
  s.serializeBytes(Uint8Array.from(b.previous_block_votes_bitvec))
  s.serializeU32AsUleb128(b.failed_proposer_indices.length)
  for (const i of b.failed_proposer_indices) s.serializeU32(i)
  s.serializeU64(BigInt(b.timestamp))
}

/**
 * Hashes a block metadata transaction can have: `BlockMetadata`, and
 * `BlockMetadataExt::V1` without randomness (the REST API does not show randomness,
 * so a block with randomness cannot be checked).
 */
export function blockMetadataHashes(b: BlockMetadataFields): string[] {
  const plain = new Serializer()
  blockMetadataBody(b, plain)
  const ext = new Serializer()
  ext.serializeU32AsUleb128(1)
  blockMetadataBody(b, ext)
  ext.serializeU8(0)
  return [
    transactionHash(TRANSACTION_VARIANT.BlockMetadata, plain.toUint8Array()),
    transactionHash(TRANSACTION_VARIANT.BlockMetadataExt, ext.toUint8Array()),
  ]
}

/** Hash of a state checkpoint transaction, whose body is the id of its block. */
export const stateCheckpointHash = (blockId: string): string => transactionHash(TRANSACTION_VARIANT.StateCheckpoint, hexToBytes(blockId))

export interface BlockEndInfo {
  block_gas_limit_reached: boolean
  block_output_limit_reached: boolean
  block_effective_block_gas_units: number | string
  block_approx_output_size: number | string
}

/** Hash of a `BlockEpilogue::V0` transaction (V1 adds a fee distribution the REST API does not show). */
export function blockEpilogueHash(blockId: string, info: BlockEndInfo): string {
  const s = new Serializer()
  s.serializeU32AsUleb128(0)
  s.serializeFixedBytes(hexToBytes(blockId))
  s.serializeU32AsUleb128(0)
  s.serializeBool(info.block_gas_limit_reached)
  s.serializeBool(info.block_output_limit_reached)
  s.serializeU64(BigInt(info.block_effective_block_gas_units))
  s.serializeU64(BigInt(info.block_approx_output_size))
  return transactionHash(TRANSACTION_VARIANT.BlockEpilogue, s.toUint8Array())
}

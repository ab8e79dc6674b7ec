import { describe, expect, it } from 'vitest'
import { blockEpilogueHash, blockMetadataHashes, stateCheckpointHash, transactionHash, userTransactionHash } from '../../src/move/hash.ts'
import { hexToBytes } from '../../src/schema/hex.ts'
import type { RestBlockEpilogueTransaction, RestBlockMetadataTransaction } from '../../src/move/rest-types.ts'
import { restTransactions, sample, systemVectors, userVectors } from './data.ts'

const hex = (h: string) => (h.startsWith('0x') ? h : '0x' + h).toLowerCase()

describe('transaction hashes', () => {
  it('hashes the BCS of all 48 verified user transactions to their on-chain hashes', () => {
    const vectors = userVectors()
    expect(vectors).toHaveLength(48)
    for (const v of vectors) expect(userTransactionHash(hexToBytes(v.signed_transaction_bcs_hex))).toBe(hex(v.hash))
  })

  it('hashes the verified system transactions by their variant byte', () => {
    for (const v of systemVectors()) {
      const bcs = hexToBytes(v.transaction_bcs_hex)
      expect(transactionHash(bcs[0], bcs.subarray(1))).toBe(hex(v.hash))
    }
  })

  it('hashes a state checkpoint from its block id', () => {
    const checkpoint = systemVectors().find(v => v.kind === 'StateCheckpoint')!
    const blockId = '0x' + checkpoint.transaction_bcs_hex.slice(2)
    expect(stateCheckpointHash(blockId)).toBe(hex(checkpoint.hash))
  })

  it('rebuilds block metadata hashes from the REST JSON', () => {
    const recorded = [...restTransactions('mainnet'), ...restTransactions('testnet')].filter(
      (t): t is RestBlockMetadataTransaction => t.type === 'block_metadata_transaction',
    )
    expect(recorded.map(t => t.version)).toEqual(['513424821', '1', '2'])
    for (const t of recorded) expect(blockMetadataHashes(t)).toContain(t.hash)
  })

  it('rebuilds a block epilogue hash from its block id and end info', () => {
    const bm = sample('transactions_test__TestTransaction_BlockMetadataTransaction.json') as RestBlockMetadataTransaction
    const epilogue = sample('transactions_test__TestTransaction_BlockEpilogueTransaction.json') as RestBlockEpilogueTransaction
    expect(blockEpilogueHash(bm.id, epilogue.block_end_info!)).toBe(epilogue.hash)
    expect(blockEpilogueHash(bm.id, { ...epilogue.block_end_info!, block_approx_output_size: 3591 })).not.toBe(epilogue.hash)
  })
})

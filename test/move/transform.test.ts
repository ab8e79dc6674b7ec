import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import { toMoveRows } from '../../src/move/transform.ts'
import { writePartition } from '../../src/parquet/write.ts'
import { moveDecodedTransactions, moveTransactions } from '../../src/datasets/move.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import type { RestTransaction, RestUserTransaction } from '../../src/move/rest-types.ts'
import { CHAIN_IDS, DATA, NETWORKS, recordedAbis, restTransactions, sample } from './data.ts'

const abis = recordedAbis()
const KIND: Record<string, string> = {
  user_transaction: 'UserTransaction',
  block_metadata_transaction: 'BlockMetadataTransaction',
  state_checkpoint_transaction: 'StateCheckpointTransaction',
  validator_transaction: 'ValidatorTransaction',
}

/** The recorded failures: a Move abort, and a miscellaneous error (`CONSTRAINT_NOT_SATISFIED`). */
const FAILED: Record<string, string> = { '407418623': 'MoveAbort', '769222973': 'MiscellaneousError' }

type Parquet = Record<string, unknown>

async function readBack(bytes: Uint8Array): Promise<Parquet[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer
  return (await parquetReadObjects({ file, utf8: true })) as Parquet[]
}

const long = (a: string) => '0x' + a.slice(2).padStart(64, '0')

describe('toMoveRows on every recorded network', () => {
  for (const network of NETWORKS) {
    it(`transforms, writes and reads back every ${network} transaction`, async () => {
      const txs = restTransactions(network)
      const { batch, report } = toMoveRows(txs, { abis, chainId: CHAIN_IDS[network] })
      const manifest = JSON.parse(fs.readFileSync(path.join(DATA, 'rest', network, 'manifest.json'), 'utf8')) as {
        by_type: Record<string, number>
      }
      expect(report.refused).toEqual([])
      expect(report.byKind).toEqual(Object.fromEntries(Object.entries(manifest.by_type).map(([t, n]) => [KIND[t], n])))
      expect(batch.length).toBe(txs.length)
      // Every user transaction's hash is recomputed; only system transactions without their whole body stay unchecked.
      expect(report.unverified.every(u => u.kind !== 'UserTransaction')).toBe(true)

      const range = { from: Number(txs[0].version), to: Number(txs[txs.length - 1].version) }
      for (const dataset of [moveTransactions, moveDecodedTransactions]) {
        const written = writePartition(dataset, batch, range, { rowGroupSize: 10 })
        const rows = await readBack(written.bytes)
        expect(rows.map(r => String(r.version))).toEqual(txs.map(t => t.version))
        expect(rows.map(r => bytesToHex(r.hash as Uint8Array))).toEqual(txs.map(t => t.hash))
        expect(rows.map(r => r.kind)).toEqual(txs.map(t => KIND[t.type]))
        expect(rows.map(r => String(r.gas_used))).toEqual(txs.map(t => t.gas_used))
        rows.forEach((r, i) => {
          const tx = txs[i]
          expect(r.timestamp).toBe(BigInt(tx.timestamp ?? 0))
          expect(r.success).toBe(tx.success)
          expect(JSON.parse(r.events as string)).toEqual(tx.events ?? [])
          if (tx.type === 'user_transaction') {
            expect(bytesToHex(r.sender as Uint8Array)).toBe(long(tx.sender))
            expect(r.sequence_number).toBe(BigInt(tx.sequence_number))
            expect(r.tx_chain_id).toBe(BigInt(CHAIN_IDS[network]))
            expect(r.hash_verified).toBe(true)
            const payload = JSON.parse(r.payload as string)
            expect(payload.kind).toBe(tx.payload.type === 'script_payload' ? 'Script' : 'EntryFunction')
            if (tx.payload.type === 'entry_function_payload') {
              expect(payload.entry_function.args).toHaveLength(tx.payload.arguments.length)
              expect(r.entry_function_id).toBe(tx.payload.function)
            }
            expect(r.status).toBe(FAILED[tx.version] ?? 'Success')
          } else {
            expect(r.sender).toBeNull()
            expect(r.payload).toBeNull()
            expect(r.authenticator).toBeNull()
          }
          if (tx.type === 'block_metadata_transaction') {
            expect(bytesToHex(r.block_metadata_id as Uint8Array)).toBe(tx.id)
            expect(JSON.parse(r.block_metadata_failed_proposer_indices as string)).toEqual(tx.failed_proposer_indices)
            expect(r.block_metadata_timestamp_usecs).toBe(BigInt(tx.timestamp))
          } else {
            expect(r.block_metadata_failed_proposer_indices).toBe('[]')
            expect(r.block_metadata_timestamp_usecs).toBeNull()
          }
        })
      }
    })
  }

  it('decodes entry functions whose module ABI is recorded to the node JSON of their arguments', () => {
    const txs = restTransactions('mainnet')
    const { batch } = toMoveRows(txs, { abis, chainId: 1 })
    const decoded = batch.columns.entry_function_decoded
    txs.forEach((tx, i) => {
      if (tx.type !== 'user_transaction' || tx.payload.type !== 'entry_function_payload') return
      const [address, module] = tx.payload.function.split('::')
      if (!abis.module(address, module)) {
        expect(decoded[i]).toBeNull()
        return
      }
      const d = JSON.parse(decoded[i] as string)
      expect(d.args.map((a: string) => JSON.parse(a))).toEqual(tx.payload.arguments)
      expect(d.type_args).toHaveLength(tx.payload.type_arguments.length)
      expect(d.args_abi).toHaveLength(tx.payload.arguments.length)
    })
  })
})

describe('toMoveRows across versions', () => {
  const testnet = restTransactions('testnet')

  it('carries the block id and parent hash along contiguous versions and checks the state checkpoint with it', () => {
    const { batch, report } = toMoveRows(testnet.slice(0, 3), { abis, chainId: 2 })
    const [bm1, bm2, sc3] = testnet as [RestTransaction & { id: string }, RestTransaction & { id: string }, RestTransaction]
    const hex = (c: string, i: number) => (batch.columns[c][i] ? bytesToHex(batch.columns[c][i] as Uint8Array) : null)
    expect(hex('block_hash', 0)).toBe(bm1.id)
    expect(hex('parent_transaction_hash', 0)).toBeNull()
    expect(hex('parent_transaction_hash', 1)).toBe(bm1.hash)
    expect(hex('block_hash', 2)).toBe(bm2.id)
    expect(hex('parent_transaction_hash', 2)).toBe(bm2.hash)
    expect(hex('state_checkpoint_transaction_hash', 2)).toBe(bm2.id)
    expect(batch.columns.hash_verified).toEqual([true, true, true])
    expect(report.verified).toBe(3)
    expect(sc3.version).toBe('3')
  })

  it('gives the same rows in two batches joined by the carry as in one', () => {
    const whole = toMoveRows(testnet.slice(0, 3), { abis, chainId: 2 })
    const first = toMoveRows(testnet.slice(0, 1), { abis, chainId: 2 })
    const second = toMoveRows(testnet.slice(1, 3), { abis, chainId: 2, prev: first.last })
    for (const c of Object.keys(whole.batch.columns)) {
      expect([...first.batch.columns[c], ...second.batch.columns[c]]).toEqual(whole.batch.columns[c])
    }
    expect(second.last).toEqual(whole.last)
  })

  it('leaves block and parent hashes null where the previous version was not read', () => {
    const { batch } = toMoveRows(restTransactions('mainnet'), { abis, chainId: 1 })
    const firstUser = 0
    expect(batch.columns.parent_transaction_hash[firstUser]).toBeNull()
    expect(batch.columns.block_hash.filter(v => v !== null)).toHaveLength(1)
  })

  it('fills the genesis, block metadata and block epilogue fields of a local network', async () => {
    const txs = ['GenesisTransaction', 'BlockMetadataTransaction', 'BlockEpilogueTransaction'].map(k =>
      sample(`transactions_test__TestTransaction_${k}.json`),
    )
    const { batch, report } = toMoveRows(txs, { abis, chainId: 4 })
    expect(report.byKind).toEqual({ GenesisTransaction: 1, BlockMetadataTransaction: 1, BlockEpilogueTransaction: 1 })
    const rows = await readBack(writePartition(moveDecodedTransactions, batch, { from: 0, to: 2 }).bytes)
    const [genesis, bm, epilogue] = rows
    const gws = (txs[0] as { payload: { write_set: { changes: unknown[] } } }).payload.write_set
    expect(JSON.parse(genesis.genesis_direct as string).changes).toEqual(gws.changes)
    expect(genesis.timestamp).toBe(0n)
    expect(bytesToHex(epilogue.block_id as Uint8Array)).toBe((txs[1] as { id: string }).id)
    expect(epilogue.block_approx_output_size).toBe(3590n)
    expect(epilogue.block_gas_limit_reached).toBe(false)
    // The epilogue's hash is recomputed from its block id; the local network's block metadata has randomness the API hides.
    expect([genesis.hash_verified, bm.hash_verified, epilogue.hash_verified]).toEqual([false, false, true])
    expect(report.unverified.map(u => u.version)).toEqual(['0', '1'])
  })
})

describe('toMoveRows refusals', () => {
  it('refuses a tampered user transaction, naming its version, and keeps the others', () => {
    const txs = restTransactions('mainnet').slice(0, 4)
    const target = txs[1] as RestUserTransaction
    const tampered = { ...target, max_gas_amount: String(BigInt(target.max_gas_amount) + 1n) }
    const { batch, report } = toMoveRows([txs[0], tampered, txs[2], txs[3]], { abis, chainId: 1 })
    expect(report.refused).toHaveLength(1)
    expect(report.refused[0].version).toBe(target.version)
    expect(report.refused[0].reason).toContain(`version ${target.version}`)
    expect(report.refused[0].reason).toMatch(/hash mismatch/)
    expect(batch.length).toBe(3)
    expect(batch.columns.version).toEqual([txs[0], txs[2], txs[3]].map(t => BigInt(t.version)))
  })

  it('keeps tampered arguments that no ABI describes as unverified, without argument bytes', () => {
    const tx = restTransactions('mainnet').find(t => t.version === '2386133936') as RestUserTransaction
    const payload = tx.payload as { arguments: unknown[] }
    const tampered = { ...tx, payload: { ...tx.payload, arguments: [payload.arguments[0], '3000000001'] } } as RestUserTransaction
    const { report, batch } = toMoveRows([tampered], { abis, chainId: 1 })
    expect(report.refused).toEqual([])
    expect(report.unverified.map(u => u.version)).toEqual(['2386133936'])
    expect(batch.columns.hash_verified).toEqual([false])
    expect(JSON.parse(batch.columns.payload[0] as string).entry_function.args).toBeNull()
    expect(batch.columns.authenticator[0]).toBeInstanceOf(Uint8Array)
  })

  it('refuses a transaction missing a field every committed one has, instead of throwing', () => {
    const { report, batch } = toMoveRows([sample('3121410_dataCreate.json')], { abis, chainId: 1 })
    expect(batch.length).toBe(0)
    expect(report.refused).toEqual([{ version: '3121410', reason: expect.stringMatching(/^version 3121410: state_change_hash missing/) }])
  })

  it('refuses a repeated version', () => {
    const tx = restTransactions('devnet')[0]
    const { report, batch } = toMoveRows([tx, tx], { abis, chainId: 163 })
    expect(batch.length).toBe(1)
    expect(report.refused.map(r => r.version)).toEqual([tx.version])
  })
})

import { describe, expect, it } from 'vitest'
import { parquetReadObjects } from 'hyparquet'
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { storedFields, writePartition } from '../../src/parquet/write.ts'
import { columnOf, type DatasetDecl } from '../../src/schema/dataset.ts'
import { legacySignature, transformBlocks, u256 } from '../../src/ingest/transform.ts'
import { u256ToBytes } from '../../src/schema/kinds.ts'
import { expectedRows, recordedBlock, recordedReceipts, view, WITH_RECEIPTS, type Json } from './fixtures.ts'
import type { ColumnBatch } from '../../src/columns/batch.ts'

async function roundTrip(dataset: DatasetDecl, batch: ColumnBatch, from: number, to: number) {
  const { bytes } = writePartition(dataset, batch, { from, to })
  const rows = await parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer,
    utf8: false,
  })
  return rows.map(view)
}

/** Receipts made up by the test for blocks recorded without them (fields the transform copies, not checks). */
function madeUpReceipts(block: Json): Json[] {
  let cumulative = 0n
  return block.transactions
    .map((tx: Json, i: number) => {
      const gasUsed = 21000n + BigInt(i)
      cumulative += gasUsed
      return {
        transactionHash: tx.hash,
        transactionIndex: tx.transactionIndex,
        status: i % 5 === 0 ? '0x0' : '0x1',
        gasUsed: '0x' + gasUsed.toString(16),
        cumulativeGasUsed: '0x' + cumulative.toString(16),
        effectiveGasPrice: tx.gasPrice,
        contractAddress: tx.to ? null : '0x' + (i + 1).toString(16).padStart(40, '0'),
        logsBloom: '0x' + '00'.repeat(256),
        logs:
          i % 7 === 0
            ? []
            : [
                {
                  address: tx.to ?? tx.from,
                  topics: [tx.hash],
                  data: '0x',
                  blockHash: block.hash,
                  blockNumber: block.number,
                  transactionHash: tx.hash,
                  transactionIndex: tx.transactionIndex,
                  logIndex: '0x0',
                  removed: false,
                },
              ],
      }
    })
    .map((r: Json, i: number, all: Json[]) => {
      // Log indexes run through the block.
      const before = all.slice(0, i).reduce((n, x) => n + x.logs.length, 0)
      r.logs.forEach((l: Json, k: number) => (l.logIndex = '0x' + (before + k).toString(16)))
      return r
    })
}

describe('transformBlocks', () => {
  it('fills every stored column of the three datasets with the source values (recorded mainnet)', async () => {
    const raws = WITH_RECEIPTS.map(n => ({ block: recordedBlock(n), receipts: recordedReceipts(n) }))
    const out = transformBlocks(raws)
    const expected = expectedRows(raws)
    for (const [decl, batch, want] of [
      [blocks, out.blocks, expected.blocks],
      [transactions, out.transactions, expected.transactions],
      [logs, out.logs, expected.logs],
    ] as const) {
      expect(Object.keys(batch.columns).sort()).toEqual(storedFields(decl).map(columnOf).sort())
      expect(Object.keys(want[0]).sort()).toEqual(storedFields(decl).map(columnOf).sort())
      const got = await roundTrip(decl, batch, 17000000, 18500000)
      expect(got.length).toBe(want.length)
      got.forEach((row, i) => expect(row, `${decl.name} row ${i}`).toEqual(want[i]))
    }
  })

  it('handles transaction types 1, 3 and 4 and blob and authorization fields (recorded blocks, made-up receipts)', async () => {
    const raws = [19900000, 24476000, 24476009].map(n => {
      const block = recordedBlock(n)
      return { block, receipts: madeUpReceipts(block) }
    })
    const out = transformBlocks(raws)
    const expected = expectedRows(raws)
    const got = await roundTrip(transactions, out.transactions, 19900000, 24476009)
    expect(got).toEqual(expected.transactions)
    const types = new Set(got.map(r => r.type))
    expect(types).toEqual(new Set([0n, 1n, 2n, 3n, 4n]))
    const blob = got.find(r => r.type === 3n)!
    expect((blob.blob_versioned_hashes as string[]).length).toBeGreaterThan(0)
    expect(blob.max_fee_per_blob_gas).not.toBeNull()
    const setCode = got.find(r => r.type === 4n)!
    expect((setCode.authorization_list as Json[])[0]).toHaveProperty('address')
    expect(got.find(r => r.type === 1n)!.access_list).toBeInstanceOf(Array)
    const blockRows = await roundTrip(blocks, out.blocks, 19900000, 24476009)
    expect(blockRows).toEqual(expected.blocks)
    expect(blockRows.map(b => b.requests_hash === null)).toEqual([true, false, false])
    expect(blockRows.every(b => b.blob_gas_used !== null && b.parent_beacon_block_root !== null)).toBe(true)
    expect(await roundTrip(logs, out.logs, 19900000, 24476009)).toEqual(expected.logs)
  })

  it('stores total_difficulty where the node sends it and null where it does not', async () => {
    const withTd = recordedBlock(14151203)
    const without = recordedBlock(18000000)
    expect(withTd.totalDifficulty).toBeDefined()
    expect(without.totalDifficulty).toBeUndefined()
    const out = transformBlocks([
      { block: withTd, receipts: madeUpReceipts(withTd) },
      { block: without, receipts: recordedReceipts(18000000) },
    ])
    const rows = await roundTrip(blocks, out.blocks, 14151203, 18000000)
    expect(BigInt(rows[0].total_difficulty as string)).toBe(BigInt(withTd.totalDifficulty))
    expect(rows[1].total_difficulty).toBeNull()
  })

  it('sorts rows by the declaration order whatever order blocks arrive in', () => {
    const raws = [18500000, 17000000].map(n => ({ block: recordedBlock(n), receipts: recordedReceipts(n) }))
    const out = transformBlocks(raws)
    expect(out.blocks.columns.block_number).toEqual([17000000n, 18500000n])
    const txKeys = out.transactions.columns.block_number.map(
      (b, i) => [b, out.transactions.columns.transaction_index[i]] as [bigint, bigint],
    )
    expect(txKeys).toEqual([...txKeys].sort((a, b) => (a[0] === b[0] ? Number(a[1] - b[1]) : Number(a[0] - b[0]))))
    expect(out.logs.columns.block_number[0]).toBe(17000000n)
  })

  it('fails on a field the node left out that a column requires', () => {
    const block = recordedBlock(17000000)
    delete block.size
    expect(() => transformBlocks([{ block, receipts: recordedReceipts(17000000) }])).toThrow(/size of block 17000000 is missing/)
  })
})

describe('legacySignature', () => {
  it('reads chain id and parity from v (EIP-155) and none before it', () => {
    expect(legacySignature(27n)).toEqual({ chainId: null, yParity: 0n })
    expect(legacySignature(28n)).toEqual({ chainId: null, yParity: 1n })
    expect(legacySignature(37n)).toEqual({ chainId: 1n, yParity: 0n })
    expect(legacySignature(38n)).toEqual({ chainId: 1n, yParity: 1n })
    expect(legacySignature(62709n)).toEqual({ chainId: 31337n, yParity: 0n })
  })
})

describe('u256', () => {
  it('gives the same 32 bytes as the BigInt path for any quantity up to 256 bits', () => {
    for (const q of [
      '0x0',
      '0x1',
      '0xff',
      '0x100',
      '0x0abc',
      '0xDEADbeef',
      '0x' + 'f'.repeat(64),
      '0x' + '0'.repeat(10) + '1'.repeat(63),
    ] as const)
      expect(u256(q as `0x${string}`), q).toEqual(u256ToBytes(BigInt(q)))
  })

  it('refuses a quantity wider than 256 bits or with a character that is not a hex digit', () => {
    expect(() => u256(`0x1${'0'.repeat(64)}`)).toThrow(/wider than 256 bits/)
    expect(() => u256('0x1g')).toThrow(/invalid hex/)
  })
})

import { describe, expect, it } from 'vitest'
import { keccak256 } from 'viem'
import {
  computeBlockHash,
  encodeReceipt,
  encodeTransaction,
  encodeWithdrawal,
  headerFields,
  IngestVerificationError,
  isQuantity,
  verifyBlock,
} from '../../src/ingest/verify.ts'
import { orderedTrieRoot } from '../../src/ingest/trie.ts'
import { jsKeccak256, wasmKeccak256 } from '../../src/ingest/keccak.ts'
import { recordedBlock, recordedFiles, recordedReceipts, readJson, WITH_RECEIPTS, type Json } from './fixtures.ts'

const hex = (b: Uint8Array) => '0x' + Buffer.from(b).toString('hex')
const fullBlocks = recordedFiles('blocks', '_full.json').map(readJson)
const headerOnly = [...recordedFiles('blocks', '_hashes.json'), ...recordedFiles('headers')].map(readJson)
const clone = <T>(v: T): T => structuredClone(v)
const raw = (n: number) => ({ block: recordedBlock(n), receipts: recordedReceipts(n) })

function failure(f: () => void): IngestVerificationError {
  try {
    f()
  } catch (e) {
    if (e instanceof IngestVerificationError) return e
    throw e
  }
  throw new Error('verification passed')
}

describe('block hash', () => {
  it('is recomputed from the header fields of every recorded block and header', () => {
    const all = [...fullBlocks, ...headerOnly]
    expect(all.length).toBeGreaterThanOrEqual(30)
    for (const b of all) expect(computeBlockHash(b), `block ${Number(b.number)}`).toBe(b.hash)
  })

  it('covers every fork header shape: legacy, London, Shanghai, Cancun, Prague', () => {
    // 15 base fields, +1 baseFee (London), +1 withdrawalsRoot (Shanghai), +3 Cancun fields, +1 requestsHash (Prague).
    const sizes = new Set([...fullBlocks, ...headerOnly].map(b => headerFields(b).length))
    expect([...sizes].sort((a, b) => a - b)).toEqual([15, 16, 17, 20, 21])
  })

  it('fails when any header field is changed', () => {
    const block = recordedBlock(18500000)
    for (const field of ['parentHash', 'stateRoot', 'gasUsed', 'timestamp', 'extraData', 'baseFeePerGas', 'withdrawalsRoot', 'nonce']) {
      const bad = clone(block)
      bad[field] =
        field === 'extraData'
          ? '0x01'
          : field === 'nonce'
            ? '0x0000000000000001'
            : field.endsWith('Hash') || field.endsWith('Root')
              ? '0x' + '11'.repeat(32)
              : '0x2'
      expect(computeBlockHash(bad), field).not.toBe(block.hash)
    }
  })
})

describe('transactions, receipts and withdrawals', () => {
  it('re-hashes every recorded transaction (types 0–4) and rebuilds every transactions root', () => {
    const types = new Set<string>()
    for (const b of fullBlocks) {
      const encoded = b.transactions.map((tx: Json) => encodeTransaction(tx))
      encoded.forEach((e: Uint8Array, i: number) => expect(keccak256(e)).toBe(b.transactions[i].hash))
      expect(hex(orderedTrieRoot(encoded)), `block ${Number(b.number)}`).toBe(b.transactionsRoot)
      for (const tx of b.transactions) types.add(tx.type)
    }
    expect([...types].sort()).toEqual(['0x0', '0x1', '0x2', '0x3', '0x4'])
  })

  it('rebuilds the receipts root of every recorded receipt list that has its header', () => {
    const headers = new Map([...fullBlocks, ...headerOnly].map(b => [Number(b.number), b]))
    let checked = 0
    for (const file of recordedFiles('receipts')) {
      const receipts = readJson(file)
      const header = headers.get(Number(receipts[0].blockNumber))
      if (!header) continue
      const root = orderedTrieRoot(receipts.map((r: Json) => encodeReceipt(r, r.type)))
      expect(hex(root), file).toBe(header.receiptsRoot)
      checked++
    }
    expect(checked).toBeGreaterThanOrEqual(6)
  })

  it('rebuilds the withdrawals root of every post-Shanghai block', () => {
    const shanghai = fullBlocks.filter(b => b.withdrawalsRoot)
    expect(shanghai.length).toBeGreaterThan(5)
    for (const b of shanghai) expect(hex(orderedTrieRoot(b.withdrawals.map(encodeWithdrawal)))).toBe(b.withdrawalsRoot)
  })

  it('gives the empty-trie root for no items', () => {
    expect(hex(orderedTrieRoot([]))).toBe('0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421')
  })
})

const hashers = [
  ['JavaScript keccak (the Worker)', jsKeccak256],
  ['WebAssembly keccak (the Node ingester)', await wasmKeccak256()],
] as const

describe.each(hashers)('verifyBlock with the %s', (_, keccak) => {
  it('accepts the recorded blocks with their receipts', () => {
    for (const n of WITH_RECEIPTS) expect(() => verifyBlock(raw(n), keccak)).not.toThrow()
  })

  const cases: [string, (r: { block: Json; receipts: Json[] }) => void, RegExp][] = [
    ['a wrong block hash', r => (r.block.hash = '0x' + 'ab'.repeat(32)), /header hash .* does not match/],
    ['a changed transaction value', r => (r.block.transactions[3].value = '0x1'), /transaction 3 hashes to/],
    ['a changed transaction hash', r => (r.block.transactions[5].hash = '0x' + '00'.repeat(32)), /transaction 5 hashes to/],
    ['a missing transaction', r => r.block.transactions.pop(), /transactions root/],
    ['a missing receipt', r => r.receipts.pop(), /\d+ transactions but \d+ receipts/],
    ['receipts out of order', r => ([r.receipts[0], r.receipts[1]] = [r.receipts[1], r.receipts[0]]), /receipt 0 is for transaction/],
    ['a changed log', r => (r.receipts.find(x => x.logs.length).logs[0].data = '0x00'), /receipts root/],
    ['a log of another block', r => (r.receipts.find(x => x.logs.length).logs[0].blockHash = '0x' + '22'.repeat(32)), /names block hash/],
    ['a gap in log indexes', r => (r.receipts.findLast(x => x.logs.length).logs.at(-1).logIndex = '0xffff'), /not consecutive/],
    ['a removed log', r => (r.receipts.find(x => x.logs.length).logs[0].removed = true), /removed/],
    ['a changed status', r => (r.receipts[0].status = r.receipts[0].status === '0x1' ? '0x0' : '0x1'), /receipts root/],
    ['inconsistent gas used', r => (r.receipts[2].gasUsed = '0x1'), /gasUsed/],
    ['a changed withdrawal', r => (r.block.withdrawals[0].amount = '0x1'), /withdrawals root/],
    ['an unknown transaction type', r => (r.block.transactions[0].type = '0x7e'), /not known to the verifier/],
    ['a changed logs bloom', r => (r.receipts[1].logsBloom = '0x' + 'ff'.repeat(256)), /receipts root/],
    ['a changed transaction input', r => (r.block.transactions.findLast((x: Json) => x.input.length > 200).input += '00'), /hashes to/],
    [
      'transaction input that is not hex',
      r => (r.block.transactions.findLast((x: Json) => x.input.length > 200).input += 'zz'),
      /invalid hex/,
    ],
    ['a quantity that is not hex', r => (r.block.transactions[4].nonce = '0xfg'), /transaction 4: invalid hex/],
    ['a log naming another block number', r => (r.receipts.findLast(x => x.logs.length).logs[0].blockNumber = '0x1'), /names block 0x1$/],
    [
      'a log naming another transaction index',
      r => (r.receipts.find(x => x.logs.length).logs[0].transactionIndex = '0x7777'),
      /names transaction/,
    ],
    ['a log with another timestamp', r => (r.receipts.find(x => x.logs.length).logs[0].blockTimestamp = '0x5'), /has timestamp 0x5/],
    ['a transaction naming another block', r => (r.block.transactions[7].blockNumber = '0x112a881'), /names block 0x112a881/],
    ['a receipt index that is not hex', r => (r.receipts[2].transactionIndex = '0xzz'), /malformed response: .*0xzz/],
    ['a receipt without its logs', r => delete r.receipts[1].logs, /malformed response/],
  ]
  for (const [name, mutate, message] of cases) {
    it(`refuses ${name}, naming the block`, () => {
      const r = clone(raw(18000000))
      mutate(r)
      const e = failure(() => verifyBlock(r, keccak))
      expect(e.block).toBe(18000000)
      expect(e.message).toMatch(/^block 18000000: /)
      expect(e.message).toMatch(message)
    })
  }
})

describe('WebAssembly keccak', () => {
  it('hashes as the JavaScript keccak, from empty input across block sizes to a megabyte', async () => {
    const wasm = await wasmKeccak256()
    for (const size of [0, 1, 31, 32, 135, 136, 137, 1000, 100_000, 1 << 20]) {
      const bytes = Uint8Array.from({ length: size }, (_, i) => (i * 131 + size) & 0xff)
      expect(hex(wasm(bytes)), `${size} bytes`).toBe(hex(jsKeccak256(bytes)))
    }
  })
})

describe('isQuantity', () => {
  it('agrees with BigInt on every form of a quantity, short or long, and throws where BigInt does', () => {
    const forms = [
      '0x0',
      '0x00',
      '0x1',
      '0xA',
      '0xa',
      '0X1f',
      '0x000000000001f',
      '0xfffffffffffff',
      '0x1fffffffffffff',
      '0x' + '0'.repeat(20) + '5',
      '5',
      ' 0x5',
    ]
    for (const hex of forms)
      for (const n of [0, 1, 5, 10, 31, 2 ** 52 - 1, 2 ** 53 - 1])
        expect(isQuantity(hex, n), `${hex} = ${n}`).toBe(BigInt(hex) === BigInt(n))
    for (const hex of ['0x', '0xg', '0x1 2', '0x1é']) expect(() => isQuantity(hex, 1), hex).toThrow()
  })
})

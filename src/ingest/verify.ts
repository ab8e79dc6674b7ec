/**
 * Checks a block before any of it is written: the header hash recomputed from its
 * fields (every fork's header shape), each transaction's hash, the transactions,
 * receipts and withdrawals roots recomputed from the rows, and the receipts and logs
 * consistent with the block. The header hash binds the roots, so rows that pass are
 * the chain's rows. Pure: no I/O.
 */
import { bytesToHex, smallQuantity } from '../schema/hex.ts'
import type { Hex, RawBlock, RpcBlock, RpcLog, RpcReceipt, RpcTransaction, RpcWithdrawal } from './evm-json.ts'
import { hexData, hexQuantity, rlpEncode, RlpWriter, type RlpItem } from './rlp.ts'
import { jsKeccak256, type Keccak256 } from './keccak.ts'
import { orderedTrieRoot } from './trie.ts'

/** Data from the node contradicts itself or the chain; names the block. Nothing of it is published. */
export class IngestVerificationError extends Error {
  readonly block: number
  constructor(block: number, detail: string) {
    super(`block ${block}: ${detail}`)
    this.name = 'IngestVerificationError'
    this.block = block
  }
}

const same = (a: string | null | undefined, b: string | null | undefined) => a === b || (a ?? '').toLowerCase() === (b ?? '').toLowerCase()
const num = (hex: string): bigint => BigInt(hex)

/**
 * Whether a quantity is `n` (a safe integer): read from its digits when it is plain 0x-hex
 * of at most 13 digits, else by BigInt as before. The per-log checks ask this four times a
 * log, and BigInt would allocate for each.
 */
export function isQuantity(hex: string, n: number): boolean {
  const v = smallQuantity(hex)
  return v >= 0 ? v === n : num(hex) === BigInt(n)
}
const present = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined

/** Header fields that enter the hash, in RLP order; fork fields only when the header has them. */
export function headerFields(h: Omit<RpcBlock, 'transactions'>): RlpItem[] {
  const fields: RlpItem[] = [
    hexData(h.parentHash),
    hexData(h.sha3Uncles),
    hexData(h.miner),
    hexData(h.stateRoot),
    hexData(h.transactionsRoot),
    hexData(h.receiptsRoot),
    hexData(h.logsBloom),
    hexQuantity(h.difficulty),
    hexQuantity(h.number),
    hexQuantity(h.gasLimit),
    hexQuantity(h.gasUsed),
    hexQuantity(h.timestamp),
    hexData(h.extraData),
    hexData(h.mixHash),
    hexData(h.nonce),
  ]
  // London, Shanghai, Cancun (three fields), Prague: each fork appends to the header.
  const forks: [Hex | null | undefined, (v: Hex) => RlpItem][] = [
    [h.baseFeePerGas, hexQuantity],
    [h.withdrawalsRoot, hexData],
    [h.blobGasUsed, hexQuantity],
    [h.excessBlobGas, hexQuantity],
    [h.parentBeaconBlockRoot, hexData],
    [h.requestsHash, hexData],
  ]
  for (const [value, encode] of forks) {
    if (present(value)) fields.push(encode(value))
  }
  return fields
}

/** keccak256(rlp(header)): what the block hash must be. */
export function computeBlockHash(header: Omit<RpcBlock, 'transactions'>, keccak: Keccak256 = jsKeccak256): string {
  return bytesToHex(keccak(rlpEncode(headerFields(header))))
}

/**
 * One writer for every transaction, receipt and withdrawal of the thread (`encode` is not
 * reentrant, and none nests another). `checkBlock` resets its arena as it starts: nothing it
 * encoded outlives it.
 */
const rlp = new RlpWriter()

function accessList(w: RlpWriter, list: RpcTransaction['accessList'] = []): void {
  w.begin()
  for (const a of list) {
    w.begin()
    w.hexData(a.address)
    w.begin()
    for (const key of a.storageKeys) w.hexData(key)
    w.end()
    w.end()
  }
  w.end()
}

/** The signed transaction as the chain hashes it (typed envelope: type byte + rlp). Throws on a type it cannot encode. */
export function encodeTransaction(tx: RpcTransaction): Uint8Array {
  const type = Number(num(tx.type ?? '0x0'))
  if (type === 0) {
    if (!present(tx.v)) throw new Error('legacy transaction without v')
    return rlp.encode(w => {
      w.begin()
      w.hexQuantity(tx.nonce)
      w.hexQuantity(tx.gasPrice ?? '0x0')
      common(w, tx)
      w.hexQuantity(tx.v!)
      w.hexQuantity(tx.r)
      w.hexQuantity(tx.s)
      w.end()
    })
  }
  if (!present(tx.chainId)) throw new Error(`type ${type} transaction without chainId`)
  const parity = tx.yParity ?? tx.v
  if (!present(parity)) throw new Error(`type ${type} transaction without yParity`)
  if (type > 4) throw new Error(`transaction type ${type} is not known to the verifier`)
  return rlp.encode(w => {
    w.begin()
    w.hexQuantity(tx.chainId!)
    w.hexQuantity(tx.nonce)
    if (type === 1) w.hexQuantity(tx.gasPrice ?? '0x0')
    else {
      w.hexQuantity(tx.maxPriorityFeePerGas ?? '0x0')
      w.hexQuantity(tx.maxFeePerGas ?? '0x0')
    }
    common(w, tx)
    accessList(w, tx.accessList)
    if (type === 3) {
      w.hexQuantity(tx.maxFeePerBlobGas ?? '0x0')
      w.begin()
      for (const h of tx.blobVersionedHashes ?? []) w.hexData(h)
      w.end()
    } else if (type === 4) {
      w.begin()
      for (const a of tx.authorizationList ?? []) {
        w.begin()
        w.hexQuantity(a.chainId)
        w.hexData(a.address)
        w.hexQuantity(a.nonce)
        w.hexQuantity(a.yParity)
        w.hexQuantity(a.r)
        w.hexQuantity(a.s)
        w.end()
      }
      w.end()
    }
    w.hexQuantity(parity)
    w.hexQuantity(tx.r)
    w.hexQuantity(tx.s)
    w.end()
  }, type)
}

/** Gas, recipient (empty for a creation), value and calldata: in every transaction type, in this order. */
function common(w: RlpWriter, tx: RpcTransaction): void {
  w.hexQuantity(tx.gas)
  if (tx.to) w.hexData(tx.to)
  else w.bytes(EMPTY)
  w.hexQuantity(tx.value)
  w.hexData(tx.input)
}

const EMPTY = new Uint8Array(0)

/** The receipt as the receipts trie holds it (typed envelope for typed transactions). */
export function encodeReceipt(receipt: RpcReceipt, txType: Hex | undefined): Uint8Array {
  if (!present(receipt.status) && !present(receipt.root)) throw new Error(`receipt ${receipt.transactionHash} has neither status nor root`)
  const type = Number(num(receipt.type ?? txType ?? '0x0'))
  return rlp.encode(
    w => {
      w.begin()
      if (present(receipt.status)) w.hexQuantity(receipt.status)
      else w.hexData(receipt.root!)
      w.hexQuantity(receipt.cumulativeGasUsed)
      w.hexData(receipt.logsBloom)
      w.begin()
      for (const log of receipt.logs) {
        w.begin()
        w.hexData(log.address)
        w.begin()
        for (const topic of log.topics) w.hexData(topic)
        w.end()
        w.hexData(log.data)
        w.end()
      }
      w.end()
      w.end()
    },
    type === 0 ? undefined : type,
  )
}

export const encodeWithdrawal = (wd: RpcWithdrawal): Uint8Array =>
  rlp.encode(w => {
    w.begin()
    w.hexQuantity(wd.index)
    w.hexQuantity(wd.validatorIndex)
    w.hexData(wd.address)
    w.hexQuantity(wd.amount)
    w.end()
  })

/** How a failure names a log (built only when one fails). */
const logName = (log: RpcLog, tx: RpcTransaction) => `log ${log.logIndex} of ${tx.hash}`

/**
 * Verifies one extracted block; throws IngestVerificationError naming the block. The
 * hash function is injected (keccak.ts): every check is the same whichever is given.
 */
export function verifyBlock(raw: RawBlock, keccak: Keccak256 = jsKeccak256): void {
  const n = Number(num(raw.block.number))
  try {
    checkBlock(raw, n, keccak)
  } catch (e) {
    // a field no check expected (not hex, missing, of another type) still names its block
    if (e instanceof IngestVerificationError) throw e
    throw new IngestVerificationError(n, `malformed response: ${(e as Error).message}`)
  }
}

function checkBlock({ block, receipts }: RawBlock, n: number, keccak: Keccak256): void {
  const fail = (detail: string): never => {
    throw new IngestVerificationError(n, detail)
  }
  const attempt = <T>(what: string, f: () => T): T => {
    try {
      return f()
    } catch (e) {
      return fail(`${what}: ${(e as Error).message}`)
    }
  }

  rlp.reset()
  const hash = attempt('header', () => computeBlockHash(block, keccak))
  if (!same(hash, block.hash)) fail(`header hash ${hash} does not match the block's hash ${block.hash}`)

  const txs = block.transactions
  txs.forEach((tx, i) => {
    if (typeof tx !== 'object' || tx === null)
      fail(`transaction ${i} is not a full transaction object (fetch blocks with full transactions)`)
    if (present(tx.transactionIndex) && !isQuantity(tx.transactionIndex, i))
      fail(`transaction ${tx.hash} has index ${tx.transactionIndex} at position ${i}`)
    if (present(tx.blockHash) && !same(tx.blockHash, block.hash)) fail(`transaction ${tx.hash} names block hash ${tx.blockHash}`)
    if (present(tx.blockNumber) && !isQuantity(tx.blockNumber, n)) fail(`transaction ${tx.hash} names block ${tx.blockNumber}`)
  })
  const encodedTxs = txs.map((tx, i) => attempt(`transaction ${i}`, () => encodeTransaction(tx)))
  encodedTxs.forEach((bytes, i) => {
    const h = bytesToHex(keccak(bytes))
    if (!same(h, txs[i].hash)) fail(`transaction ${i} hashes to ${h}, not ${txs[i].hash}`)
  })
  const txRoot = bytesToHex(orderedTrieRoot(encodedTxs, keccak))
  if (!same(txRoot, block.transactionsRoot)) fail(`transactions root ${txRoot} does not match the header's ${block.transactionsRoot}`)

  if (receipts.length !== txs.length) fail(`${txs.length} transactions but ${receipts.length} receipts`)
  let cumulative = 0n
  let logIndex = 0
  const timestamp = num(block.timestamp)
  const sameTime = (hex: string) =>
    timestamp <= BigInt(Number.MAX_SAFE_INTEGER) ? isQuantity(hex, Number(timestamp)) : num(hex) === timestamp
  receipts.forEach((r, i) => {
    const tx = txs[i]
    if (!same(r.transactionHash, tx.hash)) fail(`receipt ${i} is for transaction ${r.transactionHash}, not ${tx.hash}`)
    if (!isQuantity(r.transactionIndex, i)) fail(`receipt of ${tx.hash} has index ${r.transactionIndex}, expected ${i}`)
    if (present(r.blockHash) && !same(r.blockHash, block.hash)) fail(`receipt of ${tx.hash} names block hash ${r.blockHash}`)
    if (present(r.blockNumber) && !isQuantity(r.blockNumber, n)) fail(`receipt of ${tx.hash} names block ${r.blockNumber}`)
    const used = num(r.cumulativeGasUsed) - cumulative
    if (num(r.gasUsed) !== used) fail(`receipt of ${tx.hash} has gasUsed ${r.gasUsed}, cumulative gas says ${used}`)
    cumulative = num(r.cumulativeGasUsed)
    for (const log of r.logs) {
      if (!same(log.blockHash, block.hash)) fail(`${logName(log, tx)} names block hash ${log.blockHash}`)
      if (!isQuantity(log.blockNumber, n)) fail(`${logName(log, tx)} names block ${log.blockNumber}`)
      if (!same(log.transactionHash, tx.hash) || !isQuantity(log.transactionIndex, i))
        fail(`${logName(log, tx)} names transaction ${log.transactionHash} at ${log.transactionIndex}`)
      if (!isQuantity(log.logIndex, logIndex)) fail(`${logName(log, tx)}: log indexes are not consecutive (expected ${logIndex})`)
      if (present(log.blockTimestamp) && !sameTime(log.blockTimestamp))
        fail(`${logName(log, tx)} has timestamp ${log.blockTimestamp}, block has ${block.timestamp}`)
      if (log.removed === true) fail(`${logName(log, tx)} is marked removed (reorged out)`)
      if (log.topics.length > 4) fail(`${logName(log, tx)} has ${log.topics.length} topics`)
      logIndex++
    }
  })
  if (cumulative !== num(block.gasUsed)) fail(`receipts use ${cumulative} gas, header says ${num(block.gasUsed)}`)
  const receiptsRoot = bytesToHex(
    orderedTrieRoot(
      receipts.map((r, i) => attempt(`receipt ${i}`, () => encodeReceipt(r, txs[i].type))),
      keccak,
    ),
  )
  if (!same(receiptsRoot, block.receiptsRoot)) fail(`receipts root ${receiptsRoot} does not match the header's ${block.receiptsRoot}`)

  if (present(block.withdrawalsRoot)) {
    if (!Array.isArray(block.withdrawals)) fail('header has a withdrawals root but the block has no withdrawals list')
    const root = bytesToHex(orderedTrieRoot(block.withdrawals!.map(encodeWithdrawal), keccak))
    if (!same(root, block.withdrawalsRoot)) fail(`withdrawals root ${root} does not match the header's ${block.withdrawalsRoot}`)
  } else if (present(block.withdrawals) && block.withdrawals.length) {
    fail('block has withdrawals but its header has no withdrawals root')
  }
}

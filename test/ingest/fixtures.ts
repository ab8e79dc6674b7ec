/**
 * Test helpers for the ingester: the recorded mainnet data, the replay node, reading
 * a dataset back from a store, and the source JSON converted to stored values
 * independently of src/ingest (hex text for binary kinds, bigint for integers).
 */
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import { ManifestReader, parseRoot } from '../../src/manifest/read.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import type { ChainRef, ManifestRoot, PartitionEntry } from '../../src/manifest/types.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { sharedPath } from '../support/shared.ts'

export const DATA = sharedPath('data', 'evm-mainnet')
export const REPLAY = sharedPath('tools', 'replay-evm.mjs')
export const ETH: ChainRef = { family: 'evm', id: 1, code: 'ETH' }
/** Blocks recorded with both full transactions and receipts. */
export const WITH_RECEIPTS = [17000000, 18000000, 18500000]

export type Json = any

export const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8'))
export const recordedBlock = (n: number): Json => readJson(join(DATA, 'blocks', `mainnet_block_${n}_full.json`))
export const recordedReceipts = (n: number): Json => readJson(join(DATA, 'receipts', `mainnet_receipts_${n}.json`))
export const recordedFiles = (dir: string, suffix = '.json'): string[] =>
  readdirSync(join(DATA, dir))
    .filter(f => f.endsWith(suffix))
    .map(f => join(DATA, dir, f))

export interface Replay {
  url: string
  pid: number
  blocks: number[]
  receipts: number[]
  stop(): void
}

/** Starts the recorded-mainnet JSON-RPC node on 127.0.0.1. */
export async function startReplay(): Promise<Replay> {
  const child = spawn(process.execPath, [REPLAY], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
  const next = async () => String((await lines.next()).value)
  const url = (await next()).replace(/^listening /, '')
  const list = (line: string) => line.split(' ')[1].split(',').map(Number)
  const blocks = list(await next())
  const receipts = list(await next())
  return { url, pid: child.pid!, blocks, receipts, stop: () => child.kill() }
}

export async function readManifest(store: ObjectStore, chain: ChainRef): Promise<ManifestRoot | null> {
  const got = await store.get(rootKey(chain))
  return got ? parseRoot(got.body) : null
}

/** Every partition entry of a dataset, in block order. */
export async function partitionsOf(store: ObjectStore, chain: ChainRef, dataset: string): Promise<PartitionEntry[]> {
  const root = await readManifest(store, chain)
  if (!root) return []
  return (await new ManifestReader(store).partitions(root, dataset, [0, Number.MAX_SAFE_INTEGER])).partitions
}

/** Every row of a dataset, read back from its published partitions with hyparquet. */
export async function readRows(store: ObjectStore, chain: ChainRef, dataset: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = []
  for (const p of await partitionsOf(store, chain, dataset)) {
    const got = await store.get(p.key)
    if (!got || got.body.length !== p.bytes) throw new Error(`partition ${p.key} missing or of the wrong size`)
    const file = got.body.buffer.slice(got.body.byteOffset, got.body.byteOffset + got.body.length) as ArrayBuffer
    const part = await parquetReadObjects({ file, utf8: false })
    if (part.length !== p.rows) throw new Error(`partition ${p.key}: ${part.length} rows, manifest says ${p.rows}`)
    rows.push(...part)
  }
  return rows
}

const JSON_COLUMNS = new Set(['withdrawals', 'access_list', 'blob_versioned_hashes', 'authorization_list'])

/** A stored row as comparable values: bytes → lowercase 0x-hex, JSON text → parsed, the rest as read. */
export function view(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => {
      if (v instanceof Uint8Array) return [k, '0x' + Buffer.from(v).toString('hex')]
      if (typeof v === 'string' && JSON_COLUMNS.has(k)) return [k, JSON.parse(v)]
      return [k, v ?? null]
    }),
  )
}

const lower = (hex: string | null | undefined) => (hex === null || hex === undefined ? null : hex.toLowerCase())
const int = (hex: string | null | undefined) => (hex === null || hex === undefined ? null : BigInt(hex))
/** A uint256 quantity as the 32-byte big-endian value, in hex. */
const word = (hex: string | null | undefined) =>
  hex === null || hex === undefined ? null : '0x' + BigInt(hex).toString(16).padStart(64, '0')

/** The block row expected from a recorded block. */
export function expectedBlock(b: Json): Record<string, unknown> {
  return {
    block_number: int(b.number),
    hash: lower(b.hash),
    parent_hash: lower(b.parentHash),
    uncles_hash: lower(b.sha3Uncles),
    miner: lower(b.miner),
    state_root: lower(b.stateRoot),
    transactions_root: lower(b.transactionsRoot),
    receipts_root: lower(b.receiptsRoot),
    gas_used: int(b.gasUsed),
    gas_limit: int(b.gasLimit),
    base_fee_per_gas: word(b.baseFeePerGas),
    extra_data: lower(b.extraData),
    logs_bloom: lower(b.logsBloom),
    timestamp: int(b.timestamp),
    difficulty: word(b.difficulty),
    total_difficulty: word(b.totalDifficulty),
    size: int(b.size),
    mix_hash: lower(b.mixHash),
    nonce: lower(b.nonce),
    transaction_count: BigInt(b.transactions.length),
    withdrawals_root: lower(b.withdrawalsRoot),
    withdrawals: b.withdrawals ?? null,
    blob_gas_used: int(b.blobGasUsed),
    excess_blob_gas: int(b.excessBlobGas),
    parent_beacon_block_root: lower(b.parentBeaconBlockRoot),
    requests_hash: lower(b.requestsHash),
  }
}

/** EIP-155: v = 35 + 2·chainId + yParity; before it v = 27 + yParity and there is no chain id. */
function legacyChainId(v: bigint): bigint | null {
  return v >= 35n ? (v - 35n) / 2n : null
}
function legacyParity(v: bigint): bigint {
  return v >= 35n ? (v - 35n) % 2n : v - 27n
}

/** The transaction row expected from a recorded transaction and its receipt. */
export function expectedTransaction(b: Json, tx: Json, r: Json, index: number): Record<string, unknown> {
  const type = BigInt(tx.type ?? '0x0')
  const v = BigInt(tx.v ?? tx.yParity)
  return {
    block_number: int(b.number),
    block_hash: lower(b.hash),
    transaction_index: BigInt(index),
    hash: lower(tx.hash),
    nonce: int(tx.nonce),
    from: lower(tx.from),
    to: lower(tx.to),
    value: word(tx.value),
    gas_price: word(tx.gasPrice),
    gas: int(tx.gas),
    input: lower(tx.input),
    v,
    r: word(tx.r),
    s: word(tx.s),
    type,
    max_fee_per_gas: word(tx.maxFeePerGas),
    max_priority_fee_per_gas: word(tx.maxPriorityFeePerGas),
    block_timestamp: int(b.timestamp),
    chain_id: type === 0n ? legacyChainId(v) : int(tx.chainId),
    y_parity: type === 0n ? legacyParity(v) : BigInt(tx.yParity ?? tx.v),
    access_list: type === 0n ? null : tx.accessList,
    max_fee_per_blob_gas: word(tx.maxFeePerBlobGas),
    blob_versioned_hashes: tx.blobVersionedHashes ?? null,
    authorization_list: tx.authorizationList ?? null,
    status: int(r.status),
    gas_used: int(r.gasUsed),
    cumulative_gas_used: int(r.cumulativeGasUsed),
    effective_gas_price: word(r.effectiveGasPrice),
    contract_address: lower(r.contractAddress),
    logs_count: BigInt(r.logs.length),
  }
}

/** The log row expected from a recorded log. */
export function expectedLog(b: Json, log: Json): Record<string, unknown> {
  return {
    block_number: int(b.number),
    block_hash: lower(b.hash),
    transaction_index: int(log.transactionIndex),
    transaction_hash: lower(log.transactionHash),
    log_index: int(log.logIndex),
    address: lower(log.address),
    topic0: lower(log.topics[0]),
    topic1: lower(log.topics[1]),
    topic2: lower(log.topics[2]),
    topic3: lower(log.topics[3]),
    data: lower(log.data),
    removed: log.removed ?? false,
    block_timestamp: int(b.timestamp),
  }
}

/** Expected rows of all three datasets for blocks with their receipts. */
export function expectedRows(blocks: { block: Json; receipts: Json[] }[]) {
  return {
    blocks: blocks.map(({ block }) => expectedBlock(block)),
    transactions: blocks.flatMap(({ block, receipts }) =>
      block.transactions.map((tx: Json, i: number) => expectedTransaction(block, tx, receipts[i], i)),
    ),
    logs: blocks.flatMap(({ block, receipts }) => receipts.flatMap((r: Json) => r.logs.map((l: Json) => expectedLog(block, l)))),
  }
}

export interface Call {
  method: string
  params: Json[]
  id?: unknown
}

export interface FakeReply {
  status?: number
  body?: string
  headers?: Record<string, string>
  /** Wait this long before answering (timeouts). */
  delayMs?: number
}

export interface FakeNodeOptions {
  /** Replaces the whole HTTP answer to request number `n` (0-based); undefined answers normally. */
  reply?: (calls: Call[], n: number, batch: boolean) => FakeReply | undefined
  /** Replaces the result of one call; gets the recorded result. */
  result?: (call: Call, recorded: Json) => Json
  /** Answers one call with this JSON-RPC error object instead (undefined answers normally); the batch's other calls are answered. */
  error?: (call: Call) => Json | undefined
}

export interface FakeNode {
  url: string
  /** Every call received, in order. */
  calls: Call[]
  /** HTTP requests received. */
  requests: number
  close(): Promise<void>
}

/** Answers a call from the recorded blocks that have receipts; like a node that has only those blocks. */
export function recordedResult(call: Call): { result?: Json; error?: Json } {
  const p = call.params ?? []
  const n = typeof p[0] === 'string' && p[0].startsWith('0x') ? Number(BigInt(p[0])) : -1
  const has = WITH_RECEIPTS.includes(n)
  switch (call.method) {
    case 'eth_blockNumber':
      return { result: '0x' + Math.max(...WITH_RECEIPTS).toString(16) }
    case 'eth_getBlockByNumber':
      return { result: has ? recordedBlock(n) : null }
    case 'eth_getBlockReceipts':
      return { result: has ? recordedReceipts(n) : null }
    case 'eth_getTransactionReceipt':
      return { result: WITH_RECEIPTS.flatMap(recordedReceipts).find((r: Json) => r.transactionHash === p[0]) ?? null }
    default:
      return { error: { code: -32601, message: `the method ${call.method} does not exist/is not available` } }
  }
}

/** A JSON-RPC node on 127.0.0.1 serving the recorded blocks, with hooks to misbehave. */
export async function startFakeNode(options: FakeNodeOptions = {}): Promise<FakeNode> {
  const { createServer } = await import('node:http')
  const node: FakeNode = { url: '', calls: [], requests: 0, close: async () => {} }
  const server = createServer((req, res) => {
    let text = ''
    req.on('data', c => (text += c))
    req.on('end', async () => {
      const n = node.requests++
      const parsed = JSON.parse(text)
      const batch = Array.isArray(parsed)
      const calls: Call[] = batch ? parsed : [parsed]
      node.calls.push(...calls)
      const custom = options.reply?.(calls, n, batch)
      if (custom?.delayMs) await new Promise(r => setTimeout(r, custom.delayMs))
      if (res.destroyed) return
      if (custom) {
        res.writeHead(custom.status ?? 200, { 'content-type': 'application/json', ...custom.headers })
        res.end(custom.body ?? '')
        return
      }
      const answers = calls.map(call => {
        const out = options.error?.(call) ? { error: options.error(call) } : recordedResult(call)
        if (out.error) return { jsonrpc: '2.0', id: call.id, error: out.error }
        const result = options.result ? options.result(call, out.result) : out.result
        return { jsonrpc: '2.0', id: call.id, result }
      })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(batch ? answers : answers[0]))
    })
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const address = server.address() as { port: number }
  node.url = `http://127.0.0.1:${address.port}`
  node.close = () =>
    new Promise<void>(r => {
      server.closeAllConnections()
      server.close(() => r())
    })
  return node
}

/** What a finished ingest must look like: coverage, partitions and rows of every EVM dataset. */
export async function snapshot(store: ObjectStore, chain: ChainRef): Promise<Record<string, unknown>> {
  const root = await readManifest(store, chain)
  if (!root) throw new Error('nothing published')
  const out: Record<string, unknown> = {}
  for (const ds of ['blocks', 'transactions', 'logs']) {
    out[`${ds}.coverage`] = root.datasets[ds].coverage
    out[`${ds}.partitions`] = (await partitionsOf(store, chain, ds)).map(p => ({
      key: p.key,
      from: p.from,
      to: p.to,
      rows: p.rows,
      bytes: p.bytes,
    }))
    out[`${ds}.rows`] = (await readRows(store, chain, ds)).map(view)
  }
  return out
}

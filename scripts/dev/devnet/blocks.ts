/**
 * Builds devnet blocks on purpose: each batch of transactions is signed locally by the
 * test-mnemonic accounts, sent, and mined as one block, so blocks hold several transactions
 * and a replay on a fresh anvil yields the same chain. Every receipt is tallied for the report.
 */
import { createPublicClient, createTestClient, http } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import type { AccessList, Address, HDAccount, Hex, PublicClient, TestClient, TransactionReceipt, TransactionSerializable } from 'viem'
import { DEVNET_MNEMONIC } from './anvil.ts'
import { classifyLog, devnetEventKinds } from './contracts.ts'
import type { EventKind } from './contracts.ts'

/** Transaction types the workload sends: 0 legacy, 1 EIP-2930, 2 EIP-1559. */
export type TxType = 'legacy' | 'eip2930' | 'eip1559'

/** One transaction to put in a block. `to` undefined deploys a contract; `gas` undefined is estimated. */
export interface TxSpec {
  /** Index of the sending test account. */
  from: number
  to?: Address
  data?: Hex
  value?: bigint
  gas?: bigint
}

/** What the mined blocks contained, counted from their receipts. */
export interface Tally {
  blocks: number
  transactions: number
  /** Transactions by EIP-2718 type number ('0', '1', '2'). */
  txTypes: Record<string, number>
  contractCreations: number
  logs: number
  /** Logs by kind (see `devnetEventKinds`), `other` for the rest. */
  events: Record<string, number>
}

/** A connection to a devnet plus the local state needed to keep building blocks on it. */
export interface Devnet {
  rpcUrl: string
  chainId: number
  client: PublicClient
  test: TestClient<'anvil'>
  /** Test accounts by index, as anvil derives them from the mnemonic. */
  accounts: HDAccount[]
  /** Next nonce per account, kept locally because several transactions share a block. */
  nonces: number[]
  /** Transactions sent so far; picks each transaction's type and fees. */
  sent: number
  /** Whether the node mines each transaction on arrival; mining is paused while a batch is sent. */
  automine: boolean
  kinds: EventKind[]
  tally: Tally
}

const GWEI = 1_000_000_000n
const TYPE_NUMBER: Record<string, number> = { legacy: 0, eip2930: 1, eip1559: 2, eip4844: 3, eip7702: 4 }

/** Connects to an anvil node and derives `accountCount` accounts from the mnemonic. */
export async function openDevnet(rpcUrl: string, opts: { mnemonic?: string; accountCount?: number } = {}): Promise<Devnet> {
  const client = createPublicClient({ transport: http(rpcUrl), cacheTime: 0 })
  const test = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
  const accounts = Array.from({ length: opts.accountCount ?? 10 }, (_, i) =>
    mnemonicToAccount(opts.mnemonic ?? DEVNET_MNEMONIC, { addressIndex: i }),
  )
  const nonces = await Promise.all(accounts.map(a => client.getTransactionCount({ address: a.address, blockTag: 'pending' })))
  return {
    rpcUrl,
    chainId: await client.getChainId(),
    client: client as PublicClient,
    test,
    accounts,
    nonces,
    sent: 0,
    automine: await test.getAutomine(),
    kinds: devnetEventKinds(),
    tally: emptyTally(),
  }
}

/** A tally with nothing counted. */
export function emptyTally(): Tally {
  return { blocks: 0, transactions: 0, txTypes: { 0: 0, 1: 0, 2: 0 }, contractCreations: 0, logs: 0, events: {} }
}

/** The type of the n-th transaction sent: mostly EIP-1559, with legacy and EIP-2930 mixed in. */
export function txTypeFor(n: number): TxType {
  const r = n % 8
  return r === 0 ? 'legacy' : r === 4 ? 'eip2930' : 'eip1559'
}

/**
 * The unsigned transaction for a spec: type and fees follow `n` so the chain varies but
 * replays identically. Fees stay above anvil's base fee, which starts at 1 gwei and only
 * falls here because no workload block reaches the 15M gas target.
 */
export function buildTransaction(spec: TxSpec, n: number, nonce: number, gas: bigint, chainId: number): TransactionSerializable {
  const base = { chainId, nonce, gas, to: spec.to, data: spec.data, value: spec.value ?? 0n }
  const type = txTypeFor(n)
  const gasPrice = 2n * GWEI + BigInt(n % 5) * (GWEI / 4n)
  if (type === 'legacy') return { ...base, type, gasPrice }
  if (type === 'eip2930') return { ...base, type, gasPrice, accessList: accessListFor(spec.to) }
  return { ...base, type, maxFeePerGas: 20n * GWEI, maxPriorityFeePerGas: GWEI + BigInt(n % 3) * (GWEI / 2n) }
}

/** Pre-warms the callee's first two storage slots; empty for a deployment. */
export function accessListFor(to: Address | undefined): AccessList {
  if (!to) return []
  const slot = (i: number) => `0x${i.toString(16).padStart(64, '0')}` as Hex
  return [{ address: to, storageKeys: [slot(0), slot(1)] }]
}

/**
 * Sends the transactions in order and mines them as one block. Throws if any was left out
 * of the block or reverted: the workload is deterministic, so either is a bug.
 */
export async function mineBlock(dev: Devnet, specs: readonly TxSpec[]): Promise<TransactionReceipt[]> {
  if (dev.automine) await dev.test.setAutomine(false)
  const hashes: Hex[] = []
  try {
    for (const spec of specs) {
      const account = dev.accounts[spec.from]
      if (!account) throw new Error(`no test account ${spec.from}`)
      const gas = spec.gas ?? (await estimate(dev, account.address, spec))
      const tx = buildTransaction(spec, dev.sent++, dev.nonces[spec.from]++, gas, dev.chainId)
      hashes.push(await dev.client.sendRawTransaction({ serializedTransaction: await account.signTransaction(tx) }))
    }
    await dev.test.request({ method: 'evm_mine', params: undefined })
  } finally {
    if (dev.automine) await dev.test.setAutomine(true)
  }
  const receipts = await Promise.all(hashes.map(hash => dev.client.getTransactionReceipt({ hash })))
  const blocks = new Set(receipts.map(r => r.blockNumber))
  if (blocks.size > 1) throw new Error(`a batch of ${specs.length} transactions did not fit in one block`)
  const failed = receipts.find(r => r.status !== 'success')
  if (failed) throw new Error(`transaction ${failed.transactionHash} reverted (to ${failed.to}, block ${failed.blockNumber})`)
  addReceipts(dev.tally, dev.kinds, receipts)
  return receipts
}

/**
 * Reads every account's next nonce back from the node after dropping what is still
 * pending: a reorg may have dropped mined transactions, a failed batch may have left
 * some unmined, and either leaves the local nonces wrong for every later block.
 */
export async function resyncNonces(dev: Devnet): Promise<void> {
  await dev.test.request({ method: 'anvil_dropAllTransactions', params: undefined } as never)
  dev.nonces = await Promise.all(dev.accounts.map(a => dev.client.getTransactionCount({ address: a.address, blockTag: 'latest' })))
}

/** Counts one mined block's receipts into the tally. */
export function addReceipts(tally: Tally, kinds: readonly EventKind[], receipts: readonly TransactionReceipt[]): void {
  tally.blocks++
  for (const r of receipts) {
    tally.transactions++
    const type = String(TYPE_NUMBER[r.type] ?? r.type)
    tally.txTypes[type] = (tally.txTypes[type] ?? 0) + 1
    if (r.contractAddress) tally.contractCreations++
    for (const log of r.logs) {
      tally.logs++
      const key = classifyLog(kinds, log.topics)
      tally.events[key] = (tally.events[key] ?? 0) + 1
    }
  }
}

async function estimate(dev: Devnet, from: Address, spec: TxSpec): Promise<bigint> {
  const gas = await dev.client.estimateGas({ account: from, to: spec.to, data: spec.data, value: spec.value })
  return (gas * 5n) / 4n + 10_000n
}

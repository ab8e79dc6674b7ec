/**
 * Recorded Aptos data for the Move tests (read from ../shared, never copied):
 * REST transactions per network, REST samples, recorded module ABIs and the
 * hash-verified BCS vectors.
 */
import fs from 'node:fs'
import path from 'node:path'
import { AbiCache } from '../../src/move/abi-cache.ts'
import type { RestTransaction, RestUserTransaction } from '../../src/move/rest-types.ts'
import { sharedPath } from '../support/shared.ts'

export const DATA = sharedPath('data', 'move-mainnet')
export const TOOLS = sharedPath('tools')

export const NETWORKS = ['mainnet', 'testnet', 'devnet'] as const
export type Network = (typeof NETWORKS)[number]
export const CHAIN_IDS: Record<Network, number> = { mainnet: 1, testnet: 2, devnet: 163 }

const readJson = (file: string): unknown => JSON.parse(fs.readFileSync(file, 'utf8'))

const byNetwork = new Map<Network, RestTransaction[]>()

/** The recorded transactions of a network, sorted by version (read once; callers must not mutate them). */
export function restTransactions(network: Network): RestTransaction[] {
  let txs = byNetwork.get(network)
  if (!txs) byNetwork.set(network, (txs = readJson(path.join(DATA, 'rest', network, 'transactions.json')) as RestTransaction[]))
  return txs
}

export function sample(file: string): RestTransaction {
  return readJson(path.join(DATA, 'rest-samples', file)) as RestTransaction
}

/** Every module ABI recorded in `abis/` (0x1, 0x3, 0x4 and a few third-party modules). */
export function recordedAbis(): AbiCache {
  const cache = new AbiCache()
  for (const f of fs.readdirSync(path.join(DATA, 'abis')).sort()) cache.add(readJson(path.join(DATA, 'abis', f)) as { abi: never }[])
  return cache
}

export interface UserVector {
  source_file: string
  network?: Network
  format?: string
  chain_id: number
  version: string
  hash: string
  payload_decoded: {
    EntryFunction?: { module: { address: string; name: string }; function: string; ty_args_bcs_hex: string[]; args_bcs_hex: string[] }
    Script?: { code_len: number }
  }
  entry_function_id?: string
  arguments_json?: unknown[]
  abi_params?: string[]
  authenticator_kind: string
  transaction_bcs_hex: string
  signed_transaction_bcs_hex: string
  raw_transaction_bcs_hex: string
  authenticator_bcs_hex: string
}

export function userVectors(): UserVector[] {
  return (readJson(path.join(DATA, 'bcs-vectors', 'verified_user_transactions_bcs.json')) as { transactions: UserVector[] }).transactions
}

export function systemVectors(): { kind: string; version: string; hash: string; transaction_bcs_hex: string }[] {
  return (readJson(path.join(DATA, 'bcs-vectors', 'verified_system_transactions_bcs.json')) as { transactions: never[] }).transactions
}

/** The REST JSON of a vector's transaction: from `rest/<network>/`, or the REST sample it was taken from. */
export function restOf(v: UserVector): RestUserTransaction | undefined {
  if (v.network) return restTransactions(v.network).find(t => t.version === v.version) as RestUserTransaction | undefined
  const file = path.join(DATA, 'rest-samples', path.basename(v.source_file))
  return fs.existsSync(file) ? (readJson(file) as RestUserTransaction) : undefined
}

/**
 * Which chains exist and which host serves them. Chain ids collide across families
 * (Aptos mainnet and Ethereum are both 1), so lookups by id are always within a family.
 */
import config from './chains.json' with { type: 'json' }
import type { Family } from '../schema/dataset.ts'

export interface Chain {
  family: Family
  id: number
  code: string
  name: string
  /** Host names that serve the chain; `*` marks the EVM host (any host not claimed by another chain). */
  hosts: string[]
  /** Blocks the ingester stays behind the head with `--to latest`. */
  confirmations: number
  /**
   * Blocks per partition the ingester writes unless told otherwise (else DEFAULT_PARTITION_BLOCKS,
   * src/ingest/run.ts). A unit of that many blocks is held in memory while it is built, ~1 MB a
   * recent mainnet block: Ethereum's 1,000 keep it near 1 GB, where 10,000 would pass Node's heap limit.
   */
  partitionBlocks?: number
}

export const CHAINS: readonly Chain[] = config.chains as Chain[]

/** Resolves a code, EIP-155 id or long name (case-insensitive) within one family. */
export function findChain(family: Family, text: string, chains: readonly Chain[] = CHAINS): Chain | undefined {
  const t = text.trim().toLowerCase()
  return chains.find(c => c.family === family && (c.code.toLowerCase() === t || c.name.toLowerCase() === t || String(c.id) === t))
}

/** Resolves a chain by code or name across families (unambiguous), or by id within the EVM family. */
export function findChainAnyFamily(text: string, chains: readonly Chain[] = CHAINS): Chain | undefined {
  const t = text.trim().toLowerCase()
  return chains.find(c => c.code.toLowerCase() === t || c.name.toLowerCase() === t) ?? findChain('evm', t, chains)
}

/** Storage prefix of a chain: family and id, so a renamed code keeps its data. */
export const chainKey = (chain: { family: Family; id: number }): string => `${chain.family}-${chain.id}`

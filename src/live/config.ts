/**
 * Which chains are followed live, as configuration: `LIVE_CHAINS` holds a JSON
 * object keyed by chain code, e.g.
 * `{"ETH": {"rpc": "https://…", "finality": 64, "syncing_blocks": 5}, "DEVNET": {"rpc": "http://127.0.0.1:8545", "finality": 4, "compact_blocks": 8}}`.
 * EVM chains name a JSON-RPC node (`rpc`), Move-VM chains a fullnode REST API
 * (`rest`, e.g. `{"APTOS": {"rest": "https://…/v1", "compact_blocks": 1000}}`), where
 * a block is a version.
 * Node URLs often carry API keys, so on Cloudflare it is a secret; the Node
 * server reads the same variable.
 */
import { CHAINS, findChainAnyFamily, type Chain } from '../chains/registry.ts'

export interface FollowedChain {
  chain: Chain
  /** JSON-RPC URL of an EVM chain's node. */
  rpc?: string
  /** Fullnode REST URL of a Move-VM chain's node. */
  rest?: string
  /** Blocks below the head that count as final (default: the chain's confirmations). */
  finality?: number
  /** Final blocks per compacted partition (default 32). */
  compactBlocks?: number
  /** Time between polls, ms (default 1,000). */
  pollMs?: number
  /** Blocks behind the node's head before the status says `Syncing` (default 10). */
  syncingBlocks?: number
}

/** Refused LIVE_CHAINS: says which entry is wrong (never prints URLs, which may hold keys). */
export class LiveConfigError extends Error {}

const positive = (v: unknown, what: string): number | undefined => {
  if (v === undefined) return undefined
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw new LiveConfigError(`LIVE_CHAINS: ${what} must be a positive integer`)
  return v
}

/** Parses LIVE_CHAINS; empty or unset text follows nothing. */
export function parseLiveChains(text: string | undefined, chains: readonly Chain[] = CHAINS): FollowedChain[] {
  if (text === undefined || text.trim() === '') return []
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new LiveConfigError('LIVE_CHAINS is not JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new LiveConfigError('LIVE_CHAINS must be a JSON object keyed by chain code')
  return Object.entries(value as Record<string, unknown>).map(([code, entry]) => {
    const chain = findChainAnyFamily(code, chains)
    if (!chain) throw new LiveConfigError(`LIVE_CHAINS: unknown chain "${code}"`)
    const e = entry as Record<string, unknown>
    const key = chain.family === 'move' ? 'rest' : 'rpc'
    const other = key === 'rest' ? 'rpc' : 'rest'
    if (e && typeof e === 'object' && other in e) {
      const only = other === 'rpc' ? 'only EVM chains have a JSON-RPC node' : 'only Move-VM chains have a fullnode REST API'
      throw new LiveConfigError(`LIVE_CHAINS: ${code} is a ${chain.family} chain: give "${key}", not "${other}" (${only})`)
    }
    if (!e || typeof e !== 'object' || typeof e[key] !== 'string' || !/^https?:\/\//.test(e[key] as string))
      throw new LiveConfigError(`LIVE_CHAINS: ${code} needs "${key}", an http(s) URL`)
    return {
      chain,
      [key]: e[key] as string,
      finality: positive(e.finality, `${code}.finality`),
      compactBlocks: positive(e.compact_blocks, `${code}.compact_blocks`),
      pollMs: positive(e.poll_ms, `${code}.poll_ms`),
      syncingBlocks: positive(e.syncing_blocks, `${code}.syncing_blocks`),
    }
  })
}

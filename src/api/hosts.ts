/**
 * Host routing. Chain ids collide across families (Aptos mainnet and Ethereum are
 * both 1), so each Move chain has its own host names in the chain registry; any
 * other host is the EVM host and serves every EVM chain.
 */
import type { Chain } from '../chains/registry.ts'
import type { Family } from '../schema/dataset.ts'

/** What one host serves: a family and the chains of that family it answers for. */
export interface HostRoute {
  family: Family
  chains: Chain[]
}

/** Host name of a Host header or URL authority: lower case, no port, no trailing dot. */
export function hostName(authority: string): string {
  let h = authority.trim().toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.lastIndexOf(':')
  if (colon >= 0) h = h.slice(0, colon)
  return h.endsWith('.') ? h.slice(0, -1) : h
}

/** The chains a host serves: those naming it in `hosts`, else the EVM (`*`) chains. */
export function routeHost(authority: string | null | undefined, chains: readonly Chain[]): HostRoute {
  const name = authority ? hostName(authority) : ''
  const claimed = chains.filter(c => !c.hosts.includes('*') && c.hosts.some(h => h.toLowerCase() === name))
  if (claimed.length > 0) return { family: claimed[0].family, chains: claimed.filter(c => c.family === claimed[0].family) }
  return { family: 'evm', chains: chains.filter(c => c.hosts.includes('*')) }
}

/** The host names that serve a chain, for error messages (`*` shown as "the EVM host"). */
export const hostsOf = (chain: Chain): string => (chain.hosts.includes('*') ? 'the EVM host' : chain.hosts.join(' or '))

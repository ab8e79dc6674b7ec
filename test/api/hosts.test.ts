import { describe, expect, it } from 'vitest'
import { CHAINS, type Chain } from '../../src/chains/registry.ts'
import { hostName, routeHost } from '../../src/api/hosts.ts'

describe('routeHost', () => {
  it('sends each Move host to its own chain, whatever the port or case', () => {
    for (const [host, code] of [
      ['aptos.localhost:8787', 'APTOS'],
      ['MOVEMENT.example.com', 'MOVEMENT'],
      ['movement-testnet.localhost.', 'MOVEMENT_TESTNET'],
    ]) {
      const route = routeHost(host, CHAINS)
      expect(route.family).toBe('move')
      expect(route.chains.map(c => c.code)).toEqual([code])
    }
  })

  it('sends every other host, or none, to the EVM chains', () => {
    for (const host of ['api.example.com', '127.0.0.1:8787', 'localhost', '[::1]:80', 'aptos.localhost.evil.com', '', null]) {
      const route = routeHost(host, CHAINS)
      expect(route.family).toBe('evm')
      expect(route.chains.map(c => c.code)).toEqual(CHAINS.filter(c => c.hosts.includes('*')).map(c => c.code))
    }
  })

  it('follows the registry, not code: a new host is configuration', () => {
    const chains: Chain[] = [...CHAINS, { family: 'move', id: 9, code: 'NEW', name: 'new-chain', hosts: ['new.test'], confirmations: 0 }]
    expect(routeHost('new.test', chains).chains.map(c => c.code)).toEqual(['NEW'])
  })
})

describe('hostName', () => {
  it('drops the port and keeps IPv6 brackets', () => {
    expect(hostName('Example.COM:443')).toBe('example.com')
    expect(hostName('[::1]:8787')).toBe('[::1]')
  })
})

/** The chains tests use, from the registry the product reads (src/chains/chains.json). */
import { CHAINS, type Chain } from '../../src/chains/registry.ts'

export const ETH: Chain = CHAINS.find(c => c.code === 'ETH')!
export const DEVNET: Chain = CHAINS.find(c => c.code === 'DEVNET')!

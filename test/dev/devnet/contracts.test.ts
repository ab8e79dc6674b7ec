import { describe, it, expect } from 'vitest'
import { keccak256 } from 'viem'
import type { Hex } from 'viem'
import { ARTIFACT_PATHS, classifyLog, devnetEventKinds, loadArtifact } from '../../../scripts/dev/devnet/contracts.ts'
import type { ContractName } from '../../../scripts/dev/devnet/contracts.ts'

// The ERC-20/721 Transfer topic, as published by every block explorer.
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
const word = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`

describe('devnet contract artifacts', () => {
  it('loads every artifact with an ABI and 0x-prefixed creation bytecode', () => {
    for (const name of Object.keys(ARTIFACT_PATHS) as ContractName[]) {
      const { abi, bytecode } = loadArtifact(name)
      expect(abi.length).toBeGreaterThan(0)
      expect(bytecode).toMatch(/^0x(?:[0-9a-f]{2})+$/i)
    }
  })

  it('ships the pair and pool bytecode whose init-code hashes the periphery contracts hard-code', () => {
    // UniswapV2Library.pairFor and PoolAddress.POOL_INIT_CODE_HASH compute addresses from these.
    expect(keccak256(loadArtifact('UniswapV2Pair').bytecode)).toBe('0x96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f')
    expect(keccak256(loadArtifact('UniswapV3Pool').bytecode)).toBe('0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54')
  })

  it('tells ERC-20 from ERC-721 transfers by their topic count', () => {
    const kinds = devnetEventKinds()
    expect(classifyLog(kinds, [TRANSFER, word(1), word(2)])).toBe('ERC20.Transfer')
    expect(classifyLog(kinds, [TRANSFER, word(1), word(2), word(3)])).toBe('ERC721.Transfer')
    expect(classifyLog(kinds, [word(7)])).toBe('other')
    expect(classifyLog(kinds, [])).toBe('other')
  })

  it('gives each event kind its own selector and topic count', () => {
    const kinds = devnetEventKinds()
    const keys = new Set(kinds.map(k => `${k.topic0}/${k.topics}`))
    expect(keys.size).toBe(kinds.length)
  })
})

import { describe, it, expect } from 'vitest'
import { accessListFor, buildTransaction, txTypeFor } from '../../../scripts/dev/devnet/blocks.ts'

const POOL = '0x16F9301e11A53519Ce2eBBB666100b4D40C6343E'

describe('devnet transaction building', () => {
  it('mixes all three transaction types within every eight transactions', () => {
    for (let start = 0; start < 16; start++) {
      const types = new Set(Array.from({ length: 8 }, (_, k) => txTypeFor(start + k)))
      expect(types).toEqual(new Set(['legacy', 'eip2930', 'eip1559']))
    }
  })

  it('puts legacy fees on type 0 and 1 and dynamic fees on type 2', () => {
    const byType = new Map(
      Array.from({ length: 8 }, (_, n) => [txTypeFor(n), buildTransaction({ from: 1, to: POOL }, n, 3, 100_000n, 31337)]),
    )
    const legacy = byType.get('legacy')!
    const accessList = byType.get('eip2930')!
    const dynamic = byType.get('eip1559')!
    expect(legacy.gasPrice).toBeGreaterThan(0n)
    expect(legacy.maxFeePerGas).toBeUndefined()
    expect(accessList.gasPrice).toBeGreaterThan(0n)
    expect(accessList.accessList?.[0].address).toBe(POOL)
    expect(dynamic.maxFeePerGas).toBeGreaterThanOrEqual(dynamic.maxPriorityFeePerGas!)
    expect(dynamic.gasPrice).toBeUndefined()
    for (const tx of [legacy, accessList, dynamic]) expect([tx.chainId, tx.nonce, tx.gas]).toEqual([31337, 3, 100_000n])
  })

  it('leaves the access list of a deployment empty', () => {
    expect(accessListFor(undefined)).toEqual([])
    expect(accessListFor(POOL)[0].storageKeys).toHaveLength(2)
  })
})

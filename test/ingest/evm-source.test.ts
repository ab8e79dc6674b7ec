import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { evmSource } from '../../src/ingest/evm-source.ts'
import { wasmKeccak256 } from '../../src/ingest/keccak.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { wantsDex } from '../../src/ingest/run.ts'
import { startReplay, WITH_RECEIPTS, type Replay } from './fixtures.ts'

let replay: Replay
beforeAll(async () => {
  replay = await startReplay()
})
afterAll(() => replay?.stop())

describe('evmSource without the DEX datasets', () => {
  it('gives the same blocks, transactions and logs, and nothing else, without the calls DEX decoding makes', async () => {
    const chain = { family: 'evm' as const, id: 1 }
    const keccak = await wasmKeccak256()
    const withRpc = createRpcClient(replay.url)
    const withoutRpc = createRpcClient(replay.url)
    const withDex = evmSource(withRpc, { keccak, chain })
    const without = evmSource(withoutRpc, { keccak, chain, dex: false })
    expect(without.datasets.map(d => d.storage)).toEqual(['blocks', 'transactions', 'logs'])
    expect(withDex.datasets.map(d => d.storage)).toContain('dex_swaps')
    for (const n of WITH_RECEIPTS) {
      const all = await withDex.fetch([n, n])
      const evm = await without.fetch([n, n])
      expect(Object.keys(evm)).toEqual(['blocks', 'transactions', 'logs'])
      expect(all.dex_swaps.length).toBeGreaterThan(0)
      for (const k of ['blocks', 'transactions', 'logs']) expect(evm[k]).toEqual(all[k])
    }
    // Pool and token resolution asks the node (eth_call); without DEX only the blocks and receipts are fetched.
    expect(withoutRpc.stats.calls).toBe(2 * WITH_RECEIPTS.length)
    expect(withRpc.stats.calls).toBeGreaterThan(withoutRpc.stats.calls)
  })

  it('is what a --datasets choice without a DEX dataset asks for', () => {
    expect(wantsDex(undefined)).toBe(true)
    expect(wantsDex([])).toBe(true)
    expect(wantsDex(['blocks', 'logs'])).toBe(false)
    expect(wantsDex(['logs', 'dex/swaps'])).toBe(true)
    expect(wantsDex(['dex_tokens'])).toBe(true)
  })
})

import { afterAll, describe, expect, it } from 'vitest'
import { encodeAbiParameters } from 'viem'
import type { Hex } from 'viem'
import { findChain } from '../../src/chains/registry.ts'
import { DEX_DATASETS, DEX_PROTOCOLS, dexTokens } from '../../src/datasets/dex.ts'
import { decodeDex, scanBlocks } from '../../src/dex/decode.ts'
import { POOL_CALLS } from '../../src/dex/pools.ts'
import { PROTOCOLS } from '../../src/dex/protocols.ts'
import { TOKEN_CALLS } from '../../src/dex/tokens.ts'
import { poolCacheKey, rpcPoolResolver, tokenCacheKey } from '../../src/ingest/dex.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { storedFields } from '../../src/parquet/write.ts'
import { columnOf, type DatasetDecl } from '../../src/schema/dataset.ts'
import { bytesToInt } from '../../src/schema/kinds.ts'
import { ETH, readRows, recordedResult, startFakeNode, WITH_RECEIPTS, type Call, type FakeNode } from './fixtures.ts'
import { establishPools, fullBlock, type EstablishedPool } from '../dex/recorded.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const chain = findChain('evm', 'ETH')!
afterAll(removeTempDirs)

const blocks = WITH_RECEIPTS.map(fullBlock)
/** Pool keys established from the recorded ERC-20 transfers (test/dex/recorded.ts), independently of src/dex. */
const established = establishPools(blocks.flatMap(b => b.logs))
const word = (type: string, v: unknown): Hex => encodeAbiParameters([{ type }], [v])
const SELECTOR_OF = Object.fromEntries(Object.entries(POOL_CALLS).map(([k, v]) => [v, k]))

/** A recorded node that also answers the pool getters of the established pools (and reverts otherwise). */
function answer(call: Call, pools: Map<string, EstablishedPool>): object {
  if (call.method !== 'eth_call') {
    const out = recordedResult(call)
    return out.error ? { jsonrpc: '2.0', id: call.id, error: out.error } : { jsonrpc: '2.0', id: call.id, result: out.result }
  }
  const [{ to, data }] = call.params as [{ to: string; data: string }]
  const pool = pools.get(to.toLowerCase())
  const getter = SELECTOR_OF[data]
  const revert = { jsonrpc: '2.0', id: call.id, error: { code: 3, message: 'execution reverted' } }
  if (!pool || (getter === 'fee' && pool.fee === null)) return revert
  return {
    jsonrpc: '2.0',
    id: call.id,
    result: getter === 'fee' ? word('uint24', pool.fee) : word('address', pool[getter as 'token0' | 'token1']),
  }
}

const nodeAnswering = (pools: Map<string, EstablishedPool>): Promise<FakeNode> =>
  startFakeNode({
    reply: (calls, _n, batch) => ({ body: JSON.stringify(batch ? calls.map(c => answer(c, pools)) : answer(calls[0], pools)) }),
  })

/** A stored row as comparable values: bytes → hex, `int` columns → bigint. */
function stored(dataset: DatasetDecl, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    storedFields(dataset).map(f => {
      const v = row[columnOf(f)]
      if (v === null || v === undefined) return [f.name, null]
      if (f.kind === 'int') return [f.name, bytesToInt(v as Uint8Array)]
      if (v instanceof Uint8Array) return [f.name, '0x' + Buffer.from(v).toString('hex')]
      return [f.name, v]
    }),
  )
}

/** A decoder row as comparable values. */
function decoded(row: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries({ ...row, removed: false } as Record<string, unknown>).map(([k, v]) => [
      k,
      v instanceof Uint8Array ? '0x' + Buffer.from(v).toString('hex') : v,
    ]),
  )
}

describe('DEX datasets at ingest', () => {
  it('declare every protocol of the registry and store every column the decoder gives', () => {
    expect([...DEX_PROTOCOLS].sort()).toEqual(Object.keys(PROTOCOLS).sort())
  })

  it('writes the rows decodeDex gives for the same blocks, pools before the range resolved by eth_call', async () => {
    expect(established.size).toBeGreaterThan(50)
    const node = await nodeAnswering(established)
    try {
      const { store } = await tempStore()
      for (const n of WITH_RECEIPTS) await runIngest({ chain, rpcUrl: node.url, from: n, to: n, store })
      const infos = new Map(
        [...established].map(([pool, p]) => [
          pool as Hex,
          { token0: p.token0, token1: p.token1, fee: p.fee === null ? null : BigInt(p.fee) },
        ]),
      )
      const want = blocks.map(b => decodeDex(scanBlocks(1, [b]), infos, new Map()))
      const pairs = [
        ['dex_pools', 'pools'],
        ['dex_swaps', 'swaps'],
        ['dex_liquidity', 'liquidity'],
      ] as const
      for (const [storage, key] of pairs) {
        const dataset = DEX_DATASETS.find(d => d.storage === storage)!
        const rows = (await readRows(store, ETH, storage)).map(r => stored(dataset, r))
        const expected = want.flatMap(o => o[key] as object[]).map(decoded)
        expect(rows.length, storage).toBe(expected.length)
        rows.forEach((r, i) => expect(r, `${storage} row ${i}`).toEqual(expected[i]))
      }
      const swaps = (await readRows(store, ETH, 'dex_swaps')).map(r => stored(DEX_DATASETS[1], r))
      expect(swaps.length).toBeGreaterThan(100)
      // Every swap of an established pool has its tokens (from the calls) and is verified.
      const ofEstablished = swaps.filter(s => established.has(s.pool as string))
      expect(ofEstablished.length).toBeGreaterThan(100)
      for (const s of ofEstablished) {
        const p = established.get(s.pool as string)!
        expect([s.token0, s.token1, s.pool_verified, s.protocol]).toEqual([p.token0, p.token1, true, p.protocol])
      }
      // Every pool the logs named was asked about once, then cached in the store.
      const askedFor = (calls: Record<string, Hex>) => {
        const selectors = new Set(Object.values(calls))
        const asked = node.calls.filter(c => c.method === 'eth_call' && selectors.has((c.params![0] as { data: Hex }).data))
        return new Set(asked.map(c => (c.params![0] as { to: string }).to as Hex))
      }
      for (const pool of askedFor(POOL_CALLS)) expect(await store.head(poolCacheKey(ETH, pool))).not.toBeNull()
      // Every token the rows name, once per unit (one block each here) naming it; the fake node reverts their getters.
      const named = new Set<string>()
      for (const storage of ['dex_pools', 'dex_swaps', 'dex_liquidity', 'dex_positions']) {
        const dataset = DEX_DATASETS.find(d => d.storage === storage)!
        for (const r of (await readRows(store, ETH, storage)).map(r => stored(dataset, r)))
          for (const t of [r.token0, r.token1]) if (t !== null) named.add(`${r.block_number}:${t}`)
      }
      const tokens = (await readRows(store, ETH, dexTokens.storage)).map(r => stored(dexTokens, r))
      expect(named.size).toBeGreaterThan(50)
      expect(tokens.map(t => `${t.block_number}:${t.address}`).sort()).toEqual([...named].sort())
      expect(askedFor(TOKEN_CALLS)).toEqual(new Set(tokens.map(t => t.address)))
      for (const t of tokens) {
        expect([t.symbol, t.name, t.decimals]).toEqual([null, null, null])
        expect(await store.head(tokenCacheKey(ETH, t.address as Hex))).not.toBeNull()
      }
    } finally {
      await node.close()
    }
  })

  it('caches answers and reverts in the store: a second resolver asks nothing', async () => {
    const node = await nodeAnswering(established)
    try {
      const { store } = await tempStore()
      const [pool] = [...established.keys()] as Hex[]
      const stranger = '0x000000000000000000000000000000000000dead' as Hex
      const rpc = createRpcClient(node.url)
      const first = await rpcPoolResolver(rpc, store, ETH as { family: 'evm'; id: number }).resolve(1, [pool, stranger])
      expect(first.get(pool)?.token0).toBe(established.get(pool)!.token0)
      expect(first.get(stranger)).toBeNull()
      const calls = node.calls.length
      const second = await rpcPoolResolver(rpc, store, ETH as { family: 'evm'; id: number }).resolve(1, [pool, stranger])
      expect(node.calls.length).toBe(calls)
      expect(second).toEqual(first)
    } finally {
      await node.close()
    }
  })

  it('a node without eth_call leaves tokens null and caches nothing', async () => {
    const node = await startFakeNode()
    try {
      const { store } = await tempStore()
      const [pool] = [...established.keys()] as Hex[]
      const got = await rpcPoolResolver(createRpcClient(node.url), store, ETH as { family: 'evm'; id: number }).resolve(1, [pool])
      expect(got.get(pool)).toBeNull()
      expect(await store.head(poolCacheKey(ETH, pool))).toBeNull()
    } finally {
      await node.close()
    }
  })
})

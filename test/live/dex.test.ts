/**
 * The DEX datasets on the live path: a devnet running real Uniswap v2/v3 (the npm bytecode)
 * followed by the Node server; a subscriber to dex/swaps receives every swap of the new
 * blocks, equal to decodeDex of the same blocks read from the node.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createPublicClient, http, parseAbi, type Hex } from 'viem'
import { decodeDex, poolsToResolve, scanBlocks, type DexBlock } from '../../src/dex/decode.ts'
import type { PoolInfo } from '../../src/dex/pools.ts'
import { startLiveDevnet, type LiveDevnet } from '../../scripts/dev/live-demo.ts'
import { rowsOf, startLiveServer, wsClient, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs } from '../support/stores.ts'

let devnet: LiveDevnet | undefined
let server: LiveServer | undefined
afterEach(async () => {
  await server?.close()
  await devnet?.stop()
  server = devnet = undefined
  await removeTempDirs()
})

async function nodeBlock(url: string, n: number): Promise<DexBlock> {
  const call = async (method: string, params: unknown[]) =>
    (
      (await (
        await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      ).json()) as { result: any }
    ).result
  const block = await call('eth_getBlockByNumber', [`0x${n.toString(16)}`, true])
  const receipts = await call('eth_getBlockReceipts', [`0x${n.toString(16)}`])
  return { ...block, logs: receipts.flatMap((r: { logs: unknown[] }) => r.logs) }
}

describe('dex/swaps over WebSockets', () => {
  it('streams the swaps of new blocks as decodeDex decodes them', async () => {
    devnet = await startLiveDevnet({ intervalSeconds: 0.5 })
    server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: devnet.rpcUrl, options: { finalityDepth: 4, compactBlocks: 2 } }] })
    const client = createPublicClient({ transport: http(devnet.rpcUrl) })
    const start = Number(await client.getBlockNumber()) + 1
    const ws = await wsClient(`${server.wsUrl}/v1/api/dex/swaps?chains=DEVNET&from_block=${start}`, {
      headers: { authorization: basic('alice', 'secret') },
    })
    await ws.waitFor(m => m.type === 'subscribed')
    await ws.waitFor(m => m.type === 'rows' && m.rows.length > 0)
    const last = (await ws.waitFor(m => m.type === 'progress' && m.cursor >= start + 3)).cursor as number
    const blocks = await Promise.all(Array.from({ length: last - start + 1 }, (_, i) => nodeBlock(devnet!.rpcUrl, start + i)))
    // Pools created before the subscription: their getters, asked here with viem.
    const scan = scanBlocks(31337, blocks)
    const abi = parseAbi([
      'function token0() view returns (address)',
      'function token1() view returns (address)',
      'function fee() view returns (uint24)',
    ])
    const pools = new Map<Hex, PoolInfo>()
    for (const pool of poolsToResolve(scan)) {
      const read = (functionName: 'token0' | 'token1' | 'fee') =>
        client.readContract({ address: pool, abi, functionName }).catch(() => null)
      const [token0, token1, fee] = await Promise.all([read('token0'), read('token1'), read('fee')])
      pools.set(pool, {
        token0: (token0 as Hex).toLowerCase() as Hex,
        token1: (token1 as Hex).toLowerCase() as Hex,
        fee: fee === null ? null : BigInt(fee as number),
      })
    }
    const want = decodeDex(scan, pools, new Map()).swaps
    expect(want.every(s => s.pool_verified)).toBe(true)
    const got = rowsOf(ws.messages).filter(r => Number(r.block_number) <= last)
    expect(want.length).toBeGreaterThan(0)
    expect(got.map(r => [r.transaction_hash, r.log_index, r.amount0, r.amount1, r.price, r.pool_verified])).toEqual(
      want.map(s => [
        '0x' + Buffer.from(s.transaction_hash).toString('hex'),
        '0x' + s.log_index.toString(16),
        String(s.amount0),
        String(s.amount1),
        s.price,
        s.pool_verified,
      ]),
    )
  }, 120_000)
})

describe('dex/tokens on a followed chain', () => {
  it('is answered from the partitions alone: the live window holds no token rows', async () => {
    devnet = await startLiveDevnet({ intervalSeconds: 0.5 })
    server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: devnet.rpcUrl, options: { finalityDepth: 4, compactBlocks: 2 } }] })
    const headers = { authorization: basic('alice', 'secret') }
    // Following: the swaps of the window are served over HTTP above the partitions.
    let swaps: Response
    do swaps = await fetch(`${server.url}/v1/api/dex/swaps?chains=DEVNET&from_block=0&limit=1`, { headers })
    while (!swaps.headers.get('x-finalized-block'))
    const tokens = await fetch(`${server.url}/v1/api/dex/tokens?chains=DEVNET&from_block=0`, { headers })
    // This lake has no token partitions: the partitions' answer, not the window's failure (a 500 before).
    expect(tokens.status, await tokens.clone().text()).toBe(404)
    expect(((await tokens.json()) as { error: { code: string } }).error.code).toBe('no_data')
    // Its stream could not go past the partitions: refused at the upgrade, saying so.
    await expect(wsClient(`${server.wsUrl}/v1/api/dex/tokens?chains=DEVNET&from_block=0`, { headers })).rejects.toMatchObject({
      status: 400,
      body: { error: { code: 'live_unavailable', message: expect.stringContaining('read it over HTTP') } },
    })
  })
})

/**
 * The bundled sample (what `npm start` serves) is complete and honest: every sample chain
 * has data in every dataset, and the synthetic Move chains say so in their status records.
 */
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../src/http/app.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { fsStore } from '../../src/store/fs.ts'
import { SAMPLE_LABEL } from '../../scripts/dev/move-sample.ts'

const store = fsStore(fileURLToPath(new URL('../../partitions-manifest/sample', import.meta.url)))
const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers('dev:dev') })
const get = async (host: string, path: string) => {
  const res = await app.fetch(new Request(`http://${host}${path}`, { headers: { authorization: `Basic ${btoa('dev:dev')}` } }))
  expect(res.status, `${host}${path}`).toBe(200)
  return res
}

describe('the bundled sample', () => {
  it('labels the synthetic Move chains and serves data on every host', async () => {
    for (const [host, code] of [
      ['aptos.localhost', 'APTOS'],
      ['movement.localhost', 'MOVEMENT'],
      ['movement-testnet.localhost', 'MOVEMENT_TESTNET'],
    ]) {
      const [record] = (await (await get(host, `/v1/api/status?chains=${code}`)).json()) as Record<string, unknown>[]
      expect(record).toMatchObject({ chain_code: code, status: 'Ok', label: SAMPLE_LABEL })
      const rows = (await (await get(host, `/v1/api/transactions?chains=${code}&from_version=0&to_version=latest`)).text())
        .trim()
        .split('\n')
      expect(rows.length).toBeGreaterThan(200)
    }
  })

  it('serves the devnet as recorded chain data, with Uniswap logs in every partition', async () => {
    const records = (await (await get('127.0.0.1', '/v1/api/status')).json()) as { chain_code: string }[]
    expect(records.find(r => r.chain_code === 'DEVNET')).toMatchObject({ status: 'Ok', label: null })
    // v2 Swap(address,uint256,uint256,uint256,uint256,address) and v3 Swap(address,address,int256,int256,uint160,uint128,int24)
    const v2 = '0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822'
    const v3 = '0xc42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67'
    const res = await get('127.0.0.1', `/v1/api/logs?chains=DEVNET&from_block=0&topic0__in=${v2},${v3}&fields=block_number,topic0`)
    const swaps = (await res.text())
      .trim()
      .split('\n')
      .map(l => JSON.parse(l))
    expect(swaps.filter(s => s.topic0 === v2).length).toBeGreaterThan(100)
    expect(swaps.filter(s => s.topic0 === v3).length).toBeGreaterThan(100)
    expect(new Set(swaps.map(s => Math.floor(Number(s.block_number) / 100))).size).toBe(3)
  })
})

describe('the bundled sample: DEX datasets', () => {
  type Json = Record<string, unknown>
  const lines = async (path: string): Promise<Json[]> =>
    (await (await get('127.0.0.1', path)).text())
      .trim()
      .split('\n')
      .map(l => JSON.parse(l) as Json)
  const hexOf = (v: unknown) => (v instanceof Uint8Array ? '0x' + Buffer.from(v).toString('hex') : v)
  /** A decoder row as the JSON format writes it: bytes as hex, bigints as decimal text (u64 kinds aside). */
  const asJson = (row: object, fields: Json): Json =>
    Object.fromEntries(
      Object.keys(fields).map(k => {
        const v = (row as Json)[k]
        if (k === 'chain') return [k, 31337]
        if (k === 'removed') return [k, false]
        if (typeof v === 'bigint') {
          if (k === 'block_number' || k === 'log_index') return [k, '0x' + v.toString(16)]
          if (k === 'block_timestamp' || k === 'transaction_index' || k === 'fee') return [k, Number(v)]
          return [k, v.toString()]
        }
        return [k, hexOf(v) ?? null]
      }),
    )

  it('serves dex/swaps over HTTP equal to decodeDex of the same blocks, read as logs over HTTP', async () => {
    const { decodeDex, scanBlocks } = await import('../../src/dex/decode.ts')
    const logs = await lines(
      '/v1/api/logs?chains=DEVNET&from_block=0&fields=block_number,block_hash,block_timestamp,transaction_index,transaction_hash,log_index,address,topic0,topic1,topic2,topic3,data',
    )
    const txs = await lines('/v1/api/transactions?chains=DEVNET&from_block=0&fields=block_number,transaction_index,hash,from,to')
    const blocks = new Map<
      string,
      { number: `0x${string}`; hash: `0x${string}`; timestamp: `0x${string}`; transactions: Json[]; logs: Json[] }
    >()
    for (const l of logs) {
      const n = l.block_number as `0x${string}`
      if (!blocks.has(n))
        blocks.set(n, {
          number: n,
          hash: l.block_hash as `0x${string}`,
          timestamp: `0x${(l.block_timestamp as number).toString(16)}`,
          transactions: [],
          logs: [],
        })
      blocks.get(n)!.logs.push({
        address: l.address,
        topics: [l.topic0, l.topic1, l.topic2, l.topic3].filter(t => t !== null),
        data: l.data,
        logIndex: l.log_index,
        transactionIndex: `0x${(l.transaction_index as number).toString(16)}`,
        transactionHash: l.transaction_hash,
      })
    }
    for (const t of txs) {
      const b = blocks.get(t.block_number as string)
      if (b) b.transactions[t.transaction_index as number] = { hash: t.hash, from: t.from, to: t.to }
    }
    const out = decodeDex(scanBlocks(31337, [...blocks.values()] as never), new Map(), new Map())
    const served = await lines('/v1/api/dex/swaps?chains=DEVNET&from_block=0')
    expect(served.length).toBeGreaterThan(500)
    expect(served.length).toBe(out.swaps.length)
    served.forEach((row, i) => expect(row, `swap ${i}`).toEqual(asJson(out.swaps[i], row)))
    // Every swap of the devnet's pools is verified, with its tokens and a price.
    expect(served.every(s => s.pool_verified === true && s.token0 !== null && s.price !== null)).toBe(true)

    // The same rows as CSV: one line per swap, signed amounts as decimal text.
    const csv = (await (await get('127.0.0.1', '/v1/api/dex/swaps?chains=DEVNET&from_block=0&format=csv&fields=amount0,amount1')).text())
      .trim()
      .split('\n')
    expect(csv[0]).toBe('amount0,amount1')
    expect(csv.slice(1)).toEqual(out.swaps.map(s => `${s.amount0},${s.amount1}`))
    // Filters on a signed amount: only paid-in token0.
    const paidIn = await lines('/v1/api/dex/swaps?chains=DEVNET&from_block=0&amount0__gte=1&fields=amount0')
    expect(paidIn.length).toBe(out.swaps.filter(s => s.amount0 >= 1n).length)
    expect(paidIn.length).toBeGreaterThan(0)
  })

  it('serves dex/pools, dex/liquidity and dex/positions', async () => {
    const pools = await lines('/v1/api/dex/pools?chains=DEVNET&from_block=0')
    expect(pools.length).toBeGreaterThan(2)
    expect(new Set(pools.map(p => p.protocol))).toEqual(new Set(['uniswap_v2', 'uniswap_v3']))
    const liquidity = await lines('/v1/api/dex/liquidity?chains=DEVNET&from_block=0&event=collect')
    expect(liquidity.length).toBeGreaterThan(0)
    const positions = await lines('/v1/api/dex/positions?chains=DEVNET&from_block=0')
    expect(new Set(positions.map(p => p.event))).toEqual(new Set(['increase_liquidity', 'decrease_liquidity', 'collect', 'transfer']))
  })

  it('serves dex/tokens: every token the pools name, with what its getters answer', async () => {
    const pools = await lines('/v1/api/dex/pools?chains=DEVNET&from_block=0')
    const tokens = await lines('/v1/api/dex/tokens?chains=DEVNET&from_block=0')
    expect(new Set(tokens.map(t => t.address))).toEqual(new Set(pools.flatMap(p => [p.token0, p.token1])))
    const weth = await lines(`/v1/api/dex/tokens?chains=DEVNET&from_block=0&symbol=WETH&limit=1`)
    expect(weth).toMatchObject([{ chain: 31337, symbol: 'WETH', name: 'Wrapped Ether', decimals: 18 }])
    const byAddress = await lines(`/v1/api/dex/tokens?chains=DEVNET&from_block=0&address=${weth[0].address}`)
    expect(byAddress.length).toBeGreaterThan(0)
    expect(byAddress.every(t => t.symbol === 'WETH')).toBe(true)
  })
})

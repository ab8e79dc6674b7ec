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

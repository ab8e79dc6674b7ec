/**
 * The OpenAPI document is useful as well as valid: types derived from it by
 * openapi-typescript (test/support/openapi-evm.ts, kept fresh here) drive openapi-fetch
 * against the running Node server over the bundled sample. The type check (npm run lint)
 * proves the types refuse what the API refuses; this file proves the calls they allow work
 * and return what an untyped request returns.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import createClient from 'openapi-fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { fsStore } from '../../src/store/fs.ts'
import { TYPES_FILE, typesOf } from '../../scripts/dev/openapi-types.ts'
import type { components, paths } from '../support/openapi-evm.ts'
import { basic } from '../support/basic.ts'

const AUTH = basic('dev', 'dev')
let server: NodeServer

beforeAll(async () => {
  const store = fsStore(fileURLToPath(new URL('../../partitions-manifest/sample', import.meta.url)))
  server = await startNodeServer({ store, users: await parseUsers('dev:dev') })
})
afterAll(() => server?.close())

const client = () => createClient<paths>({ baseUrl: server.url, headers: { Authorization: AUTH } })

describe('a client typed from the OpenAPI document', () => {
  it('is derived from the document the server serves (npx node scripts/dev/openapi-types.ts rewrites it)', async () => {
    const served = (await (await fetch(`${server.url}/v1/api/openapi.json`)).json()) as object
    expect(readFileSync(TYPES_FILE, 'utf8')).toBe(await typesOf(served))
  })

  it('queries logs with typed parameters and gets typed records, as an untyped request does', async () => {
    const query = { chains: 'DEVNET', from_block: '100', to_block: '0x6e', format: 'json', log_index__lte: '0x3' } as const
    const { data, error, response } = await client().GET('/v1/api/logs', { params: { query } })
    expect(error).toBeUndefined()
    expect(response.status).toBe(200)
    const records: components['schemas']['evm_logs'][] = data as components['schemas']['evm_logs'][]
    expect(records.length).toBeGreaterThan(5)
    expect(records.every(r => BigInt(r.block_number) >= 100n && BigInt(r.block_number) <= 110n && BigInt(r.log_index) <= 3n)).toBe(true)
    const untyped = await fetch(`${server.url}/v1/api/logs?${new URLSearchParams(query)}`, { headers: { authorization: AUTH } })
    expect(records).toEqual(await untyped.json())
    expect(response.headers.get('x-block-range')).toBe('100-110')
  })

  it('reads the status records and a typed error envelope', async () => {
    const status = await client().GET('/v1/api/status', { params: { query: { chains: 'DEVNET', format: 'json' } } })
    expect(status.response.status).toBe(200)
    const records: components['schemas']['Status'][] = status.data!
    expect(records.map(r => [r.chain_code, r.status, r.lag])).toEqual([['DEVNET', 'Ok', null]])
    const bad = await client().GET('/v1/api/blocks', {
      params: { query: { chains: 'DEVNET', from_block: '5', to_block: '4', format: 'json' } },
    })
    expect(bad.response.status).toBe(400)
    expect(bad.error?.error.code).toBe('invalid_range')
  })

  it('the types refuse a parameter the API does not have, and the API does too', async () => {
    // @ts-expect-error: `colour` is no parameter of /v1/api/blocks in the document.
    const query: NonNullable<paths['/v1/api/blocks']['get']['parameters']['query']> = { chains: 'DEVNET', colour: 'red' }
    const res = await client().GET('/v1/api/blocks', { params: { query } })
    expect(res.response.status).toBe(400)
    expect(res.error?.error.parameter).toBe('colour')
  })
})

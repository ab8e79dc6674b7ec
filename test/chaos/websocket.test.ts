/**
 * Chaos over WebSockets on the Node server: history subscriptions (with `to_block`) of
 * every EVM dataset and of Move transactions, served from the bundled sample through the
 * fault-injecting store. Each must deliver exactly the fault-free rows and then `end` and
 * close 1000, or say what failed (an `error` message) and close with 4503, never end
 * normally with rows missing or altered.
 */
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { StreamSlots, WindowLimiter } from '../../src/api/limits.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { wsClient, type Json } from '../live/helpers.ts'
import { basic } from '../support/basic.ts'
import { faultyStore, type Faults } from './faulty-store.ts'

const SAMPLE = fileURLToPath(new URL('../../partitions-manifest/sample/', import.meta.url))
const AUTH = basic('dev', 'dev')
const SUBSCRIPTIONS = [
  { host: 'api.example.com', path: '/v1/api/blocks?chains=DEVNET&from_block=0&to_block=219' },
  { host: 'api.example.com', path: '/v1/api/transactions?chains=DEVNET&from_block=0&to_block=219' },
  { host: 'api.example.com', path: '/v1/api/logs?chains=DEVNET&from_block=0&to_block=219' },
  { host: 'aptos.localhost', path: '/v1/api/transactions?chains=APTOS&from_version=0&to_version=200' },
]

interface Ending {
  code: number
  rows: Json[]
  errors: Json[]
  end: boolean
}

async function serverOver(store: ObjectStore): Promise<NodeServer> {
  return startNodeServer({
    store,
    users: await parseUsers('dev:dev'),
    requests: new WindowLimiter({ limit: 1_000_000 }),
    streams: new StreamSlots(1_000),
    waitForNodes: false,
  })
}

async function subscribe(server: NodeServer, s: (typeof SUBSCRIPTIONS)[number]): Promise<Ending> {
  const url = server.url.replace('http', 'ws') + s.path
  const client = await wsClient(url, { headers: { authorization: AUTH, host: `${s.host}:${server.port}` } })
  // A subscription that neither ends nor fails would hang its client: that is a failure too.
  const { code } = await Promise.race([
    client.closed,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${s.path}: no close within 30 s (${JSON.stringify(client.messages.at(-1))})`)), 30_000),
    ),
  ])
  return {
    code,
    rows: client.messages.filter(m => m.type === 'rows').flatMap(m => m.rows),
    errors: client.messages.filter(m => m.type === 'error'),
    end: client.messages.some(m => m.type === 'end'),
  }
}

let clean: ObjectStore
const reference: Ending[] = []

beforeAll(async () => {
  clean = fsStore(SAMPLE)
  const server = await serverOver(clean)
  try {
    for (const s of SUBSCRIPTIONS) reference.push(await subscribe(server, s))
  } finally {
    await server.close()
  }
  for (const r of reference) {
    expect(r).toMatchObject({ code: 1000, end: true, errors: [] })
    expect(r.rows.length).toBeGreaterThan(100)
  }
}, 120_000)

const SCENARIOS: [string, Faults][] = [
  ['throttling', { throttle: 0.1 }],
  ['timeouts', { timeout: 0.08, timeoutMs: 20 }],
  ['short bodies', { shortBody: 0.1 }],
  ['partitions vanish after the manifest named them', { vanish: /\.parquet$/ }],
  ['latency and everything at once', { latencyMs: 10, throttle: 0.04, timeout: 0.04, timeoutMs: 10, shortBody: 0.04 }],
]

describe('chaos over WebSockets (Node server)', () => {
  let servers: NodeServer[] = []
  afterAll(async () => {
    await Promise.all(servers.map(s => s.close()))
    servers = []
  })

  for (const [name, faults] of SCENARIOS) {
    it(`delivers every row then end and 1000, or an error and 4503, under ${name}`, async () => {
      const tally = { exact: 0, failed: 0 }
      for (const seed of [1, 2, 3]) {
        const { store } = faultyStore(clean, faults, seed)
        const server = await serverOver(store)
        servers.push(server)
        for (const [i, s] of SUBSCRIPTIONS.entries()) {
          const got = await subscribe(server, s)
          if (got.code === 1000) {
            expect(got.end, s.path).toBe(true)
            expect(got.rows, `${s.path} closed 1000 with other rows`).toEqual(reference[i].rows)
            tally.exact++
          } else {
            expect(got.code, `${s.path}: ${JSON.stringify(got.errors)}`).toBe(4503)
            expect(got.end).toBe(false)
            expect(['storage_unavailable', 'storage_corrupt']).toContain(got.errors[0]?.code)
            tally.failed++
          }
        }
      }
      expect(tally.failed).toBeGreaterThan(0)
    }, 300_000)
  }
})

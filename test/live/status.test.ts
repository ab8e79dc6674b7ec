/**
 * The status of a chain followed live says how far the follower is behind the node's head:
 * `Syncing` with the lag in blocks and seconds past the threshold, `Ok` within it. The
 * follower is made to lag on purpose (one block per poll while the devnet mines twenty at
 * once, from a node that takes 100 ms per block), against a real anvil and the Node server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WindowLimiter } from '../../src/api/limits.ts'
import { chainKey } from '../../src/chains/registry.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { parseLiveChains } from '../../src/live/config.ts'
import { evmLiveSource, type LiveSource } from '../../src/live/source.ts'
import { followSpecs } from '../../src/node/live.ts'
import { Chainlet, startLiveServer, type Json, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET, ETH } from '../support/chains.ts'
import { removeTempDirs } from '../support/stores.ts'

const THRESHOLD = 5
let chain: Chainlet
let server: LiveServer

async function status(): Promise<Json[]> {
  const res = await fetch(`${server.url}/v1/api/status?format=json`, { headers: { authorization: basic('alice', 'secret') } })
  expect(res.status).toBe(200)
  return (await res.json()) as Json[]
}
const devnet = async (): Promise<Json> => (await status()).find(r => r.chain_code === 'DEVNET')

/** Polls the status until `test` holds for the DEVNET record; returns that record. */
async function until(test: (r: Json) => boolean): Promise<Json> {
  for (;;) {
    const r = await devnet()
    if (test(r)) return r
    await new Promise(done => setTimeout(done, 25))
  }
}

beforeAll(async () => {
  chain = await Chainlet.start()
  await chain.mine([[1, '0x01']])
  const node = evmLiveSource(createRpcClient(chain.url))
  const slow: LiveSource = {
    datasets: node.datasets,
    latest: () => node.latest(),
    headers: numbers => node.headers(numbers),
    blocks: async (from, to) => {
      await new Promise(r => setTimeout(r, 100))
      return node.blocks(from, to)
    },
  }
  server = await startLiveServer({
    // The status is polled every 25 ms, beyond the default rate a user may send.
    requests: new WindowLimiter({ limit: 1_000_000 }),
    follow: [
      {
        chain: DEVNET,
        source: slow,
        pollIntervalMs: 150,
        options: { finalityDepth: 3, compactBlocks: 2, maxBlocksPerTick: 1, syncingBlocks: THRESHOLD },
      },
    ],
  })
})
afterAll(async () => {
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

describe('status of a live-followed chain', () => {
  it('is Ok with its lag when the follower is at the head; chains not followed have no lag', async () => {
    const head = await chain.head()
    const r = await until(r => r.lag?.blocks === 0)
    expect(r).toMatchObject({ status: expect.stringMatching(/^(Ok|NoData)$/), lag: { blocks: 0, seconds: 0 } })
    // a young chain has no final block yet: its height is null or a block, never -1 read as 2^64 - 1
    expect(r.latest_block_height).toBe(head)
    expect(r.finalized_block_height === null || (r.finalized_block_height >= 0 && r.finalized_block_height <= head)).toBe(true)
    expect(server.service.chains.get(chainKey(DEVNET))?.head()).toBe(head)
    expect((await status()).find(r => r.chain_code === ETH.code)).toMatchObject({ status: 'NoData', lag: null })
  })

  it('is Syncing, with blocks and seconds behind, past the threshold, then Ok again once caught up', async () => {
    for (let i = 0; i < 20; i++) await chain.mine([[1 + (i % 3), '0x02']])
    const syncing = await until(r => r.status === 'Syncing')
    expect(syncing.lag.blocks).toBeGreaterThan(THRESHOLD)
    expect(syncing.lag.blocks).toBeLessThanOrEqual(20)
    // Twenty blocks at 100 ms each keep it behind for 2 s: seconds count from when it first saw itself behind.
    const later = await until(r => r.lag.seconds >= 1 || r.lag.blocks === 0)
    expect(later.lag.seconds).toBeGreaterThanOrEqual(1)
    expect(later.lag.blocks).toBeGreaterThan(0)
    const within = await until(r => r.status !== 'Syncing')
    expect(within.lag.blocks).toBeLessThanOrEqual(THRESHOLD)
    const caughtUp = await until(r => r.lag.blocks === 0)
    expect(caughtUp).toMatchObject({ status: 'Ok', lag: { blocks: 0, seconds: 0 } })
  })

  it('takes the threshold from LIVE_CHAINS syncing_blocks', () => {
    const [f] = parseLiveChains('{"DEVNET": {"rpc": "http://127.0.0.1:8545", "syncing_blocks": 7}}')
    expect(followSpecs([f])[0].options).toMatchObject({ syncingBlocks: 7 })
    expect(() => parseLiveChains('{"DEVNET": {"rpc": "http://127.0.0.1:8545", "syncing_blocks": 0}}')).toThrow(/syncing_blocks/)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chainKey } from '../../src/chains/registry.ts'
import { runIngest } from '../../src/ingest/run.ts'
import type { LiveChain } from '../../src/live/hub.ts'
import { readRoot } from '../../src/ingest/run.ts'
import { Chainlet, cursorOf, rowsOf, startLiveServer, wsClient, type Json, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const ALICE = { authorization: basic('alice', 'secret') }
const STORED_TO = 7

let chain: Chainlet
let server: LiveServer
let live: LiveChain

/** Mines `n` blocks with one to three logs each. */
async function mineSome(n: number): Promise<number> {
  let head = 0
  for (let i = 0; i < n; i++)
    head = await chain.mine(
      Array.from(
        { length: 1 + (i % 3) },
        (_, k) => [1 + ((i + k) % 3), `0x${(i * 16 + k).toString(16).padStart(4, '0')}`] as [number, `0x${string}`],
      ),
    )
  return head
}

/** Waits until the live chain has compacted past block `n`. */
async function compactedPast(n: number): Promise<void> {
  while (live.window()!.anchor.number < n) {
    await mineSome(1)
    await new Promise(r => setTimeout(r, 20))
  }
}

beforeAll(async () => {
  chain = await Chainlet.start()
  await mineSome(STORED_TO + 3)
  const store = (await tempStore()).store
  await runIngest({ chain: DEVNET, rpcUrl: chain.url, from: 0, to: STORED_TO, store, partitionBlocks: 4 })
  server = await startLiveServer({ store, follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 3, compactBlocks: 2 } }] })
  live = server.service.chains.get(chainKey(DEVNET))!
})
afterAll(async () => {
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

describe('replay from partitions through the window to the head', () => {
  it('anchors the window on the last stored block', () => {
    expect(live.window()!.anchor.number).toBeGreaterThanOrEqual(STORED_TO)
  })

  it('sends every log from block 0 exactly once while blocks are compacted underneath', async () => {
    const client = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=0`, { headers: ALICE })
    const anchorBefore = live.window()!.anchor.number
    await compactedPast(anchorBefore + 4)
    const head = await chain.head()
    await client.waitFor(m => m.type === 'progress' && m.cursor === head)
    expect(rowsOf(client.messages)).toEqual(await chain.logRecords(0, head))
    const cursors = client.messages.filter(m => m.type === 'progress').map(m => m.cursor)
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b))
    expect(client.messages.some(m => m.type === 'progress' && m.live)).toBe(true)
    expect(client.messages.some(m => m.type === 'gap')).toBe(false)
    client.close()
  })

  it('published compacted blocks: the manifest covers up to the window anchor', async () => {
    await live.settled()
    const root = await readRoot(server.store, { family: 'evm', id: 31337, code: 'DEVNET' })
    for (const d of ['blocks', 'transactions', 'logs']) expect(root!.datasets[d].coverage).toEqual([[0, live.window()!.anchor.number]])
  })

  it('a client killed in the stored part resumes from its cursor into the window: nothing lost or repeated', async () => {
    const kept: Json[] = []
    const first = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=0&to_block=latest`, { headers: ALICE })
    const killAt = 4
    await first.waitFor(m => m.type === 'progress' && m.cursor >= killAt)
    first.kill()
    const upTo = first.messages.findIndex(m => m.type === 'progress' && m.cursor >= killAt)
    const cursor = first.messages[upTo].cursor
    expect(cursor).toBeLessThan(live.window()!.low)
    kept.push(...rowsOf(first.messages.slice(0, upTo + 1)))
    const head = await mineSome(2)
    const second = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${cursor + 1}`, { headers: ALICE })
    await second.waitFor(m => m.type === 'progress' && m.cursor === head)
    const all = [...kept, ...rowsOf(second.messages)]
    expect(all).toEqual(await chain.logRecords(0, head))
    second.close()
  })

  it('a client killed in the window resumes after those blocks were compacted: nothing lost or repeated', async () => {
    const w = live.window()!
    const from = w.low
    const first = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${from}`, { headers: ALICE })
    await first.waitFor(m => m.type === 'progress' && m.cursor >= from + 1)
    first.kill()
    const upTo = first.messages.findIndex(m => m.type === 'progress' && m.cursor >= from + 1)
    const cursor = first.messages[upTo].cursor as number
    const kept = rowsOf(first.messages.slice(0, upTo + 1))
    await compactedPast(cursor + 2)
    const head = await chain.head()
    const second = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${cursor + 1}`, { headers: ALICE })
    await second.waitFor(m => m.type === 'progress' && m.cursor >= head)
    expect(cursorOf(second.messages)).toBe(head)
    expect([...kept, ...rowsOf(second.messages)]).toEqual(await chain.logRecords(from, head))
    second.close()
  })

  it('blocks and transactions replay across the boundary too', async () => {
    const head = await chain.head()
    const blocks = await wsClient(
      `${server.wsUrl}/v1/api/blocks?chains=DEVNET&from_block=0&to_block=${head}&fields=block_number,hash,parent_hash`,
      { headers: ALICE },
    )
    expect((await blocks.closed).code).toBe(1000)
    const rows = rowsOf(blocks.messages)
    expect(rows.map(r => r.block_number)).toEqual(Array.from({ length: head + 1 }, (_, i) => '0x' + i.toString(16)))
    for (let i = 1; i < rows.length; i++) expect(rows[i].parent_hash).toBe(rows[i - 1].hash)
    expect(rows.at(-1).hash).toBe(await chain.blockHash(head))
  })
})

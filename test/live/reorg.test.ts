import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { chainKey } from '../../src/chains/registry.ts'
import { addressTopic, Chainlet, rowsOf, startLiveServer, wsClient, type Json, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs } from '../support/stores.ts'

const ALICE = { authorization: basic('alice', 'secret') }

let chain: Chainlet | undefined
let server: LiveServer | undefined

afterEach(async () => {
  await server?.close()
  await chain?.stop()
  server = chain = undefined
})
afterAll(removeTempDirs)

/** Rows of the messages that follow the first reorg message. */
const afterReorg = (messages: readonly Json[]) => messages.slice(messages.findIndex(m => m.type === 'reorg') + 1)

describe('reorgs detected by parent hash', () => {
  it('tells each subscriber the fork point and dropped hashes, resends its dropped rows as removed, then the new rows', async () => {
    chain = await Chainlet.start()
    server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 8, compactBlocks: 2 } }] })
    const start = (await chain.head()) + 1
    const all = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${start}`, { headers: ALICE })
    const one = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${start}&topic2=${addressTopic(chain.address(1))}`, {
      headers: ALICE,
    })
    await all.waitFor(m => m.type === 'subscribed')
    await one.waitFor(m => m.type === 'subscribed')
    const b1 = await chain.mine([
      [1, '0x01'],
      [2, '0x02'],
    ])
    const b2 = await chain.mine([[1, '0x03']])
    const b3 = await chain.mine([
      [2, '0x04'],
      [1, '0x05'],
    ])
    await all.waitFor(m => m.type === 'progress' && m.cursor === b3)
    await one.waitFor(m => m.type === 'progress' && m.cursor === b3)
    const oldRows = await chain.logRecords(b2, b3)
    const oldHashes = [await chain.blockHash(b2), await chain.blockHash(b3)]

    // Replace b2 and b3: the new b2 holds one call from account 3 (anvil never sends removed logs).
    await chain.syncNonces()
    await chain.reorg(2, [[await chain.signedCall(3, '0x0a0b'), 0]])
    const newHashes = [await chain.blockHash(b2), await chain.blockHash(b3)]
    expect(newHashes).not.toEqual(oldHashes)
    const progressAfter = (c: typeof all) => c.waitFor(m => m.type === 'progress' && m.cursor === b3 && m.hash === newHashes[1])
    await progressAfter(all)
    await progressAfter(one)

    const dropped = [
      { block_number: b2, hash: oldHashes[0] },
      { block_number: b3, hash: oldHashes[1] },
    ]
    for (const client of [all, one]) {
      const reorgs = client.messages.filter(m => m.type === 'reorg')
      expect(reorgs).toEqual([{ type: 'reorg', fork_point: b1, dropped, cursor: b1 }])
    }
    const newRows = await chain.logRecords(b2, b3)
    const removedAll = afterReorg(all.messages)
      .filter(m => m.type === 'rows' && m.removed)
      .flatMap(m => m.rows)
    expect(removedAll).toEqual(oldRows.map(r => ({ ...r, removed: true })))
    expect(rowsOf(afterReorg(all.messages))).toEqual(newRows)

    const mine = (r: Json) => r.topic2 === addressTopic(chain!.address(1))
    const removedOne = afterReorg(one.messages)
      .filter(m => m.type === 'rows' && m.removed)
      .flatMap(m => m.rows)
    expect(removedOne).toEqual(oldRows.filter(mine).map(r => ({ ...r, removed: true })))
    expect(rowsOf(afterReorg(one.messages))).toEqual(newRows.filter(mine))

    // Canonical rows: what a client applying the messages holds equals the node's logs now.
    const applied: Json[] = []
    for (const m of all.messages) {
      if (m.type === 'rows' && !m.removed) applied.push(...m.rows)
      if (m.type === 'reorg') applied.splice(0, applied.length, ...applied.filter(r => Number(BigInt(r.block_number)) <= m.fork_point))
    }
    expect(applied).toEqual(await chain.logRecords(start, b3))
    const live = server.service.chains.get(chainKey(DEVNET))!
    expect(live.stats.reorgs).toBe(1)
    all.close()
    one.close()
  })

  it('a client resuming with cursor_hash of a block dropped while it was away gets the reorg, its removed rows and the new rows', async () => {
    chain = await Chainlet.start()
    server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 8, compactBlocks: 2 } }] })
    const live = server.service.chains.get(chainKey(DEVNET))!
    const start = (await chain.head()) + 1
    await chain.mine([[1, '0x01']])
    const b2 = await chain.mine([
      [1, '0x02'],
      [2, '0x03'],
    ])
    const first = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${start}`, { headers: ALICE })
    const progress = await first.waitFor(m => m.type === 'progress' && m.cursor === b2)
    first.close()
    const held = rowsOf(first.messages)
    const oldRows = await chain.logRecords(b2, b2)

    await chain.syncNonces()
    await chain.reorg(1, [[await chain.signedCall(3, '0x04'), 0]])
    const newHash = await chain.blockHash(b2)
    while (live.window()!.hashAt(b2) !== newHash) await new Promise(r => setTimeout(r, 10))

    const canonical = await wsClient(
      `${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${b2}&cursor_hash=${await chain.blockHash(b2 - 1)}`,
      { headers: ALICE },
    )
    const resumed = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${b2 + 1}&cursor_hash=${progress.hash}`, {
      headers: ALICE,
    })
    const unknown = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET&from_block=${b2 + 1}&cursor_hash=0x${'ab'.repeat(32)}`, {
      headers: ALICE,
    })
    await resumed.waitFor(m => m.type === 'progress' && m.cursor === b2 && m.hash === newHash)
    expect(resumed.messages.filter(m => m.type === 'reorg')).toEqual([
      { type: 'reorg', fork_point: b2 - 1, dropped: [{ block_number: b2, hash: progress.hash }], cursor: b2 - 1 },
    ])
    expect(resumed.messages.filter(m => m.type === 'rows' && m.removed).flatMap(m => m.rows)).toEqual(
      oldRows.map(r => ({ ...r, removed: true })),
    )
    expect(rowsOf(resumed.messages)).toEqual(await chain.logRecords(b2, b2))
    const applied = [...held.filter(r => Number(BigInt(r.block_number)) < b2), ...rowsOf(resumed.messages)]
    expect(applied).toEqual(await chain.logRecords(start, b2))

    await canonical.waitFor(m => m.type === 'progress' && m.cursor === b2)
    expect(canonical.messages.some(m => m.type === 'reorg')).toBe(false)
    expect(rowsOf(canonical.messages)).toEqual(await chain.logRecords(b2, b2))

    expect((await unknown.closed).code).toBe(4409)
    expect(unknown.messages.at(-1)).toMatchObject({ type: 'error', code: 'unknown_cursor' })
    resumed.close()
    canonical.close()
  })

  it('a reorg deeper than the window is an error and a 4409 close, and live subscriptions are refused after it', async () => {
    chain = await Chainlet.start()
    for (let i = 0; i < 4; i++) await chain.mine([[1, '0x01']])
    server = await startLiveServer({ follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 2, compactBlocks: 1 } }] })
    const live = server.service.chains.get(chainKey(DEVNET))!
    const client = await wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET`, { headers: ALICE })
    await client.waitFor(m => m.type === 'subscribed')
    while (live.window()!.anchor.number < 6) {
      await chain.mine([[2, '0x02']])
      await new Promise(r => setTimeout(r, 20))
    }
    const head = await chain.head()
    await client.waitFor(m => m.type === 'progress' && m.cursor === head)
    await chain.syncNonces()
    await chain.reorg(head - live.window()!.anchor.number + 2, [])
    const closed = await client.closed
    expect(closed.code).toBe(4409)
    const error = client.messages.at(-1)
    expect(error).toMatchObject({ type: 'error', code: 'reorg_too_deep' })
    expect(client.messages.some(m => m.type === 'reorg')).toBe(false)
    await expect(wsClient(`${server.wsUrl}/v1/api/logs?chains=DEVNET`, { headers: ALICE })).rejects.toMatchObject({
      status: 503,
      body: { error: { code: 'reorg_too_deep' } },
    })
    expect(live.subscriptions.size).toBe(0)
  })
})

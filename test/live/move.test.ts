/**
 * A Move-VM chain followed live on the Node server: a sample fullnode whose ledger
 * grows as the test appends blocks (signed transactions with real hashes), history
 * ingested into partitions first, then subscriptions on the Move host that replay
 * history and continue with each new version exactly once. Expected rows come from
 * the node's own REST JSON (versions, hashes, senders) and from an HTTP query over
 * a separate lake ingested after the fact by the ingester.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChain } from '../../src/chains/registry.ts'
import { moveSource } from '../../src/ingest/move-source.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { LiveConfigError, parseLiveChains } from '../../src/live/config.ts'
import { FinalityError, HeadFollower } from '../../src/live/follower.ts'
import { moveLiveSource } from '../../src/live/move-source.ts'
import { lazySource } from '../../src/live/source.ts'
import { moveTransactions } from '../../src/datasets/move.ts'
import { UnfinalizedWindow } from '../../src/live/window.ts'
import type { FullnodeClient } from '../../src/move/rest.ts'
import type { RestTransaction } from '../../src/move/rest-types.ts'
import { sampleAccount, sampleBlocks, sampleNode, type SampleBlock, type SampleSpec } from '../../scripts/dev/move-sample.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { moveLakeRecords, progressAt, range, rowsOf, startLiveServer, wsClient, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const APTOS = findChain('move', 'APTOS')!
const SPEC: SampleSpec = { chainId: APTOS.id, seed: 'live/APTOS' }
const AUTH = basic('alice', 'secret')
const HEADERS = { authorization: AUTH, host: 'aptos.localhost' }

/** A sample fullnode whose ledger grows by `append`. */
class GrowingNode {
  readonly blocks: SampleBlock[] = []
  private readonly spec: SampleSpec
  private readonly gen: Generator<SampleBlock>
  private node!: FullnodeClient
  readonly client: FullnodeClient = {
    ledgerInfo: () => this.node.ledgerInfo(),
    transactions: (start, limit) => this.node.transactions(start, limit),
    transactionByVersion: v => this.node.transactionByVersion(v),
    blockByVersion: v => this.node.blockByVersion(v),
    moduleAbi: (a, n, at) => this.node.moduleAbi(a, n, at),
  }

  constructor(spec: SampleSpec = SPEC) {
    this.spec = spec
    this.gen = sampleBlocks(spec)
  }

  /** Appends `n` blocks; returns the new ledger version. */
  append(n: number): number {
    for (let i = 0; i < n; i++) this.blocks.push(this.gen.next().value as SampleBlock)
    this.node = sampleNode(this.spec.chainId, this.blocks)
    return this.last
  }

  get last(): number {
    return this.blocks[this.blocks.length - 1].lastVersion
  }

  get transactions(): RestTransaction[] {
    return this.blocks.flatMap(b => b.transactions)
  }
}

/** Ingests versions `from`..`to` of the node into `store` with the ingester. */
async function ingest(store: ObjectStore, client: FullnodeClient, from: number, to: number): Promise<void> {
  await runIngest({ chain: APTOS, source: moveSource(client, { chain: APTOS, store }), from, to, store, partitionBlocks: 25 })
}

let node: GrowingNode
let server: LiveServer
let storedEnd: number

beforeAll(async () => {
  node = new GrowingNode()
  storedEnd = node.append(8)
  const store = (await tempStore()).store
  await ingest(store, node.client, 0, storedEnd)
  node.append(2)
  server = await startLiveServer({
    store,
    follow: [{ chain: APTOS, source: moveLiveSource(node.client, { chain: APTOS, store }), options: { compactBlocks: 10 } }],
  })
})
afterAll(async () => {
  await server?.close()
  await removeTempDirs()
})

describe('a Move-VM chain followed live', () => {
  it('replays history from version 0, then sends each new version once, as HTTP JSON records', async () => {
    const client = await wsClient(`${server.wsUrl}/v1/api/transactions?chains=APTOS&from_block=0`, { headers: HEADERS })
    const subscribed = await client.waitFor(m => m.type === 'subscribed')
    expect(subscribed).toMatchObject({ chain: 'APTOS', chain_id: 1, dataset: 'transactions', from_block: 0, to_block: null })
    await progressAt(client, node.last)
    const first = node.append(3)
    await progressAt(client, first)
    const second = node.append(4)
    await progressAt(client, second)
    const rows = rowsOf(client.messages)
    expect(rows.map(r => r.version)).toEqual(range(0, second))
    expect(rows.map(r => r.hash)).toEqual(node.transactions.map(t => t.hash))
    // Versions from the window come with a progress marker each, naming the version's hash.
    const marked = client.messages.filter(m => m.type === 'progress' && m.hash !== undefined)
    expect(marked.length).toBeGreaterThan(0)
    for (const p of marked) expect(p.hash).toBe(node.transactions[p.cursor].hash)
    // Stored history too: one marker per version, as the docs say.
    expect(client.messages.filter(m => m.type === 'progress').map(m => m.cursor)).toEqual(range(0, second))

    const lake = (await tempStore()).store
    await ingest(lake, node.client, 0, second)
    expect(rows).toEqual(
      await moveLakeRecords(lake, `/v1/api/transactions?chains=APTOS&from_block=0&to_block=${second}&format=json_stream`),
    )
    // Compaction published the final versions it took off the window: the same records.
    await server.service.chains.get('move-1')!.settled()
    const stored = await moveLakeRecords(
      server.store,
      `/v1/api/transactions?chains=APTOS&from_block=0&to_block=${second}&format=json_stream`,
    )
    expect(stored.length).toBeGreaterThan(storedEnd + 1)
    expect(stored).toEqual(rows.slice(0, stored.length))
    client.close()
  })

  it('delivers only the rows a filter selects, on transactions/decoded', async () => {
    const sender = sampleAccount(SPEC, 3)
    const client = await wsClient(`${server.wsUrl}/v1/api/transactions/decoded?chains=APTOS&from_block=0&sender=${sender}`, {
      headers: HEADERS,
    })
    await progressAt(client, node.last)
    const last = node.append(4)
    await progressAt(client, last)
    const rows = rowsOf(client.messages)
    const expected = node.transactions.filter(t => t.type === 'user_transaction' && t.sender === sender)
    expect(expected.length).toBeGreaterThan(0)
    expect(rows.map(r => r.hash)).toEqual(expected.map(t => t.hash))
    expect(rows.every(r => r.sender === sender && r.version.startsWith('0x'))).toBe(true)
    const lake = (await tempStore()).store
    await ingest(lake, node.client, 0, last)
    expect(rows).toEqual(
      await moveLakeRecords(
        lake,
        `/v1/api/transactions/decoded?chains=APTOS&from_block=0&to_block=${last}&sender=${sender}&format=json_stream`,
      ),
    )
    client.close()
  })

  it('a reconnect from cursor + 1 gets exactly the missed versions', async () => {
    const first = await wsClient(`${server.wsUrl}/v1/api/transactions?chains=APTOS&from_block=0&fields=version,hash`, { headers: HEADERS })
    const at = node.last
    await progressAt(first, at)
    first.close()
    await first.closed
    const cursor = first.messages.filter(m => m.type === 'progress').at(-1).cursor as number
    const last = node.append(3)
    const second = await wsClient(`${server.wsUrl}/v1/api/transactions?chains=APTOS&from_block=${cursor + 1}&fields=version,hash`, {
      headers: HEADERS,
    })
    await progressAt(second, last)
    const before = rowsOf(first.messages).filter(r => r.version <= cursor)
    const after = rowsOf(second.messages)
    expect(after.map(r => r.version)).toEqual(range(cursor + 1, last))
    expect([...before, ...after]).toEqual(node.transactions.slice(0, last + 1).map(t => ({ version: Number(t.version), hash: t.hash })))
    second.close()
  })
})

describe('the Move live source', () => {
  it('treats a node that goes back or changes a delivered hash as an error, never a reorg', async () => {
    const grown = new GrowingNode()
    const last = grown.append(3)
    const source = moveLiveSource(grown.client, { chain: APTOS, store: (await tempStore()).store })
    const window = new UnfinalizedWindow({ number: -1, hash: '0x' + '0'.repeat(64) })
    const follower = new HeadFollower(source, window, { maxBlocksPerTick: 100 })
    expect(await follower.tick(() => {})).toBe(last + 1)
    expect(window.tip).toEqual({ number: last, hash: grown.transactions[last].hash })
    // Another chain's history at the same versions (another seed): the hash at the tip differs.
    const other = new GrowingNode({ ...SPEC, seed: 'live/other' })
    other.append(3)
    const forked = moveLiveSource(other.client, { chain: APTOS, store: (await tempStore()).store })
    const lagging = new GrowingNode()
    lagging.append(1)
    await expect(new HeadFollower(forked, window).tick(() => {})).rejects.toThrow(FinalityError)
    await expect(
      new HeadFollower(moveLiveSource(lagging.client, { chain: APTOS, store: (await tempStore()).store }), window).tick(() => {}),
    ).rejects.toThrow(FinalityError)
    expect(window.tip.number).toBe(last)
  })
})

describe("a source loaded at its first use (the Worker's Move follower)", () => {
  it('loads once, and again after a failed load', async () => {
    const grown = new GrowingNode()
    const last = grown.append(2)
    let loads = 0
    const source = lazySource([moveTransactions], true, async () => {
      if (++loads === 1) throw new Error('not loaded')
      return moveLiveSource(grown.client, { chain: APTOS, store: (await tempStore()).store })
    })
    expect([source.datasets, source.final, loads]).toEqual([[moveTransactions], true, 0])
    await expect(source.latest()).rejects.toThrow('not loaded')
    expect((await source.latest()).number).toBe(last)
    expect((await source.blocks(0, 1)).map(b => b.header.hash)).toEqual(grown.transactions.slice(0, 2).map(t => t.hash))
    expect(loads).toBe(2)
  })
})

describe('LIVE_CHAINS for Move-VM chains', () => {
  it('takes a fullnode REST URL as "rest"', () => {
    const [f] = parseLiveChains('{"APTOS":{"rest":"https://aptos.example/v1","compact_blocks":1000}}')
    expect([f.chain.code, f.rest, f.rpc, f.compactBlocks]).toEqual(['APTOS', 'https://aptos.example/v1', undefined, 1000])
  })

  it.each([
    ['{"APTOS":{"rpc":"http://x"}}', 'give "rest", not "rpc"'],
    ['{"ETH":{"rest":"http://x"}}', 'give "rpc", not "rest"'],
    ['{"MOVEMENT":{"rest":"ftp://x"}}', 'needs "rest", an http(s) URL'],
  ])('refuses %s', (text, why) => {
    expect(() => parseLiveChains(text)).toThrow(LiveConfigError)
    expect(() => parseLiveChains(text)).toThrow(why)
  })
})

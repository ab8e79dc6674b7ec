/**
 * A Move-VM chain followed live on Cloudflare: the production bundle (`wrangler deploy
 * --dry-run`, run by Miniflare where code generation is refused, as production workerd
 * does) with APTOS in LIVE_CHAINS, its Durable Object following
 * ../shared/tools/replay-aptos.mjs over a growing sample chain (signed transactions with
 * real hashes; the replay is restarted on the same port with more blocks). A subscriber
 * gets the stored history, then each new version once, with the rows the Node server
 * sends for the same subscription over the same node.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChain } from '../../src/chains/registry.ts'
import { r2Store } from '../../src/store/r2.ts'
import { moveSource } from '../../src/ingest/move-source.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { fullnodeClient } from '../../src/move/rest.ts'
import { SAMPLE_MODULES, sampleBlocks, type SampleBlock, type SampleSpec } from '../../scripts/dev/move-sample.ts'
import { buildBundle, bundleMiniflare } from '../../scripts/dev/bundle.ts'
import { seedBucket, type SeedableBucket } from '../../scripts/dev/seed-r2.ts'
import { startReplay, type Replay } from '../move/replay.ts'
import { moveLakeRecords, progressAt, range, rowsOf, startLiveServer, USERS, wsClient, type Json, type LiveServer } from './helpers.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const APTOS = findChain('move', 'APTOS')!
const SPEC: SampleSpec = { chainId: APTOS.id, seed: 'durable/APTOS' }
const HEADERS = { authorization: basic('alice', 'secret'), host: 'aptos.localhost' }
const root = join(import.meta.dirname, '..', '..')

/** A free 127.0.0.1 port, so the replay can be restarted where the followers look for it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** replay-aptos.mjs over a sample chain in its data layout; `append` restarts it with more blocks on the same port. */
class GrowingReplay {
  readonly blocks: SampleBlock[] = []
  private readonly gen = sampleBlocks(SPEC)
  private replay: Replay | null = null
  private readonly dir: string
  readonly port: number

  private constructor(dir: string, port: number) {
    this.dir = dir
    this.port = port
  }

  static async start(blocks: number): Promise<GrowingReplay> {
    const dir = await mkdtemp(join(tmpdir(), 'replay-move-'))
    await mkdir(join(dir, 'rest', 'mainnet'), { recursive: true })
    await mkdir(join(dir, 'abis'))
    await writeFile(join(dir, 'abis', 'sample.json'), JSON.stringify(SAMPLE_MODULES.map(abi => ({ bytecode: '0x', abi }))))
    const node = new GrowingReplay(dir, await freePort())
    await node.append(blocks)
    return node
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get transactions() {
    return this.blocks.flatMap(b => b.transactions)
  }

  get last(): number {
    return this.blocks[this.blocks.length - 1].lastVersion
  }

  /** Appends `n` blocks and serves them; returns the new ledger version. */
  async append(n: number): Promise<number> {
    for (let i = 0; i < n; i++) this.blocks.push(this.gen.next().value as SampleBlock)
    const rest = join(this.dir, 'rest', 'mainnet')
    const meta = this.blocks.flatMap(b => b.transactions.map(t => ({ version: t.version, epoch: '1', block_height: String(b.height) })))
    await writeFile(join(rest, 'transactions.json'), JSON.stringify(this.transactions))
    await writeFile(join(rest, 'manifest.json'), JSON.stringify({ chain_id: SPEC.chainId, transactions: meta }))
    await this.replay?.stop()
    this.replay = await startReplay('mainnet', { data: this.dir, port: this.port, chainId: SPEC.chainId })
    return this.last
  }

  async stop(): Promise<void> {
    await this.replay?.stop()
    await rm(this.dir, { recursive: true, force: true })
  }
}

let node: GrowingReplay
let outdir: string
let mf: Miniflare
let worker: string
let server: LiveServer
let storedEnd: number

beforeAll(async () => {
  node = await GrowingReplay.start(8)
  storedEnd = node.last
  // History in partitions, ingested from the replay by the ingester; both runtimes start from the same lake.
  const { store } = await tempStore()
  const client = fullnodeClient({ url: node.url })
  await runIngest({ chain: APTOS, source: moveSource(client, { chain: APTOS, store }), from: 0, to: storedEnd, store, partitionBlocks: 25 })
  await node.append(2)
  const built = await buildBundle(root)
  outdir = built.outdir
  const live = { APTOS: { rest: `${node.url}/v1`, compact_blocks: 10, poll_ms: 50 } }
  mf = await bundleMiniflare(root, outdir, { API_USERS: USERS, LIVE_CHAINS: JSON.stringify(live) }, { quiet: true })
  await seedBucket((await mf.getR2Bucket('LAKE')) as unknown as SeedableBucket, store)
  worker = (await mf.ready).href.replace(/\/$/, '').replace('http', 'ws')
  server = await startLiveServer({ store, follow: [{ chain: APTOS, restUrl: node.url, options: { compactBlocks: 10 } }] })
}, 180_000)

afterAll(async () => {
  await server?.close()
  await mf?.dispose()
  await node?.stop()
  if (outdir) await rm(outdir, { recursive: true, force: true })
  await removeTempDirs()
})

describe('a Move-VM chain followed by the Durable Object (production bundle)', () => {
  it('replays history from version 0, then sends each new version once, as the Node server does', async () => {
    const path = '/v1/api/transactions?chains=APTOS&from_block=0'
    const [cf, nd] = await Promise.all([
      wsClient(`${worker}${path}`, { headers: HEADERS }),
      wsClient(`${server.wsUrl}${path}`, { headers: HEADERS }),
    ])
    const subscribed = await cf.waitFor(m => m.type === 'subscribed')
    expect(subscribed).toMatchObject({ chain: 'APTOS', chain_id: 1, dataset: 'transactions', from_block: 0, to_block: null })
    await Promise.all([progressAt(cf, node.last), progressAt(nd, node.last)])
    const first = await node.append(3)
    await Promise.all([progressAt(cf, first), progressAt(nd, first)])
    const last = await node.append(4)
    await Promise.all([progressAt(cf, last), progressAt(nd, last)])

    const rows = rowsOf(cf.messages)
    expect(rows.map(r => r.version)).toEqual(range(0, last))
    expect(rows.map(r => r.hash)).toEqual(node.transactions.map(t => t.hash))
    expect(rows).toEqual(rowsOf(nd.messages))
    // One progress marker per version, stored history included; versions from the window name their hash.
    const progress = cf.messages.filter((m: Json) => m.type === 'progress')
    expect(progress.map((m: Json) => m.cursor)).toEqual(range(0, last))
    const marked = progress.filter((m: Json) => m.hash !== undefined)
    expect(marked.map((m: Json) => m.cursor)).toEqual(expect.arrayContaining(range(storedEnd + 1, last)))
    for (const p of marked) expect(p.hash).toBe(node.transactions[p.cursor].hash)
    expect(progress.at(-1).live).toBe(true)
    expect(cf.messages.some((m: Json) => m.type === 'error' || m.type === 'reorg')).toBe(false)
    cf.close()
    nd.close()
    // HTTP on the Worker is as fresh as the stream: partitions, then the object's window.
    const res = await mf.dispatchFetch(
      `http://aptos.localhost/v1/api/transactions?chains=APTOS&from_block=0&to_block=${last}&format=json_stream`,
      {
        headers: { authorization: HEADERS.authorization },
      },
    )
    const text = await res.text()
    expect(res.status, text).toBe(200)
    expect(
      text
        .split('\n')
        .filter(l => l.trim() !== '')
        .map(l => JSON.parse(l)),
    ).toEqual(rows)
    // The object compacted final versions into R2: the lake alone (no window) serves them, the same records.
    const lake = r2Store((await mf.getR2Bucket('LAKE')) as unknown as R2Bucket)
    let stored: Json[] = []
    while (stored.length <= storedEnd + 1) {
      stored = await moveLakeRecords(lake, `/v1/api/transactions?chains=APTOS&from_block=0&to_block=${last}&format=json_stream`)
      await new Promise(r => setTimeout(r, 100))
    }
    expect(stored).toEqual(rows.slice(0, stored.length))
  })

  it('a bounded subscription across partitions and the window ends with `end`, as the Node server does', async () => {
    const last = node.last
    const path = `/v1/api/transactions/decoded?chains=APTOS&from_block=${storedEnd - 3}&to_block=${last}`
    const [cf, nd] = await Promise.all([
      wsClient(`${worker}${path}`, { headers: HEADERS }),
      wsClient(`${server.wsUrl}${path}`, { headers: HEADERS }),
    ])
    expect(await cf.waitFor(m => m.type === 'end')).toEqual({ type: 'end', cursor: last })
    await nd.waitFor(m => m.type === 'end')
    expect(cf.messages.at(-1).type).toBe('end')
    const rows = rowsOf(cf.messages)
    expect(rows.map(r => r.hash)).toEqual(node.transactions.slice(storedEnd - 3, last + 1).map(t => t.hash))
    expect(rows).toEqual(rowsOf(nd.messages))
    // Rebuilt and verified in workerd as in Node: the user transactions' calls are decoded.
    expect(rows.some(r => r.kind === 'UserTransaction' && r.entry_function_decoded !== null)).toBe(true)
    // workerd keeps the TCP connection a while after the close handshake (docs/websocket.md): `end` is final.
    cf.kill()
    nd.kill()
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Chain } from '../../src/chains/registry.ts'
import { findChain } from '../../src/chains/registry.ts'
import {
  abiKey,
  ChainMismatchError,
  MissingVersionError,
  moveSource,
  RefusedTransactionsError,
  type StoredAbi,
} from '../../src/ingest/move-source.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { fullnodeClient } from '../../src/move/rest.ts'
import type { RestTransaction, RestUserTransaction } from '../../src/move/rest-types.ts'
import { sampleChain, sampleNode, sampleSpecOf } from '../../scripts/dev/move-sample.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { recordedAbis, restTransactions, userVectors } from '../move/data.ts'
import { startReplay, type Replay } from '../move/replay.ts'
import { readManifest, readRows, view } from './fixtures.ts'

const APTOS = findChain('move', 'APTOS')!
/** The recorded testnet is Aptos testnet (chain id 2), which the registry does not serve: a chain for the test. */
const APTOS_TESTNET: Chain = {
  family: 'move',
  id: 2,
  code: 'APTOS_TESTNET',
  name: 'aptos-testnet',
  hosts: ['aptos-testnet.localhost'],
  confirmations: 0,
}

const dirs: string[] = []
const newStore = (): ObjectStore => {
  const dir = mkdtempSync(join(tmpdir(), 'move-ingest-'))
  dirs.push(dir)
  return fsStore(dir)
}
afterAll(() => dirs.forEach(d => rmSync(d, { recursive: true, force: true })))

let mainnet: Replay
let testnet: Replay
beforeAll(async () => {
  ;[mainnet, testnet] = await Promise.all([startReplay('mainnet'), startReplay('testnet')])
})
afterAll(async () => {
  await Promise.all([mainnet?.stop(), testnet?.stop()])
})

/** A fetch that records every URL it is asked for (the requests really go to the replay node). */
function countingFetch(tamper?: (url: string, body: unknown) => unknown) {
  const urls: string[] = []
  const f = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = String(input)
    urls.push(url)
    const res = await fetch(input, init)
    if (!tamper || !res.ok) return res
    return new Response(JSON.stringify(tamper(url, await res.json())), { status: res.status, headers: res.headers })
  }
  return { urls, fetch: f as typeof fetch }
}

const moduleRequests = (urls: readonly string[]) => urls.filter(u => /\/accounts\/[^/]+\/module\//.test(u)).map(u => new URL(u).pathname)

/** Ingests each version on its own, each run with a fresh source (a new process, as far as caches go). */
async function ingestEach(store: ObjectStore, chain: Chain, url: string, versions: string[], f?: typeof fetch, units = 1) {
  for (const v of versions) {
    const source = moveSource(fullnodeClient({ url, fetch: f }), { chain, store })
    const report = await runIngest({ chain, source, from: Number(v), to: Number(v), store })
    expect(report.units).toBe(units)
  }
}

const long = (a: string) => '0x' + a.replace(/^0x/, '').padStart(64, '0')
const hex = (h: string) => (h.startsWith('0x') ? h : '0x' + h).toLowerCase()
const KINDS: Record<string, string> = {
  user_transaction: 'UserTransaction',
  block_metadata_transaction: 'BlockMetadataTransaction',
  state_checkpoint_transaction: 'StateCheckpointTransaction',
  validator_transaction: 'ValidatorTransaction',
}

/** What a stored row must hold, from the node's JSON alone. */
function expectedFromRest(tx: RestTransaction, chainId: number): Record<string, unknown> {
  const user = tx.type === 'user_transaction' ? (tx as RestUserTransaction) : null
  const call = user?.payload.type === 'entry_function_payload' ? user.payload : null
  return {
    version: BigInt(tx.version),
    hash: tx.hash,
    kind: KINDS[tx.type],
    gas_used: BigInt(tx.gas_used),
    success: tx.success,
    vm_status: tx.vm_status,
    timestamp: BigInt(tx.timestamp ?? 0),
    event_root_hash: tx.event_root_hash,
    state_change_hash: tx.state_change_hash,
    accumulator_root_hash: tx.accumulator_root_hash,
    events: tx.events ?? [],
    changes: tx.changes,
    sender: user ? long(user.sender) : null,
    sequence_number: user ? BigInt(user.sequence_number) : null,
    max_gas_amount: user ? BigInt(user.max_gas_amount) : null,
    gas_unit_price: user ? BigInt(user.gas_unit_price) : null,
    expiration_timestamp_secs: user ? BigInt(user.expiration_timestamp_secs) : null,
    tx_chain_id: user ? BigInt(chainId) : null,
    entry_function_id: call ? call.function.replace(/^0x0*/, '0x') : null,
  }
}

describe('Move ingest from the recorded mainnet (replay node)', () => {
  const txs = restTransactions('mainnet')
  const versions = [...new Set(txs.map(t => t.version))]
  let store: ObjectStore
  let urls: string[]

  beforeAll(async () => {
    store = newStore()
    const counting = countingFetch()
    await ingestEach(store, APTOS, mainnet.url, versions, counting.fetch)
    urls = counting.urls
  })

  it('publishes exactly the recorded versions, each row as the node gave it', async () => {
    const root = (await readManifest(store, APTOS))!
    expect(root.datasets.move_transactions.coverage).toEqual(versions.map(v => [Number(v), Number(v)]))
    const rows = await readRows(store, APTOS, 'move_transactions')
    expect(rows.map(r => String(r.version))).toEqual(versions)
    const byVersion = new Map(txs.map(t => [t.version, t]))
    for (const raw of rows) {
      const row = view(raw)
      const tx = byVersion.get(String(raw.version))!
      const expected = expectedFromRest(tx, 1)
      const got = Object.fromEntries(
        Object.keys(expected).map(k => [
          k,
          typeof row[k] === 'string' && ['events', 'changes'].includes(k) ? JSON.parse(row[k] as string) : row[k],
        ]),
      )
      expect(got, `version ${tx.version}`).toEqual(expected)
      if (tx.type === 'user_transaction') expect(row.hash_verified, `version ${tx.version}`).toBe(true)
    }
  })

  it('stores the hash-verified BCS of the vectors (raw record) and their JSON arguments (decoded record)', async () => {
    const rows = new Map((await readRows(store, APTOS, 'move_transactions')).map(r => [String(r.version), view(r)]))
    const vectors = userVectors().filter(v => v.network === 'mainnet')
    expect(vectors.length).toBeGreaterThanOrEqual(30)
    const abis = recordedAbis()
    let decoded = 0
    for (const v of vectors) {
      const row = rows.get(v.version)!
      expect(row.hash, v.version).toBe(hex(v.hash))
      expect(row.authenticator, v.version).toBe(hex(v.authenticator_bcs_hex))
      const payload = JSON.parse(row.payload as string)
      const ef = v.payload_decoded.EntryFunction
      if (!ef) continue
      expect(payload.entry_function.args, v.version).toEqual(ef.args_bcs_hex.map(hex))
      expect(payload.entry_function.function).toBe(ef.function)
      const [address, module] = v.entry_function_id!.split('::')
      if (!abis.module(address, module)) continue
      const d = JSON.parse(row.entry_function_decoded as string)
      expect(
        d.args.map((a: string) => JSON.parse(a)),
        v.version,
      ).toEqual(v.arguments_json)
      decoded++
    }
    expect(decoded).toBeGreaterThanOrEqual(20)
  })

  it('asks the node for each module ABI once over 88 separate runs, and keeps it in the store', async () => {
    const asked = moduleRequests(urls)
    expect(asked.length).toBeGreaterThan(5)
    expect(new Set(asked).size).toBe(asked.length)
    const coin = await store.get(abiKey(APTOS, '0x1', 'coin'))
    const record = JSON.parse(new TextDecoder().decode(coin!.body)) as StoredAbi
    expect(record.abi?.exposed_functions.some(f => f.name === 'transfer')).toBe(true)
    expect(asked).toContain('/v1/accounts/0x1/module/coin')
  })

  it('is idempotent: a rerun asks no ABI and changes nothing', async () => {
    const before = (await store.get(rootKey(APTOS)))!.body
    const counting = countingFetch()
    await ingestEach(store, APTOS, mainnet.url, versions.slice(0, 10), counting.fetch, 0)
    expect(moduleRequests(counting.urls)).toEqual([])
    expect(counting.urls.filter(u => u.includes('/transactions'))).toEqual([])
    expect((await store.get(rootKey(APTOS)))!.body).toEqual(before)
  })

  it('fails on a gap unless the source is declared sparse, and publishes nothing', async () => {
    const gapStore = newStore()
    const from = 2200077591
    const source = moveSource(fullnodeClient({ url: mainnet.url }), { chain: APTOS, store: gapStore })
    const err = await runIngest({ chain: APTOS, source, from, to: from + 9, store: gapStore }).catch(e => e)
    expect(err).toBeInstanceOf(MissingVersionError)
    expect(err.version).toBe(from + 1)
    expect(err.message).toMatch(/version 2200077592 is missing: .*version 2200077673 came in its place/)
    expect(await gapStore.get(rootKey(APTOS))).toBeNull()

    const sparse = moveSource(fullnodeClient({ url: mainnet.url }), { chain: APTOS, store: gapStore, sparse: true })
    const report = await runIngest({ chain: APTOS, source: sparse, from, to: 2200077899, store: gapStore, partitionBlocks: 100 })
    expect(report.rows.move_transactions).toBe(4)
    const rows = await readRows(gapStore, APTOS, 'move_transactions')
    expect(rows.map(r => String(r.version))).toEqual(['2200077591', '2200077673', '2200077800', '2200077877'])
    // Not contiguous: no parent hash is carried across the skipped versions.
    expect(rows.every(r => r.parent_transaction_hash === null)).toBe(true)
    expect((await readManifest(gapStore, APTOS))!.datasets.move_transactions.coverage).toEqual([[from, 2200077899]])
  })

  it('refuses a transaction that does not hash to the node hash: the range fails naming it, nothing is published', async () => {
    const victim = txs.find(t => t.type === 'user_transaction' && t.version === '685') as RestUserTransaction
    const tampered = countingFetch((url, body) => {
      if (!url.includes('/transactions?')) return body
      return (body as RestTransaction[]).map(t =>
        t.version === victim.version ? { ...t, sequence_number: String(BigInt((t as RestUserTransaction).sequence_number) + 1n) } : t,
      )
    })
    const bad = newStore()
    const source = moveSource(fullnodeClient({ url: mainnet.url, fetch: tampered.fetch }), { chain: APTOS, store: bad })
    const err = await runIngest({ chain: APTOS, source, from: 685, to: 685, store: bad }).catch(e => e)
    expect(err).toBeInstanceOf(RefusedTransactionsError)
    expect(err.refused.map((r: { version: string }) => r.version)).toEqual(['685'])
    expect(err.message).toMatch(/versions 685-685 not published: 1 transaction\(s\) refused: 685 \(version 685: hash mismatch/)
    expect(await bad.get(rootKey(APTOS))).toBeNull()
    expect((await bad.list('move-1/move_transactions/')).length).toBe(0)
  })

  it('refuses a node that serves another chain', async () => {
    const movement = findChain('move', 'MOVEMENT')!
    const s = newStore()
    const source = moveSource(fullnodeClient({ url: mainnet.url }), { chain: movement, store: s })
    await expect(runIngest({ chain: movement, source, from: 685, to: 685, store: s })).rejects.toThrow(ChainMismatchError)
    await expect(runIngest({ chain: movement, source, from: 685, to: 685, store: s })).rejects.toThrow(
      'the node serves chain id 1, not MOVEMENT (126)',
    )
  })
})

describe('Move ingest from the recorded testnet (replay node)', () => {
  const txs = restTransactions('testnet')

  it('ingests every recorded version, contiguous ones as one range, with the chain id the node reports', async () => {
    const store = newStore()
    // Versions 1-3 are contiguous: a block metadata, another one, its state checkpoint.
    expect(txs.slice(0, 3).map(t => t.version)).toEqual(['1', '2', '3'])
    const source = moveSource(fullnodeClient({ url: testnet.url }), { chain: APTOS_TESTNET, store })
    await runIngest({ chain: APTOS_TESTNET, source, from: 1, to: 3, store })
    await ingestEach(
      store,
      APTOS_TESTNET,
      testnet.url,
      txs.slice(3).map(t => t.version),
    )
    const rows = (await readRows(store, APTOS_TESTNET, 'move_transactions')).map(view)
    expect(rows.map(r => String(r.version))).toEqual(txs.map(t => t.version))
    rows.forEach((row, i) => {
      const expected = expectedFromRest(txs[i], 2)
      for (const [k, v] of Object.entries(expected)) {
        expect(['events', 'changes'].includes(k) ? JSON.parse(row[k] as string) : row[k], `${txs[i].version} ${k}`).toEqual(v)
      }
    })
    // Inside the contiguous range the block id and parent hash are carried; the checkpoint is proven with them.
    expect(rows[1].block_hash).toBe((txs[1] as { id: string }).id)
    expect(rows[1].parent_transaction_hash).toBe(txs[0].hash)
    expect(rows[2].block_hash).toBe((txs[1] as { id: string }).id)
    expect(rows[2].hash_verified).toBe(true)
    expect(rows.filter(r => r.kind === 'UserTransaction').every(r => r.hash_verified === true)).toBe(true)
  })

  it('seeds the first version of a range from the version before it', async () => {
    const store = newStore()
    const source = moveSource(fullnodeClient({ url: testnet.url }), { chain: APTOS_TESTNET, store })
    await runIngest({ chain: APTOS_TESTNET, source, from: 3, to: 3, store })
    const [row] = (await readRows(store, APTOS_TESTNET, 'move_transactions')).map(view)
    expect(row.parent_transaction_hash).toBe(txs[1].hash)
    expect(row.block_hash).toBe((txs[1] as { id: string }).id)
    expect(row.state_checkpoint_transaction_hash).toBe((txs[1] as { id: string }).id)
    expect(row.hash_verified).toBe(true)
  })
})

describe('Move ingest from a node that serves whole blocks (synthetic sample node)', () => {
  const chain = findChain('move', 'MOVEMENT')!
  const blocks = sampleChain(sampleSpecOf(chain), 12)
  const all = blocks.flatMap(b => b.transactions)

  it('starts a range in the middle of a block with its block hash, from GET /blocks/by_version', async () => {
    const block = blocks.find(b => b.lastVersion - b.firstVersion >= 3)!
    const from = block.firstVersion + 2
    const store = newStore()
    const source = moveSource(sampleNode(chain.id, blocks), { chain, store })
    await runIngest({ chain, source, from, to: block.lastVersion, store })
    const rows = (await readRows(store, chain, 'move_transactions')).map(view)
    expect(rows.map(r => Number(r.version))).toEqual(Array.from({ length: block.lastVersion - from + 1 }, (_, i) => from + i))
    expect(rows.every(r => r.block_hash === block.id)).toBe(true)
    expect(rows[0].parent_transaction_hash).toBe(all[from - 1].hash)
    expect(rows.every(r => r.hash_verified === true)).toBe(true)
  })

  it('pages by at most 100 versions, and in pages of any size gives the same partitions', async () => {
    const calls: [number, number][] = []
    const node = sampleNode(chain.id, blocks)
    const spy = {
      ...node,
      transactions: (start: bigint | number, limit: number) => (calls.push([Number(start), limit]), node.transactions(start, limit)),
    }
    const to = Number(all[all.length - 1].version)
    const a = newStore()
    await runIngest({ chain, source: moveSource(spy, { chain, store: a }), from: 0, to, store: a })
    expect(calls.every(([, limit]) => limit <= 100)).toBe(true)
    expect(calls.map(([s]) => s).sort((x, y) => x - y)).toEqual(Array.from({ length: Math.ceil((to + 1) / 100) }, (_, i) => i * 100))
    const b = newStore()
    await runIngest({
      chain,
      source: moveSource(sampleNode(chain.id, blocks), { chain, store: b, pageSize: 7, concurrency: 3 }),
      from: 0,
      to,
      store: b,
    })
    const keys = async (s: ObjectStore) => (await s.list('move-126/move_transactions/')).map(o => o.key)
    expect(await keys(b)).toEqual(await keys(a))
    expect((await keys(a)).length).toBe(1)
  })

  it('ingests up to the head with to: latest, and then nothing more until the head moves', async () => {
    const store = newStore()
    const first = await runIngest({
      chain,
      source: moveSource(sampleNode(chain.id, blocks.slice(0, 6)), { chain, store }),
      from: 0,
      to: 'latest',
      store,
    })
    expect(first.to).toBe(blocks[5].lastVersion)
    const again = await runIngest({
      chain,
      source: moveSource(sampleNode(chain.id, blocks.slice(0, 6)), { chain, store }),
      from: 0,
      to: 'latest',
      store,
    })
    expect(again.units).toBe(0)
    const moved = await runIngest({
      chain,
      source: moveSource(sampleNode(chain.id, blocks), { chain, store }),
      from: 0,
      to: 'latest',
      store,
    })
    expect(moved.rows.move_transactions).toBe(all.length - (blocks[5].lastVersion + 1))
    const rows = (await readRows(store, chain, 'move_transactions')).map(view)
    expect(rows.map(r => r.hash)).toEqual(all.map(t => t.hash))
    // The second run started mid-stream: its first row still has its parent hash and block.
    const seam = rows[blocks[5].lastVersion + 1]
    expect(seam.parent_transaction_hash).toBe(all[blocks[5].lastVersion].hash)
    expect(seam.block_hash).toBe(blocks[6].id)
  })

  it('counts calls it cannot decode in its report, and fetches again an ABI that predates a call', async () => {
    const store = newStore()
    const to = Number(all[all.length - 1].version)
    const mystery = all.filter(
      t =>
        t.type === 'user_transaction' &&
        (t as RestUserTransaction).payload.type === 'entry_function_payload' &&
        ((t as RestUserTransaction).payload as { function: string }).function.startsWith('0xbadc0de::'),
    )
    expect(mystery.length).toBeGreaterThan(0)
    // A cached "module not found" answer recorded at version 0: every later call to it makes the source ask again, once.
    await store.put(
      abiKey(chain, '0xbadc0de', 'mystery'),
      new TextEncoder().encode(JSON.stringify({ address: '0xbadc0de', name: 'mystery', ledger_version: '0', abi: null })),
    )
    const node = sampleNode(chain.id, blocks)
    const asked: string[] = []
    const lines: string[] = []
    const source = moveSource(
      { ...node, moduleAbi: (a, n) => (asked.push(`${a}::${n}`), node.moduleAbi(a, n)) },
      { chain, store, log: l => lines.push(l) },
    )
    await runIngest({ chain, source, from: 0, to, store })
    expect(source.stats.undecoded).toBe(mystery.length)
    expect(source.stats.undecodedSamples[0].reason).toMatch(/0xbadc0de::mystery not found/)
    expect(source.stats.transactions).toBe(all.length)
    expect(source.stats.verified).toBe(all.length)
    expect(asked.filter(m => m === '0xbadc0de::mystery')).toEqual(['0xbadc0de::mystery'])
    expect(lines.some(l => /ABI of 0xbadc0de::mystery refreshed/.test(l))).toBe(true)
    const record = JSON.parse(new TextDecoder().decode((await store.get(abiKey(chain, '0xbadc0de', 'mystery')))!.body)) as StoredAbi
    expect(record.ledger_version).toBe(String(to))
  })
})

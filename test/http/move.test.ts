/**
 * Move-VM hosts through the API, on data ingested by the real Move ingest path:
 * APTOS from the recorded mainnet transactions (replay node), MOVEMENT and
 * MOVEMENT_TESTNET from the synthetic sample (no Movement user transaction is
 * recorded anywhere public: the same machinery, signed for their chain ids), and an
 * EVM lake beside them, to prove no host ever answers with another chain's data.
 */
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChain } from '../../src/chains/registry.ts'
import { createApp } from '../../src/http/app.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { moveSource } from '../../src/ingest/move-source.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { fullnodeClient } from '../../src/move/rest.ts'
import type { RestTransaction, RestUserTransaction } from '../../src/move/rest-types.ts'
import { ingestSample, sampleChain, sampleSpecOf, SAMPLE_BLOCKS } from '../../scripts/dev/move-sample.ts'
import { serve, type RunningServer } from '../../src/node/serve.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { recordedAbis, restTransactions } from '../move/data.ts'
import { startReplay } from '../move/replay.ts'

import { buildHttpLake } from './fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

type Json = Record<string, any>

const AUTH = basic('alice', 'wonderland')
const APTOS = findChain('move', 'APTOS')!
const MOVEMENT = findChain('move', 'MOVEMENT')!
const MOVEMENT_TESTNET = findChain('move', 'MOVEMENT_TESTNET')!
const mainnet = restTransactions('mainnet')
const abis = recordedAbis()

/** The spec's Move transaction record, field by field. */
const RECORD_FIELDS = [
  'chain',
  'block_number',
  'block_hash',
  'transaction_index',
  'hash',
  'version',
  'parent_transaction_hash',
  'timestamp',
  'kind',
  'gas_used',
  'status',
  'event_root_hash',
  'state_change_hash',
  'accumulator_root_hash',
  'authenticator',
  'sender',
  'sequence_number',
  'max_gas_amount',
  'gas_unit_price',
  'expiration_timestamp_secs',
  'tx_chain_id',
  'block_metadata_failed_proposer_indices',
  'block_metadata_timestamp_usecs',
  'payload',
]
/** The spec's decoded record: tx_chain_id renamed chain_id, and the additional nullable fields. */
const DECODED_FIELDS = [
  ...RECORD_FIELDS.map(f => (f === 'tx_chain_id' ? 'chain_id' : f)),
  'state_checkpoint_hash',
  'state_cemetery_hash',
  'genesis_direct',
  'genesis_script',
  'genesis_execute_as',
  'block_metadata_id',
  'block_metadata_epoch',
  'block_metadata_round',
  'block_metadata_proposer',
  'block_metadata_previous_block_votes_bitvec',
  'block_metadata_randomness',
  'state_checkpoint_transaction_hash',
  'validator_transaction',
  'block_id',
  'block_gas_limit_reached',
  'block_output_limit_reached',
  'block_effective_block_gas_units',
  'block_approx_output_size',
  'script_decoded',
  'multisig_entry_function_decoded',
  'entry_function_decoded',
]

let store: ObjectStore
let app: ReturnType<typeof createApp>
let server: RunningServer
const movementTxs = sampleChain(sampleSpecOf(MOVEMENT), SAMPLE_BLOCKS).flatMap(b => b.transactions)

beforeAll(async () => {
  store = (await tempStore()).store
  await buildHttpLake(store)
  const replay = await startReplay('mainnet')
  try {
    for (const v of new Set(mainnet.map(t => t.version))) {
      const source = moveSource(fullnodeClient({ url: replay.url }), { chain: APTOS, store })
      await runIngest({ chain: APTOS, source, from: Number(v), to: Number(v), store })
    }
  } finally {
    await replay.stop()
  }
  await ingestSample(store, MOVEMENT)
  await ingestSample(store, MOVEMENT_TESTNET)
  app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers('alice:wonderland') })
  server = await serve({ fetch: r => app.fetch(r) })
})
afterAll(async () => {
  await server?.close()
  await removeTempDirs()
})

const call = (host: string, path: string) => app.fetch(new Request(`http://${host}${path}`, { headers: { authorization: AUTH } }))

/** JSON lines of a 200 response. */
async function records(host: string, path: string): Promise<Json[]> {
  const res = await call(host, path)
  const text = await res.text()
  expect(res.status, text.slice(0, 300)).toBe(200)
  return text
    .split('\n')
    .filter(Boolean)
    .map(l => JSON.parse(l))
}

async function error(host: string, path: string): Promise<{ status: number; code: string; message: string }> {
  const res = await call(host, path)
  const body = (await res.json()) as { error: { status: number; code: string; message: string } }
  expect(body.error.status).toBe(res.status)
  return body.error
}

const long = (a: string) => '0x' + a.replace(/^0x/, '').padStart(64, '0')
const hexOf = (n: string | number | bigint) => '0x' + BigInt(n).toString(16)
const ALL = 'from_block=0&to_block=latest&format=json_stream'
const users = (txs: readonly RestTransaction[]) => txs.filter((t): t is RestUserTransaction => t.type === 'user_transaction')
const firstOfKind = (rows: Json[], kind: string) => rows.find(r => r.kind === kind)!
const fn = (t: RestUserTransaction) => (t.payload.type === 'entry_function_payload' ? t.payload.function : null)

describe('Move transactions on aptos.localhost (recorded mainnet)', () => {
  it('serves every recorded version with the spec record: integers, 0x-hex block number, tx_chain_id', async () => {
    const got = await records('aptos.localhost', `/v1/api/transactions?chains=APTOS&${ALL}`)
    const versions = [...new Set(mainnet.map(t => t.version))]
    expect(got.map(r => String(r.version))).toEqual(versions)
    const byVersion = new Map(mainnet.map(t => [t.version, t]))
    for (const r of got) {
      const tx = byVersion.get(String(r.version))!
      expect(Object.keys(r).sort()).toEqual([...RECORD_FIELDS].sort())
      expect(r.chain).toBe(1)
      expect(r.block_number).toBe(hexOf(tx.version))
      expect(r.transaction_index).toBe(Number(tx.version))
      expect(r.hash).toBe(tx.hash)
      expect(r.timestamp).toBe(Number(tx.timestamp ?? 0))
      expect(r.gas_used).toBe(Number(tx.gas_used))
      expect(r.event_root_hash).toBe(tx.event_root_hash)
      expect(Array.isArray(r.block_metadata_failed_proposer_indices)).toBe(true)
      if (tx.type === 'user_transaction') {
        expect(r.kind).toBe('UserTransaction')
        expect(r.sender).toBe(long(tx.sender))
        expect(r.sequence_number).toBe(Number(tx.sequence_number))
        expect(r.max_gas_amount).toBe(Number(tx.max_gas_amount))
        expect(r.gas_unit_price).toBe(Number(tx.gas_unit_price))
        expect(r.expiration_timestamp_secs).toBe(Number(tx.expiration_timestamp_secs))
        expect(r.tx_chain_id).toBe(1)
        expect(r.authenticator).toMatch(/^0x[0-9a-f]+$/)
        expect(r.payload.kind).toBe(tx.payload.type === 'script_payload' ? 'Script' : 'EntryFunction')
        if (tx.payload.type === 'entry_function_payload') {
          const [address, module, name] = tx.payload.function.split('::')
          expect(r.payload.entry_function.module).toEqual({ address: long(address), name: module })
          expect(r.payload.entry_function.function).toBe(name)
          expect(r.payload.entry_function.ty_args).toMatch(/^0x[0-9a-f]+$/)
          expect(r.payload.entry_function.args).toHaveLength(tx.payload.arguments.length)
          for (const a of r.payload.entry_function.args) expect(a).toMatch(/^0x[0-9a-f]*$/)
        }
        expect(r.block_metadata_timestamp_usecs).toBeNull()
      } else {
        expect(r.sender).toBeNull()
        expect(r.tx_chain_id).toBeNull()
        expect(r.payload).toBeNull()
      }
      if (tx.type === 'block_metadata_transaction') {
        expect(r.kind).toBe('BlockMetadataTransaction')
        expect(r.block_metadata_timestamp_usecs).toBe(Number(tx.timestamp))
        expect(r.block_metadata_failed_proposer_indices).toEqual(tx.failed_proposer_indices)
      }
    }
  })

  it('serves the decoded record: hex quantities, chain_id, the decoded entry function as JSON-encoded strings', async () => {
    const got = await records('aptos.localhost', `/v1/api/transactions/decoded?chains=aptos-mainnet&${ALL}`)
    const byVersion = new Map(mainnet.map(t => [t.version, t]))
    let decoded = 0
    for (const r of got) {
      const tx = byVersion.get(BigInt(r.version).toString())!
      expect(Object.keys(r).sort()).toEqual([...DECODED_FIELDS].sort())
      expect(r.version).toBe(hexOf(tx.version))
      expect(r.transaction_index).toBe(hexOf(tx.version))
      expect(r.gas_used).toBe(hexOf(tx.gas_used))
      expect(r.timestamp).toBe(Number(tx.timestamp ?? 0))
      expect(r.state_cemetery_hash).toBeNull()
      if (tx.type !== 'user_transaction') {
        expect(r.chain_id).toBeNull()
        expect(r.entry_function_decoded).toBeNull()
        continue
      }
      expect(r.chain_id).toBe(1)
      expect(r.sequence_number).toBe(hexOf(tx.sequence_number))
      expect(r.max_gas_amount).toBe(hexOf(tx.max_gas_amount))
      expect(r.expiration_timestamp_secs).toBe(hexOf(tx.expiration_timestamp_secs))
      const f = fn(tx)
      if (!f || !abis.module(f.split('::')[0], f.split('::')[1]) || tx.payload.type !== 'entry_function_payload') continue
      const d = r.entry_function_decoded
      expect(Object.keys(d).sort()).toEqual(['args', 'args_abi', 'type_args'])
      for (const list of [d.args, d.args_abi, d.type_args]) for (const s of list) expect(typeof s).toBe('string')
      expect(d.args.map((a: string) => JSON.parse(a))).toEqual(tx.payload.arguments)
      expect(d.type_args).toHaveLength(tx.payload.type_arguments.length)
      decoded++
    }
    expect(decoded).toBeGreaterThan(20)
    // Block metadata fields of the decoded record.
    const bm = mainnet.find(t => t.type === 'block_metadata_transaction') as RestTransaction & {
      id: string
      epoch: string
      round: string
      proposer: string
    }
    const r = got.find(x => x.hash === bm.hash)!
    expect(r.block_metadata_id).toBe(bm.id)
    expect(r.block_metadata_epoch).toBe(hexOf(bm.epoch))
    expect(r.block_metadata_round).toBe(hexOf(bm.round))
    expect(r.block_metadata_proposer).toBe(long(bm.proposer))
  })

  it('filters on sender and on entry_function_id, on both endpoints', async () => {
    const counts = new Map<string, number>()
    for (const t of users(mainnet)) counts.set(long(t.sender), (counts.get(long(t.sender)) ?? 0) + 1)
    const [sender, n] = [...counts].sort((a, b) => b[1] - a[1])[0]
    expect(n).toBeGreaterThan(1)
    const expected = [
      ...new Set(
        users(mainnet)
          .filter(t => long(t.sender) === sender)
          .map(t => t.hash),
      ),
    ]
    for (const path of ['transactions', 'transactions/decoded']) {
      const got = await records('aptos.localhost', `/v1/api/${path}?chains=1&${ALL}&sender=${sender}`)
      expect(got.map(r => r.hash)).toEqual(expected)
    }
    const coin = [
      ...new Set(
        users(mainnet)
          .filter(t => fn(t) === '0x1::coin::transfer')
          .map(t => t.hash),
      ),
    ]
    expect(coin.length).toBeGreaterThan(0)
    const got = await records('aptos.localhost', `/v1/api/transactions/decoded?chains=1&${ALL}&entry_function_id=0x1::coin::transfer`)
    expect(got.map(r => r.hash)).toEqual(coin)
    const two = await records(
      'aptos.localhost',
      `/v1/api/transactions?chains=1&${ALL}&entry_function_id__in=0x1::coin::transfer,0x1::aptos_account::transfer`,
    )
    const either = [
      ...new Set(
        users(mainnet)
          .filter(t => ['0x1::coin::transfer', '0x1::aptos_account::transfer'].includes(fn(t) ?? ''))
          .map(t => t.hash),
      ),
    ]
    expect(two.map(r => r.hash)).toEqual(either)
    expect(either.length).toBeGreaterThan(coin.length)
  })

  it('takes kind__in, transaction_type__in and type__in as one filter, and from_version/to_version for the range', async () => {
    const kinds = 'BlockMetadataTransaction,StateCheckpointTransaction,ValidatorTransaction'
    const expected = mainnet.filter(t => t.type !== 'user_transaction').map(t => t.hash)
    expect(expected.length).toBe(4)
    for (const name of ['kind__in', 'transaction_type__in', 'type__in']) {
      const got = await records('aptos.localhost', `/v1/api/transactions?chains=APTOS&${ALL}&${name}=${kinds}`)
      expect(
        got.map(r => r.hash),
        name,
      ).toEqual(expected)
    }
    const [a, b] = [Number(mainnet[10].version), Number(mainnet[20].version)]
    const byBlock = await records('aptos.localhost', `/v1/api/transactions?chains=APTOS&from_block=${a}&to_block=${b}&format=json_stream`)
    const byVersion = await records(
      'aptos.localhost',
      `/v1/api/transactions?chains=APTOS&from_version=${a}&to_version=${b}&format=json_stream`,
    )
    expect(byVersion).toEqual(byBlock)
    expect(byBlock.map(r => r.version)).toEqual([...new Set(mainnet.slice(10, 21).map(t => Number(t.version)))])
    const both = await error('aptos.localhost', `/v1/api/transactions?chains=APTOS&from_block=${a}&from_version=${a}`)
    expect(both.status).toBe(400)
  })
})

describe('Movement hosts (synthetic sample: the same ingest machinery, signed for chain ids 126 and 250)', () => {
  it('serves MOVEMENT on movement.localhost with its own chain id, by code, id or name', async () => {
    const expected = movementTxs.filter(t => Number(t.version) >= 100 && Number(t.version) <= 140)
    for (const chains of ['MOVEMENT', '126', 'movement-mainnet']) {
      const got = await records(
        'movement.localhost',
        `/v1/api/transactions?chains=${chains}&from_version=100&to_version=140&format=json_stream`,
      )
      expect(got.map(r => r.hash)).toEqual(expected.map(t => t.hash))
      expect(got.every(r => r.chain === 126)).toBe(true)
      expect(got.filter(r => r.kind === 'UserTransaction').every(r => r.tx_chain_id === 126)).toBe(true)
    }
    const decoded = await records(
      'movement.localhost',
      `/v1/api/transactions/decoded?chains=MOVEMENT&from_block=100&to_block=140&format=json_stream`,
    )
    expect(decoded.filter(r => r.kind === 'UserTransaction').every(r => r.chain_id === 126)).toBe(true)
    const transfers = decoded.filter(r => r.payload?.entry_function?.function === 'transfer')
    expect(transfers.length).toBeGreaterThan(0)
    for (const r of transfers) {
      const tx = expected.find(t => t.hash === r.hash) as RestUserTransaction
      expect(r.entry_function_decoded.args.map((a: string) => JSON.parse(a))).toEqual((tx.payload as { arguments: unknown[] }).arguments)
    }
    // Inside a block, block hash and parent hash are carried from the block's metadata and the previous version.
    const mid = firstOfKind(decoded, 'UserTransaction')
    expect(mid.block_hash).toMatch(/^0x[0-9a-f]{64}$/)
    expect(mid.parent_transaction_hash).toBe(movementTxs[Number(BigInt(mid.version)) - 1].hash)
  })

  it('serves MOVEMENT_TESTNET on movement-testnet.localhost, over the Node server too', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path: '/v1/api/transactions?chains=MOVEMENT_TESTNET&from_version=0&to_version=20&format=json_stream',
          headers: { host: `movement-testnet.localhost:${server.port}`, authorization: AUTH },
        },
        res => {
          let text = ''
          res.on('data', c => (text += c))
          res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`${res.statusCode}: ${text}`))))
        },
      )
      req.on('error', reject)
      req.end()
    })
    const got = body
      .split('\n')
      .filter(Boolean)
      .map(l => JSON.parse(l))
    const expected = sampleChain(sampleSpecOf(MOVEMENT_TESTNET), 10)
      .flatMap(b => b.transactions)
      .filter(t => Number(t.version) <= 20)
    expect(got.map(r => r.hash)).toEqual(expected.map(t => t.hash))
    expect(got.every(r => r.chain === 250)).toBe(true)
  })
})

describe('hosts never answer with another chain or family', () => {
  it('answers a Move endpoint on the EVM host with a 404 that says where it is served', async () => {
    const e = await error('localhost', '/v1/api/transactions/decoded?chains=APTOS')
    expect(e.status).toBe(404)
    expect(e.message).toMatch(/served on the Move chain hosts/)
  })

  it('answers an EVM dataset on a Move host with a 404', async () => {
    for (const path of ['logs', 'blocks']) {
      const e = await error('aptos.localhost', `/v1/api/${path}?chains=APTOS`)
      expect(e.status).toBe(404)
      expect(e.message).toMatch(/served on the EVM host/)
    }
  })

  it('answers a chain the host does not serve with a 400, whatever else is stored', async () => {
    const cases: [string, string, RegExp][] = [
      ['aptos.localhost', 'MOVEMENT', /MOVEMENT is served at movement\.localhost/],
      ['aptos.localhost', 'ETH', /ETH is served at the EVM host/],
      ['movement.localhost', '1', /valid values: MOVEMENT \(126/],
      ['movement.localhost', '1', /ETH is served at the EVM host; APTOS is served at aptos\.localhost/],
      ['movement.localhost', 'MOVEMENT_TESTNET', /served at movement-testnet\.localhost/],
      ['movement-testnet.localhost', '126', /valid values: MOVEMENT_TESTNET \(250/],
      ['localhost', 'APTOS', /APTOS is served at aptos\.localhost/],
      ['localhost', 'movement-mainnet', /MOVEMENT is served at movement\.localhost/],
    ]
    for (const [host, chains, why] of cases) {
      const e = await error(host, `/v1/api/transactions?chains=${chains}&from_block=100&to_block=120`)
      expect(e.status, `${host} chains=${chains}`).toBe(400)
      expect(e.message).toMatch(why)
    }
  })

  it('reads id 1 within the host family: Aptos on aptos.localhost, Ethereum on the EVM host, over overlapping ranges', async () => {
    // The EVM lake holds ETH blocks 100-149; MOVEMENT versions 100-149 exist too. Each host answers with its own.
    const eth = await records('localhost', '/v1/api/transactions?chains=1&from_block=100&to_block=149&format=json_stream')
    expect(eth.length).toBeGreaterThan(0)
    expect(eth.every(r => r.chain === 1 && typeof r.from === 'string')).toBe(true)
    const movement = await records('movement.localhost', '/v1/api/transactions?chains=126&from_block=100&to_block=149&format=json_stream')
    expect(new Set(movement.map(r => r.hash))).toEqual(
      new Set(movementTxs.filter(t => Number(t.version) >= 100 && Number(t.version) <= 149).map(t => t.hash)),
    )
    const aptos = await records('aptos.localhost', `/v1/api/transactions?chains=1&from_block=685&to_block=685&format=json_stream`)
    expect(aptos.map(r => r.hash)).toEqual([mainnet.find(t => t.version === '685')!.hash])
    expect(Object.keys(aptos[0])).toContain('tx_chain_id')
  })
})

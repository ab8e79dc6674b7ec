/**
 * Synthetic Move-VM chain data for the bundled sample lake and the benchmarks: no
 * Move node runs on these machines, and no Movement user transaction is recorded
 * anywhere public. Blocks of a block metadata transaction, a few user transactions
 * and a state checkpoint, in the fullnode REST API's JSON, served by an in-process
 * node (`sampleNode`) so they go through the real ingest path (moveSource →
 * toMoveRows → runIngest) like a chain's own data.
 *
 * User transactions are built and signed with `@aptos-labs/ts-sdk`: real ed25519
 * signatures over the real BCS of `RawTransaction` with the chain's id, and the
 * hash of the signed transaction, so the ingester's hash check passes only if it
 * rebuilds the same bytes. What no chain executed is made up, deterministically:
 * balances are never checked, events, write sets, gas and the accumulator, event
 * and state-change hashes are plausible values, not results of execution.
 *
 * The calls: `0x1::aptos_account::transfer`, `0x1::coin::transfer<AptosCoin>`,
 * `0x1::aptos_account::transfer_coins<T>`, `0x1::aptos_account::batch_transfer`
 * (vectors), `0xc0ffee::message::set_message` (a `String`), a call to a module
 * the node does not have (stored undecoded) and failed transfers (Move aborts).
 */
import {
  Account,
  AccountAddress,
  AccountAuthenticatorEd25519,
  ChainId,
  Ed25519PrivateKey,
  EntryFunction,
  hashValues,
  MoveString,
  MoveVector,
  PrivateKey,
  PrivateKeyVariants,
  RawTransaction,
  SignedTransaction,
  SimpleTransaction,
  TransactionAuthenticatorEd25519,
  TransactionPayloadEntryFunction,
  U64,
  type EntryFunctionArgumentTypes,
} from '@aptos-labs/ts-sdk'
import type { Chain } from '../../src/chains/registry.ts'
import { moveSource, type MoveIngestStats } from '../../src/ingest/move-source.ts'
import { runIngest, type IngestReport } from '../../src/ingest/run.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import type { AbiModule } from '../../src/move/abi-cache.ts'
import { blockMetadataHashes, stateCheckpointHash, userTransactionHash } from '../../src/move/hash.ts'
import { FullnodeError, type FullnodeClient } from '../../src/move/rest.ts'
import type {
  RestBlockMetadataTransaction,
  RestEvent,
  RestLedgerInfo,
  RestStateCheckpointTransaction,
  RestTransaction,
  RestUserTransaction,
} from '../../src/move/rest-types.ts'
import { longAddress, normalizeAddress, parseTypeArgument } from '../../src/move/type-tags.ts'
import { mulberry32 } from './random.ts'

export interface SampleSpec {
  /** Chain id the user transactions are signed for. */
  chainId: number
  /** Distinguishes the keys, block ids and values of one chain's sample from another's. */
  seed: string
  /** Version of the first transaction (default 0). */
  firstVersion?: number
  /** Most user transactions in one block (default 6); some blocks have none. */
  maxUsersPerBlock?: number
  /** Accounts that send and receive (default 12). */
  accounts?: number
  /** Block timestamp of the first block, in microseconds (default 2025-01-01T00:00:00Z). */
  startMicros?: bigint
}

/** A block of the sample: its metadata transaction's id and its versions. */
export interface SampleBlock {
  height: number
  id: string
  firstVersion: number
  lastVersion: number
  transactions: RestTransaction[]
}

/** Calls to this address go to a module no node has: they are stored verified but undecoded. */
export const UNKNOWN_MODULE = '0xbadc0de::mystery'
/** A user module with a `String` parameter. */
export const MESSAGE_MODULE = '0xc0ffee::message'
const SAMPLE_COIN = '0xc0ffee::sample_coin::SampleCoin'
const APTOS_COIN = '0x1::aptos_coin::AptosCoin'
const BLOCK_MICROS = 400_000n
const EPOCH = '42'
const SUCCESS = 'Executed successfully'
const ABORT = 'Move abort in 0x1::coin: EINSUFFICIENT_BALANCE(0x10006): Not enough coins to complete transaction'

const entry = (name: string, params: string[], generics = 0) => ({
  name,
  visibility: 'public',
  is_entry: true,
  is_view: false,
  generic_type_params: Array.from({ length: generics }, () => ({ constraints: [] })),
  params,
  return: [],
})

/**
 * The module ABIs the sample's node serves: only the functions and structs the sample
 * calls, with the signatures the Aptos framework declares for them.
 */
export const SAMPLE_MODULES: readonly AbiModule[] = [
  {
    address: '0x1',
    name: 'aptos_account',
    exposed_functions: [
      entry('transfer', ['&signer', 'address', 'u64']),
      entry('transfer_coins', ['&signer', 'address', 'u64'], 1),
      entry('batch_transfer', ['&signer', 'vector<address>', 'vector<u64>']),
    ],
    structs: [],
  },
  { address: '0x1', name: 'coin', exposed_functions: [entry('transfer', ['&signer', 'address', 'u64'], 1)], structs: [] },
  {
    address: '0x1',
    name: 'string',
    exposed_functions: [],
    structs: [{ name: 'String', fields: [{ name: 'bytes', type: 'vector<u8>' }] }],
  },
  { address: '0xc0ffee', name: 'message', exposed_functions: [entry('set_message', ['&signer', '0x1::string::String'])], structs: [] },
]

/** A small deterministic generator (mulberry32), seeded from a string. */
function prng(seed: string): () => number {
  let a = 0
  for (const b of hashValues([seed]).slice(0, 4)) a = (a << 8) | b
  return mulberry32(a)
}

/** A 32-byte value derived from the seed and labels: block ids and the hashes no execution produced. */
const derived = (seed: string, ...labels: (string | number)[]) => bytesToHex(hashValues([`${seed}/${labels.join('/')}`]))

interface Sender {
  account: Account
  address: string
  sequence: bigint
}

/** The sample's accounts, keys derived from the seed, each made when first used (a benchmark may have many). */
interface Accounts {
  count: number
  at(i: number): Sender
}

function accounts(seed: string, count: number): Accounts {
  const made = new Map<number, Sender>()
  return {
    count,
    at(i) {
      let s = made.get(i)
      if (!s) {
        const key = PrivateKey.formatPrivateKey(derived(seed, 'account', i), PrivateKeyVariants.Ed25519)
        const account = Account.fromPrivateKey({ privateKey: new Ed25519PrivateKey(key), legacy: true })
        made.set(i, (s = { account, address: normalizeAddress(account.accountAddress.toString()), sequence: 0n }))
      }
      return s
    },
  }
}

/** A uniformly drawn account other than `not`. */
function otherThan(r: () => number, senders: Accounts, not: number): string {
  const k = Math.floor(r() * (senders.count - 1))
  return senders.at(k >= not ? k + 1 : k).address
}

function fee(gas: number): RestEvent {
  return {
    guid: { creation_number: '0', account_address: '0x0' },
    sequence_number: '0',
    type: '0x1::transaction_fee::FeeStatement',
    data: {
      execution_gas_units: String(Math.ceil(gas / 2)),
      io_gas_units: String(Math.floor(gas / 2)),
      storage_fee_octas: '0',
      storage_fee_refund_octas: '0',
      total_charge_gas_units: String(gas),
    },
  }
}

const moduleEvent = (type: string, data: unknown): RestEvent => ({
  guid: { creation_number: '0', account_address: '0x0' },
  sequence_number: '0',
  type,
  data,
})

/** One call of the mix: REST JSON of the payload, the SDK entry function, and the events it would emit. */
interface Call {
  function: string
  typeArgs: string[]
  json: unknown[]
  args: EntryFunctionArgumentTypes[]
  /** Transfers: (to, amount) pairs, for the events. */
  moves: [string, bigint][]
}

function pickCall(r: () => number, senders: Accounts, from: number, version: number): Call {
  const to = otherThan(r, senders, from)
  const amount = BigInt(1 + Math.floor(r() * 5_000_000))
  const transfer = (fn: string, typeArgs: string[]): Call => ({
    function: fn,
    typeArgs,
    json: [to, String(amount)],
    args: [AccountAddress.from(to), new U64(amount)],
    moves: [[to, amount]],
  })
  const pick = r()
  if (pick < 0.35) return transfer('0x1::aptos_account::transfer', [])
  if (pick < 0.6) return transfer('0x1::coin::transfer', [APTOS_COIN])
  if (pick < 0.7) return transfer('0x1::aptos_account::transfer_coins', [SAMPLE_COIN])
  if (pick < 0.8) {
    const n = 2 + Math.floor(r() * 3)
    const tos = Array.from({ length: n }, () => otherThan(r, senders, from))
    const amounts = tos.map(() => BigInt(1 + Math.floor(r() * 100_000)))
    return {
      function: '0x1::aptos_account::batch_transfer',
      typeArgs: [],
      json: [tos, amounts.map(String)],
      args: [new MoveVector(tos.map(a => AccountAddress.from(a))), MoveVector.U64(amounts)],
      moves: tos.map((a, i) => [a, amounts[i]]),
    }
  }
  if (pick < 0.93) {
    const text = `gm from version ${version}`
    return { function: `${MESSAGE_MODULE}::set_message`, typeArgs: [], json: [text], args: [new MoveString(text)], moves: [] }
  }
  const n = BigInt(Math.floor(r() * 1000))
  return { function: `${UNKNOWN_MODULE}::poke`, typeArgs: [], json: [String(n)], args: [new U64(n)], moves: [] }
}

/** Builds, signs and hashes one user transaction; REST JSON as a node would print it after execution. */
function userTransaction(
  spec: Required<SampleSpec>,
  r: () => number,
  senders: Accounts,
  version: number,
  timestamp: bigint,
): RestUserTransaction {
  const index = Math.floor(r() * senders.count)
  const from = senders.at(index)
  const call = pickCall(r, senders, index, version)
  const [address, module, name] = call.function.split('::')
  const typeArgs = call.typeArgs.map(parseTypeArgument)
  const payload = new TransactionPayloadEntryFunction(EntryFunction.build(`${longAddress(address)}::${module}`, name, typeArgs, call.args))
  const maxGas = 2_000n + BigInt(Math.floor(r() * 8) * 1_000)
  const gasPrice = 100n
  const expiration = timestamp / 1_000_000n + 600n
  const raw = new RawTransaction(
    from.account.accountAddress,
    from.sequence,
    payload,
    maxGas,
    gasPrice,
    expiration,
    new ChainId(spec.chainId),
  )
  const auth = from.account.signTransactionWithAuthenticator(new SimpleTransaction(raw))
  if (!(auth instanceof AccountAuthenticatorEd25519)) throw new Error('expected an ed25519 account authenticator')
  const signed = new SignedTransaction(raw, new TransactionAuthenticatorEd25519(auth.public_key, auth.signature))
  const failed = call.moves.length === 1 && r() < 0.05
  const gas = failed ? 4 + Math.floor(r() * 4) : 6 + Math.floor(r() * 30)
  const events: RestEvent[] = failed
    ? []
    : call.moves.flatMap(([to, amount]) => [
        moveEvent('0x1::fungible_asset::Withdraw', spec.seed, from.address, amount),
        moveEvent('0x1::fungible_asset::Deposit', spec.seed, to, amount),
      ])
  if (!failed && call.function === `${MESSAGE_MODULE}::set_message`)
    events.push(moduleEvent(`${MESSAGE_MODULE}::MessageChange`, { account: from.address, to_message: call.json[0] }))
  events.push(fee(gas))
  const sequence = from.sequence
  from.sequence++
  return {
    version: String(version),
    hash: userTransactionHash(signed.bcsToBytes()),
    state_change_hash: derived(spec.seed, 'state_change', version),
    event_root_hash: derived(spec.seed, 'event_root', version),
    state_checkpoint_hash: null,
    gas_used: String(gas),
    success: !failed,
    vm_status: failed ? ABORT : SUCCESS,
    accumulator_root_hash: derived(spec.seed, 'accumulator', version),
    changes: [
      {
        address: from.address,
        state_key_hash: derived(spec.seed, 'state_key', from.address),
        data: { type: '0x1::account::Account', data: { authentication_key: from.address, sequence_number: String(sequence + 1n) } },
        type: 'write_resource',
      },
    ],
    sender: from.address,
    sequence_number: String(sequence),
    max_gas_amount: String(maxGas),
    gas_unit_price: String(gasPrice),
    expiration_timestamp_secs: String(expiration),
    payload: { function: call.function, type_arguments: call.typeArgs, arguments: call.json, type: 'entry_function_payload' },
    signature: { public_key: auth.public_key.toString(), signature: auth.signature.toString(), type: 'ed25519_signature' },
    replay_protection_nonce: null,
    events,
    timestamp: String(timestamp),
    type: 'user_transaction',
  }
}

function moveEvent(type: string, seed: string, owner: string, amount: bigint): RestEvent {
  return moduleEvent(type, { store: normalizeAddress(derived(seed, 'primary_store', owner)), amount: String(amount) })
}

/**
 * The sample chain, block after block, forever: pull as many as needed. Deterministic:
 * the same spec always gives the same transactions, hashes and signatures.
 */
export function* sampleBlocks(input: SampleSpec): Generator<SampleBlock> {
  const spec: Required<SampleSpec> = {
    firstVersion: 0,
    maxUsersPerBlock: 6,
    accounts: 12,
    startMicros: 1_735_689_600_000_000n,
    ...input,
  }
  const r = prng(spec.seed)
  const senders = accounts(spec.seed, spec.accounts)
  const validators = Array.from({ length: 4 }, (_, i) => normalizeAddress(derived(spec.seed, 'validator', i)))
  let version = spec.firstVersion
  for (let height = 0; ; height++) {
    const timestamp = spec.startMicros + BigInt(height) * BLOCK_MICROS
    const id = derived(spec.seed, 'block', height)
    const failedProposers = r() < 0.1 ? [Math.floor(r() * validators.length)] : []
    const fields = {
      id,
      epoch: EPOCH,
      round: String(height + 1 + failedProposers.length),
      proposer: validators[height % validators.length],
      previous_block_votes_bitvec: [0b1111_0000 | Math.floor(r() * 16)],
      failed_proposer_indices: failedProposers,
      timestamp: String(timestamp),
    }
    const first = version
    const metadata: RestBlockMetadataTransaction = {
      version: String(version),
      hash: blockMetadataHashes(fields)[0],
      state_change_hash: derived(spec.seed, 'state_change', version),
      event_root_hash: derived(spec.seed, 'event_root', version),
      state_checkpoint_hash: null,
      gas_used: '0',
      success: true,
      vm_status: SUCCESS,
      accumulator_root_hash: derived(spec.seed, 'accumulator', version),
      changes: [],
      ...fields,
      events: [
        {
          guid: { creation_number: '3', account_address: '0x1' },
          sequence_number: String(height),
          type: '0x1::block::NewBlockEvent',
          data: {
            epoch: EPOCH,
            round: fields.round,
            height: String(height),
            proposer: fields.proposer,
            time_microseconds: fields.timestamp,
            hash: id,
          },
        },
      ],
      type: 'block_metadata_transaction',
    }
    const txs: RestTransaction[] = [metadata]
    version++
    const users = r() < 0.15 ? 0 : 1 + Math.floor(r() * spec.maxUsersPerBlock)
    for (let i = 0; i < users; i++) txs.push(userTransaction(spec, r, senders, version++, timestamp))
    const checkpoint: RestStateCheckpointTransaction = {
      version: String(version),
      hash: stateCheckpointHash(id),
      state_change_hash: derived(spec.seed, 'state_change', version),
      event_root_hash: derived(spec.seed, 'event_root', version),
      state_checkpoint_hash: derived(spec.seed, 'state_checkpoint', version),
      gas_used: '0',
      success: true,
      vm_status: SUCCESS,
      accumulator_root_hash: derived(spec.seed, 'accumulator', version),
      changes: [],
      events: [],
      timestamp: String(timestamp),
      type: 'state_checkpoint_transaction',
    }
    txs.push(checkpoint)
    yield { height, id, firstVersion: first, lastVersion: version, transactions: txs }
    version++
  }
}

/** The first `count` blocks of a sample chain. */
export function sampleChain(spec: SampleSpec, count: number): SampleBlock[] {
  const out: SampleBlock[] = []
  for (const block of sampleBlocks(spec)) {
    if (out.length === count) break
    out.push(block)
  }
  return out
}

const notFound = (path: string, code: string, message: string) => new FullnodeError(`sample:/v1${path}`, 404, code, message)

/**
 * An in-process fullnode over sample blocks: the part of the REST API the ingester
 * reads, with a real node's answers (contiguous pages, 404 for what it lacks).
 */
export function sampleNode(
  chainId: number,
  blocks: readonly SampleBlock[],
  modules: readonly AbiModule[] = SAMPLE_MODULES,
): FullnodeClient {
  const txs = blocks.flatMap(b => b.transactions)
  if (txs.length === 0) throw new Error('a sample node needs at least one block')
  const first = Number(txs[0].version)
  const last = txs[txs.length - 1]
  const at = (v: number) => txs[v - first]
  const blockOf = (v: number) => blocks.find(b => b.firstVersion <= v && v <= b.lastVersion)
  return {
    async ledgerInfo(): Promise<RestLedgerInfo> {
      return {
        chain_id: chainId,
        epoch: EPOCH,
        ledger_version: last.version,
        oldest_ledger_version: String(first),
        ledger_timestamp: last.timestamp ?? '0',
        node_role: 'full_node',
        oldest_block_height: String(blocks[0].height),
        block_height: String(blocks[blocks.length - 1].height),
        git_hash: null,
      }
    },
    async transactions(start, limit) {
      const s = Number(start)
      if (s > Number(last.version))
        throw new FullnodeError(
          `sample:/v1/transactions?start=${s}`,
          400,
          'invalid_input',
          `start ${s} is above the ledger version ${last.version}`,
        )
      return txs.slice(Math.max(0, s - first), Math.max(0, s - first) + Math.min(limit, 100))
    },
    async transactionByVersion(version) {
      const tx = at(Number(version))
      if (!tx)
        throw notFound(
          `/transactions/by_version/${version}`,
          'transaction_not_found',
          `Transaction not found by Ledger version(${version})`,
        )
      return tx
    },
    async blockByVersion(version) {
      const b = blockOf(Number(version))
      if (!b) throw notFound(`/blocks/by_version/${version}`, 'block_not_found', `Block not found by Ledger version(${version})`)
      return {
        block_height: String(b.height),
        block_hash: b.id,
        first_version: String(b.firstVersion),
        last_version: String(b.lastVersion),
      }
    },
    async moduleAbi(address, name) {
      return modules.find(m => normalizeAddress(m.address) === normalizeAddress(address) && m.name === name) ?? null
    },
  }
}

/** Blocks per chain in the bundled sample (about 250 transactions each). */
export const SAMPLE_BLOCKS = 50
/** Versions per partition in the bundled sample: a few partitions per chain, as real data has. */
export const SAMPLE_PARTITION_VERSIONS = 100

/** The sample of a Move chain: its code is the seed, its id the signing chain id. */
export const sampleSpecOf = (chain: Pick<Chain, 'id' | 'code'>): SampleSpec => ({ chainId: chain.id, seed: `sample/${chain.code}` })

/**
 * Generates a chain's sample and ingests it into `store` through the real path
 * (moveSource over `sampleNode`, runIngest): resumable and idempotent like any ingest.
 */
export async function ingestSample(
  store: ObjectStore,
  chain: Chain,
  blocks = SAMPLE_BLOCKS,
): Promise<{ report: IngestReport; stats: MoveIngestStats }> {
  if (chain.family !== 'move') throw new Error(`${chain.code} is not a Move-VM chain`)
  const chainBlocks = sampleChain(sampleSpecOf(chain), blocks)
  const source = moveSource(sampleNode(chain.id, chainBlocks), { chain, store })
  const report = await runIngest({
    chain,
    source,
    from: chainBlocks[0].firstVersion,
    to: chainBlocks[chainBlocks.length - 1].lastVersion,
    store,
    partitionBlocks: SAMPLE_PARTITION_VERSIONS,
    label: SAMPLE_LABEL,
  })
  return { report, stats: source.stats }
}

/** How status records label the sample: it is made here, not recorded from the chain. */
export const SAMPLE_LABEL = 'synthetic local data'

/** The address of account `index` of a sample (what `sender=` of its transactions selects). */
export const sampleAccount = (spec: SampleSpec, index: number): string => accounts(spec.seed, Math.max(index + 1, 2)).at(index).address

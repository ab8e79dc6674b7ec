/**
 * The Move-VM chain source: committed transactions from an Aptos-style fullnode in
 * pages of at most 100 → the ABIs of the called modules (cached in the store) →
 * `toMoveRows` (hash-verified rows), for the same ingest loop as EVM chains
 * (run.ts). Versions are the range key.
 *
 * - A real node never skips a version: a page that does is an error naming the
 *   missing version, unless the source is declared `sparse` (a recorded source).
 * - A transaction whose rebuilt BCS hashes to something else than the node's hash
 *   fails the whole range, naming its version: nothing of the range is published.
 * - The block id and parent hash of the first versions of a range come from the
 *   version before it (`GET /transactions/by_version`, `GET /blocks/by_version`).
 * - ABIs are the node's current ones, fetched once per module and kept in the store
 *   under `<chain>/abis/<address>/<module>.json`. Aptos' upgrade rules keep every
 *   existing public or entry function signature and struct layout, so the current
 *   ABI decodes older calls; a module or function newer than the cached ABI (a call
 *   at a version above the one the ABI was fetched at) is fetched again.
 */
import { chainKey, type Chain } from '../chains/registry.ts'
import { MOVE_DATASETS, moveTransactions } from '../datasets/move.ts'
import type { BlockRange } from '../manifest/types.ts'
import { AbiCache, entryPayloadsOf, functionAbi, prefetchAbis, splitFunctionId, type AbiModule } from '../move/abi-cache.ts'
import { FullnodeError, MAX_PAGE, type FullnodeClient } from '../move/rest.ts'
import type { RestTransaction } from '../move/rest-types.ts'
import { toMoveRows, type MoveCarry } from '../move/transform.ts'
import { moduleKey, normalizeAddress } from '../move/type-tags.ts'
import type { ObjectStore } from '../store/types.ts'
import { semaphore } from './rpc.ts'
import type { ChainSource } from './source.ts'
import { packBatch, type PackedBatch } from '../columns/batch.ts'
import { storedFields } from '../parquet/write.ts'

export interface MoveSourceOptions {
  /** The chain the node must serve: its id is checked against the node's ledger info. */
  chain: Chain
  /** Where module ABIs are cached (the lake's store). */
  store: ObjectStore
  /** Accept pages that skip versions (a recorded source, never a real node). */
  sparse?: boolean
  /** Transactions per request, 1…100 (default 100). */
  pageSize?: number
  /** Page requests in flight (default 4). */
  concurrency?: number
  /** Argument encodings tried per transaction without a fitting ABI (see toMoveRows). */
  inferLimit?: number
  /** Notes for the operator (undecoded calls, refreshed ABIs). */
  log?: (line: string) => void
}

/** What a Move ingest read and how much of it was proven and decoded. */
export interface MoveIngestStats {
  transactions: number
  /** Rows whose hash was recomputed and equals the node's. */
  verified: number
  /** Rows kept without a hash check (genesis, validator transactions, …). */
  unverified: number
  /** Calls stored with their decoded column null (no ABI, or one that does not fit). */
  undecoded: number
  /** The first undecoded calls, with the reason. */
  undecodedSamples: { version: string; reason: string }[]
  /** Module ABIs asked of the node by this source (found or not). */
  abiFetches: number
  /** Module ABIs read from the store's cache. */
  abiCacheHits: number
}

/** A ChainSource that also reports what it read. */
export interface MoveChainSource extends ChainSource {
  readonly stats: MoveIngestStats
}

/** A version the node should have served and did not: a real node never skips one. */
export class MissingVersionError extends Error {
  readonly version: number
  constructor(version: number, detail: string) {
    super(`version ${version} is missing: ${detail}`)
    this.name = 'MissingVersionError'
    this.version = version
  }
}

/** Transactions whose rebuilt BCS does not hash to the node's hash (or that cannot be read): the range is not published. */
export class RefusedTransactionsError extends Error {
  readonly refused: { version: string; reason: string }[]
  constructor(range: BlockRange, refused: { version: string; reason: string }[]) {
    const shown = refused
      .slice(0, 5)
      .map(r => `${r.version} (${r.reason})`)
      .join('; ')
    super(
      `versions ${range[0]}-${range[1]} not published: ${refused.length} transaction(s) refused: ${shown}${refused.length > 5 ? '; …' : ''}`,
    )
    this.name = 'RefusedTransactionsError'
    this.refused = refused
  }
}

/** The node serves another chain than the one named. */
export class ChainMismatchError extends Error {}

/** A cached ABI as stored: the module, or null when the node said it does not exist. */
export interface StoredAbi {
  address: string
  name: string
  /** Ledger version the node had reached, at least, when it answered. */
  ledger_version: string
  abi: AbiModule | null
}

/** Store key of a module's cached ABI. */
export const abiKey = (chain: Pick<Chain, 'family' | 'id'>, address: string, name: string): string =>
  `${chainKey(chain)}/abis/${normalizeAddress(address)}/${name}.json`

const MAX_SAMPLES = 20
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** The result of a request, or null when the node answers 404 (not found) or 410 (pruned). */
async function orNull<T>(request: Promise<T>): Promise<T | null> {
  try {
    return await request
  } catch (e) {
    if (e instanceof FullnodeError && (e.status === 404 || e.status === 410)) return null
    throw e
  }
}

const versionOf = (tx: RestTransaction): number => {
  const v = Number(tx.version)
  if (!Number.isSafeInteger(v)) throw new Error(`the node returned a transaction without a usable version: ${JSON.stringify(tx.version)}`)
  return v
}

/** Checks a page of a real node: exactly `count` transactions, versions `start`, `start + 1`, …. */
export function checkContiguous(page: readonly RestTransaction[], start: number, count: number): void {
  for (let i = 0; i < count; i++) {
    const got = page[i]
    if (!got || versionOf(got) !== start + i) {
      const what = got ? `version ${got.version} came in its place` : `the page ended after ${page.length} of ${count} transactions`
      throw new MissingVersionError(
        start + i,
        `GET /transactions?start=${start}&limit=${count}: ${what}. A node never skips a version; only a recorded source may (ingest it with --sparse)`,
      )
    }
  }
}

/** Creates the source for one node. */
export function moveSource(client: FullnodeClient, options: MoveSourceOptions): MoveChainSource {
  const { chain, store } = options
  const pageSize = options.pageSize ?? MAX_PAGE
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE)
    throw new RangeError(`pageSize must be 1…${MAX_PAGE}, got ${pageSize}`)
  const limit = semaphore(Math.max(1, options.concurrency ?? 4))
  const log = options.log ?? (() => {})
  const stats: MoveIngestStats = {
    transactions: 0,
    verified: 0,
    unverified: 0,
    undecoded: 0,
    undecodedSamples: [],
    abiFetches: 0,
    abiCacheHits: 0,
  }
  const abis = new AbiCache()
  /** Per module key: the ledger version its ABI is known to be current at. */
  const fetchedAt = new Map<string, bigint>()
  const loading = new Map<string, Promise<AbiModule | null>>()
  const refreshed = new Set<string>()
  let ledger: { chainId: number; version: bigint } | null = null

  async function readLedger(): Promise<{ chainId: number; version: bigint }> {
    const info = await client.ledgerInfo()
    if (info.chain_id !== chain.id) {
      throw new ChainMismatchError(`the node serves chain id ${info.chain_id}, not ${chain.code} (${chain.id}): check --chain and --rest`)
    }
    const version = BigInt(info.ledger_version)
    ledger = { chainId: info.chain_id, version: ledger && ledger.version > version ? ledger.version : version }
    return ledger
  }

  /** Asks the node for a module and caches the answer in the store. */
  async function fetchFromNode(address: string, name: string): Promise<AbiModule | null> {
    const at = (ledger ?? (await readLedger())).version
    stats.abiFetches++
    const abi = await client.moduleAbi(address, name)
    const record: StoredAbi = { address: normalizeAddress(address), name, ledger_version: String(at), abi }
    await store.put(abiKey(chain, address, name), encoder.encode(JSON.stringify(record)), { contentType: 'application/json' })
    fetchedAt.set(moduleKey(address, name), at)
    return abi
  }

  /** A module's ABI: from the store when cached there, else from the node (once per module, however many ask). */
  function loadAbi(address: string, name: string): Promise<AbiModule | null> {
    const key = moduleKey(address, name)
    let p = loading.get(key)
    if (!p) {
      p = (async () => {
        const got = await store.get(abiKey(chain, address, name))
        if (!got) return fetchFromNode(address, name)
        const record = JSON.parse(decoder.decode(got.body)) as StoredAbi
        stats.abiCacheHits++
        fetchedAt.set(key, BigInt(record.ledger_version))
        return record.abi
      })()
      loading.set(key, p)
      p.catch(() => loading.delete(key))
    }
    return p
  }

  /** Fetches again a cached module that lacks what a later transaction calls (a module published or upgraded since). */
  async function refreshStale(txs: readonly RestTransaction[]): Promise<boolean> {
    const stale = new Map<string, { address: string; module: string }>()
    for (const tx of txs) {
      for (const p of entryPayloadsOf(tx)) {
        const { address, module } = splitFunctionId(p.function)
        const key = moduleKey(address, module)
        if (refreshed.has(key) || typeof functionAbi(abis, p.function) !== 'string') continue
        const at = fetchedAt.get(key)
        if (at !== undefined && at < BigInt(tx.version)) stale.set(key, { address, module })
      }
    }
    for (const [key, { address, module }] of stale) {
      refreshed.add(key)
      const abi = await fetchFromNode(address, module)
      if (abi) abis.add([abi])
      else abis.markMissing(address, module)
      log(`ABI of ${key} refreshed: the cached one predates a call to it`)
    }
    return stale.size > 0
  }

  /** The transaction before `from`, as the carry of toMoveRows; null when the node does not have it. */
  async function prevOf(from: number): Promise<MoveCarry | null> {
    if (from === 0) return null
    const tx = await orNull(client.transactionByVersion(from - 1))
    if (!tx) return null
    if (versionOf(tx) !== from - 1) throw new Error(`GET /transactions/by_version/${from - 1} returned version ${tx.version}`)
    let blockId: string | null = null
    if (tx.type === 'block_metadata_transaction') blockId = tx.id
    else if (tx.type !== 'state_checkpoint_transaction' && tx.type !== 'block_epilogue_transaction') {
      blockId = (await orNull(client.blockByVersion(from - 1)))?.block_hash ?? null
    }
    return { version: BigInt(tx.version), hash: tx.hash, blockId }
  }

  async function contiguousPages(from: number, to: number): Promise<RestTransaction[]> {
    const starts: number[] = []
    for (let a = from; a <= to; a += pageSize) starts.push(a)
    const pages = await Promise.all(
      starts.map(a =>
        limit(async () => {
          const count = Math.min(pageSize, to - a + 1)
          const page = await client.transactions(a, count)
          checkContiguous(page, a, count)
          return page.slice(0, count)
        }),
      ),
    )
    return pages.flat()
  }

  /** A recorded source: page on from the last version seen; versions must still only go up. */
  async function sparsePages(from: number, to: number): Promise<RestTransaction[]> {
    const out: RestTransaction[] = []
    let start = from
    while (start <= to) {
      const count = Math.min(pageSize, to - start + 1)
      const page = await limit(() => client.transactions(start, count))
      let last = start - 1
      for (const tx of page) {
        const v = versionOf(tx)
        if (v <= last) throw new Error(`GET /transactions?start=${start}&limit=${count}: version ${v} out of order (after ${last})`)
        last = v
        if (v > to) return out
        out.push(tx)
      }
      if (page.length < count) break
      start = last + 1
    }
    return out
  }

  return {
    datasets: MOVE_DATASETS,
    stats,
    async head() {
      return Number((await readLedger()).version)
    },
    async fetch([from, to]: BlockRange): Promise<Record<string, PackedBatch>> {
      const { chainId } = ledger ?? (await readLedger())
      const [txs, prev] = await Promise.all([options.sparse ? sparsePages(from, to) : contiguousPages(from, to), prevOf(from)])
      const fetchModule = (address: string, name: string) => loadAbi(address, name)
      await prefetchAbis(txs, abis, fetchModule)
      if (await refreshStale(txs)) await prefetchAbis(txs, abis, fetchModule)
      const { batch, report } = toMoveRows(txs, { abis, chainId, prev, inferLimit: options.inferLimit })
      if (report.refused.length) throw new RefusedTransactionsError([from, to], report.refused)
      stats.transactions += batch.length
      stats.verified += report.verified
      stats.unverified += report.unverified.length
      stats.undecoded += report.undecoded.length
      for (const u of report.undecoded) if (stats.undecodedSamples.length < MAX_SAMPLES) stats.undecodedSamples.push(u)
      if (report.undecoded.length)
        log(
          `versions ${from}-${to}: ${report.undecoded.length} call(s) not decoded, e.g. ${report.undecoded[0].version}: ${report.undecoded[0].reason}`,
        )
      return { [moveTransactions.storage]: packBatch(storedFields(moveTransactions), batch) }
    },
  }
}

/**
 * Re-decode: rebuilds the DEX partitions of a lake from its stored logs and transactions
 * (after a registry change, or for a lake ingested before the DEX datasets existed), with
 * no node needed for pools created in the lake's range. One unit per stored logs
 * partition, in block order (position state carries over), each unit's four DEX
 * partitions published together, replacing what was there.
 */
import type { Hex } from 'viem'
import type { Chain } from '../chains/registry.ts'
import { DEX_DATASETS } from '../datasets/dex.ts'
import { logs, transactions } from '../datasets/evm.ts'
import type { DexBlock, DexLog } from '../dex/decode.ts'
import { cellOf, type RowBatch } from '../columns/batch.ts'
import { publish } from '../manifest/publish.ts'
import { ManifestReader } from '../manifest/read.ts'
import type { BlockRange, PartitionEntry } from '../manifest/types.ts'
import { putPartition } from '../parquet/put.ts'
import { runQuery } from '../query/engine.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import { bytesToHex } from '../schema/hex.ts'
import type { ObjectStore } from '../store/types.ts'
import { decodeUnit, mergeScans, rpcPoolResolver } from './dex.ts'
import { lakePositions, PositionTracker } from './positions.ts'
import { scanBlocks } from '../dex/decode.ts'
import type { RpcClient } from './rpc.ts'
import { chainRefOf } from './run.ts'

export interface RedecodeOptions {
  chain: Chain
  store: ObjectStore
  /** Block bounds (default: all stored logs); units are whole logs partitions. */
  from?: number
  to?: number
  /** A node for pools created before the lake's range and not in the store cache; without one their tokens are null. */
  rpc?: RpcClient
  log?: (line: string) => void
}

export interface RedecodeReport {
  units: number
  rows: Record<string, number>
  elapsedMs: number
}

const hex = (v: unknown): Hex => bytesToHex(v as Uint8Array) as Hex
const quantity = (v: unknown): Hex => `0x${(v as bigint).toString(16)}`

async function rowsOf(
  store: ObjectStore,
  manifest: ManifestReader,
  chain: Chain,
  dataset: DatasetDecl,
  range: BlockRange,
  names: string[],
) {
  const result = await runQuery(
    { store, manifest },
    { chain, dataset, from: range[0], to: range[1], predicates: [], fields: names.map(n => dataset.fields.find(f => f.name === n)!) },
  )
  const batches: RowBatch[] = []
  for await (const b of result.batches) batches.push(b)
  return batches
}

/** The decoder's blocks from stored logs and transactions of a range (blocks without logs have no DEX rows). */
async function storedBlocks(store: ObjectStore, manifest: ManifestReader, chain: Chain, range: BlockRange): Promise<DexBlock[]> {
  const blocks = new Map<bigint, DexBlock & { logs: DexLog[]; transactions: { hash: Hex; from: Hex; to: Hex | null }[] }>()
  const logFields = ['block_number', 'block_hash', 'block_timestamp', 'transaction_index', 'transaction_hash', 'log_index', 'address']
  const topics = ['topic0', 'topic1', 'topic2', 'topic3']
  for (const b of await rowsOf(store, manifest, chain, logs, range, [...logFields, ...topics, 'data'])) {
    for (let i = 0; i < b.length; i++) {
      const n = cellOf(b, 'block_number', i) as bigint
      let block = blocks.get(n)
      if (!block) {
        block = {
          number: quantity(n),
          hash: hex(cellOf(b, 'block_hash', i)),
          timestamp: quantity(cellOf(b, 'block_timestamp', i)),
          transactions: [],
          logs: [],
        }
        blocks.set(n, block)
      }
      const ts: Hex[] = []
      for (const t of topics) {
        const v = cellOf(b, t, i)
        if (v === null) break
        ts.push(hex(v))
      }
      block.logs.push({
        address: hex(cellOf(b, 'address', i)),
        topics: ts,
        data: hex(cellOf(b, 'data', i)),
        logIndex: quantity(cellOf(b, 'log_index', i)),
        transactionIndex: quantity(cellOf(b, 'transaction_index', i)),
        transactionHash: hex(cellOf(b, 'transaction_hash', i)),
      })
    }
  }
  for (const b of await rowsOf(store, manifest, chain, transactions, range, ['block_number', 'transaction_index', 'hash', 'from', 'to'])) {
    for (let i = 0; i < b.length; i++) {
      const block = blocks.get(cellOf(b, 'block_number', i) as bigint)
      if (!block) continue
      const to = cellOf(b, 'to', i)
      block.transactions[Number(cellOf(b, 'transaction_index', i))] = {
        hash: hex(cellOf(b, 'hash', i)),
        from: hex(cellOf(b, 'from', i)),
        to: to === null ? null : hex(to),
      }
    }
  }
  return [...blocks.values()].sort((a, b) => Number(BigInt(a.number) - BigInt(b.number)))
}

/** Rebuilds the DEX partitions of the stored logs partitions in range. */
export async function redecode(opts: RedecodeOptions): Promise<RedecodeReport> {
  const started = Date.now()
  const log = opts.log ?? (() => {})
  const ref = chainRefOf(opts.chain)
  if (opts.chain.family !== 'evm') throw new Error(`${opts.chain.code} is not an EVM chain: it has no DEX datasets`)
  const manifest = new ManifestReader(opts.store, { rootTtlMs: 0 })
  const root = await manifest.root(ref)
  if (!root?.datasets[logs.storage]) throw new Error(`no logs stored for chain ${opts.chain.code}: nothing to decode`)
  const range: BlockRange = [opts.from ?? 0, opts.to ?? Number.MAX_SAFE_INTEGER]
  const { partitions } = await manifest.partitions(root, logs.storage, range)
  const units = partitions.map(p => [p.from, p.to] as BlockRange).filter(([a, b]) => a >= range[0] && b <= range[1])
  if (units.length < partitions.length) log(`skipping logs partitions only partly inside ${range[0]}-${range[1]}`)

  const resolver = rpcPoolResolver(opts.rpc ?? null, opts.store, { family: 'evm', id: opts.chain.id })
  // Units publish one after the other, so state before the first one comes from the lake.
  const positions = new PositionTracker(lakePositions(opts.store, opts.chain))
  const report: RedecodeReport = { units: 0, rows: Object.fromEntries(DEX_DATASETS.map(d => [d.storage, 0])), elapsedMs: 0 }
  for (const unit of units) {
    const blocks = await storedBlocks(opts.store, manifest, opts.chain, unit)
    const scan = mergeScans(opts.chain.id, [scanBlocks(opts.chain.id, blocks)])
    const { batches } = await positions.unit(unit, stateOf => decodeUnit(scan, resolver, stateOf))
    const entries: Record<string, PartitionEntry[]> = {}
    for (const d of DEX_DATASETS) {
      const { entry } = await putPartition(opts.store, ref, d, batches[d.storage], { from: unit[0], to: unit[1] })
      entries[d.storage] = [entry]
      report.rows[d.storage] += entry.rows
    }
    await publish(opts.store, ref, entries, { replace: true })
    report.units++
    log(`blocks ${unit[0]}-${unit[1]}: ${DEX_DATASETS.map(d => `${entries[d.storage][0].rows} ${d.name}`).join(', ')}`)
  }
  report.elapsedMs = Date.now() - started
  return report
}

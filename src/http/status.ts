/**
 * The status endpoint's records: the spec's fields, in its order, one record per
 * chain the host serves, plus `label` (what the data is, e.g. `synthetic local data`;
 * null for recorded chain data), `datasets` with each dataset's coverage, and `error` (null,
 * or why a chain's manifest cannot be read).
 * Declared as a dataset so every output format encodes it like any other.
 */
import type { Chain } from '../chains/registry.ts'
import type { ManifestRoot } from '../manifest/types.ts'
import { batchOf, type RowBatch } from '../columns/batch.ts'
import type { DatasetDecl, FieldDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { invalidParameter } from '../api/errors.ts'
import { parseChain } from '../api/params.ts'

/** Fields of a status record (`label` and `datasets` are ours; the rest are the spec's). */
export const STATUS_FIELDS: readonly FieldDecl[] = [
  { name: 'type', kind: 'string' },
  { name: 'chain', kind: 'u64int' },
  { name: 'chain_code', kind: 'string' },
  { name: 'chain_name', kind: 'string' },
  { name: 'service', kind: 'string' },
  { name: 'entity', kind: 'string' },
  { name: 'latest_block_height', kind: 'u64int', nullable: true },
  { name: 'finalized_block_height', kind: 'u64int', nullable: true },
  { name: 'timestamp', kind: 'u64int', nullable: true },
  { name: 'status', kind: 'string' },
  { name: 'lag', kind: 'json', nullable: true },
  { name: 'label', kind: 'string', nullable: true },
  { name: 'datasets', kind: 'json' },
  { name: 'error', kind: 'json', nullable: true },
]

/**
 * `Ok`: the chain has data in at least one dataset (and, when followed live, the follower is
 * within its threshold of the node's head); `Syncing`: followed live and further behind the
 * node's head than the threshold, said in `lag`; `NoData`: nothing is published or followed;
 * `Error`: its manifest cannot be read (damaged or missing objects), said in `error`.
 */
export const CHAIN_STATUSES = ['Ok', 'Syncing', 'NoData', 'Error'] as const
export type ChainStatus = (typeof CHAIN_STATUSES)[number]

/** A live-followed chain's distance from its node's head (src/live/hub.ts `lag`). */
export interface LiveLag {
  syncing: boolean
  blocks: number
  seconds: number
}

/** Coverage of one dataset as the status record reports it. */
export interface DatasetStatus {
  coverage: [number, number][]
  latest_block: number | null
  rows: number
}

/** Per-dataset coverage of a chain, keyed by the dataset's path under /v1/api/. */
export function datasetStatuses(root: ManifestRoot | null, datasets: readonly DatasetDecl[]): Record<string, DatasetStatus> {
  const out: Record<string, DatasetStatus> = {}
  for (const d of datasets) {
    const index = root?.datasets[d.storage]
    const coverage = index ? index.coverage.map(([a, b]): [number, number] => [a, b]) : []
    out[d.path] = { coverage, latest_block: coverage.length ? coverage[coverage.length - 1][1] : null, rows: index?.rows ?? 0 }
  }
  return out
}

/** The fields that name the chain, the same in every record. */
const chainFields = (chain: Chain): Record<string, StoredValue> => ({
  type: 'Chain',
  chain: BigInt(chain.id),
  chain_code: chain.code,
  chain_name: chain.name,
  service: 'chain',
  entity: 'block',
})

/**
 * One status record. latest_block_height is the highest block of any dataset of the
 * chain (each dataset's own is in `datasets`), finalized_block_height the highest final
 * one; timestamp is the Unix time in seconds of the manifest's last publication. Both are
 * null when nothing is published. `lag` is null unless the chain is followed live.
 */
export function statusRecord(
  chain: Chain,
  root: ManifestRoot | null,
  datasets: readonly DatasetDecl[],
  live: LiveLag | null = null,
): Record<string, StoredValue | null> {
  const perDataset = datasetStatuses(root, datasets)
  const latest = Object.values(perDataset).reduce<number | null>(
    (m, d) => (d.latest_block === null ? m : Math.max(m ?? 0, d.latest_block)),
    null,
  )
  const updated = root ? Date.parse(root.updatedAt) : NaN
  return {
    ...chainFields(chain),
    latest_block_height: latest === null ? null : BigInt(latest),
    // Stored blocks are final; a followed chain's window raises both heights (respond.ts).
    finalized_block_height: latest === null ? null : BigInt(latest),
    timestamp: latest === null || Number.isNaN(updated) ? null : BigInt(Math.floor(updated / 1000)),
    status: live?.syncing ? 'Syncing' : latest === null ? 'NoData' : 'Ok',
    lag: live ? JSON.stringify({ blocks: live.blocks, seconds: live.seconds }) : null,
    label: root?.label ?? null,
    datasets: JSON.stringify(perDataset),
    error: null,
  }
}

/** The record of a chain whose manifest cannot be read: the others are answered all the same. */
export function failedStatusRecord(chain: Chain, error: { code: string; message: string }): Record<string, StoredValue | null> {
  return {
    ...chainFields(chain),
    latest_block_height: null,
    finalized_block_height: null,
    timestamp: null,
    status: 'Error',
    lag: null,
    label: null,
    datasets: '{}',
    error: JSON.stringify({ code: error.code, message: error.message }),
  }
}

/** Records in columnar form, ready for an encoder. */
export function statusBatch(records: readonly Record<string, StoredValue | null>[]): RowBatch {
  const values = Object.fromEntries(STATUS_FIELDS.map(f => [f.name, records.map(r => r[f.name] ?? null)]))
  return batchOf(STATUS_FIELDS, values, records.length)
}

/**
 * The status endpoint's parameters: none but `format` and an optional `chains`
 * (one chain of the host, to get its record alone). Anything else is a 400.
 */
export function parseStatusQuery(
  params: URLSearchParams,
  ctx: { chains: readonly Chain[]; allChains?: readonly Chain[] },
): Chain | undefined {
  const seen = new Set<string>()
  for (const name of params.keys()) {
    if (seen.has(name)) throw invalidParameter(name, `${name} is given more than once`, 'duplicate_parameter')
    seen.add(name)
    if (name !== 'format' && name !== 'chains')
      throw invalidParameter(name, `unknown parameter ${name}: status takes only format and chains`, 'unknown_parameter')
  }
  const chains = params.get('chains')
  return chains === null ? undefined : parseChain(chains, ctx)
}

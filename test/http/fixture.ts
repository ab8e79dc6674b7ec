/**
 * A small EVM lake for the HTTP tests (Node and workerd): blocks, transactions and
 * logs of ETH over two spans with a gap, in small row groups, written with the real
 * partition writer and published; plus the records a query should return, computed
 * from the source rows without the engine or the encoders.
 */
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import type { DatasetDecl, FieldDecl } from '../../src/schema/dataset.ts'
import { columnOf } from '../../src/schema/dataset.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { canonicalOf, type Canonical } from '../format/decode.ts'
import { buildLake, makePools, makeRows, rng, type Row } from '../query/lake.ts'
import { ETH } from '../support/chains.ts'

/** Two stored spans per dataset; blocks 150-199 are a gap. */
export const SPANS: [number, number][] = [
  [100, 149],
  [200, 249],
]
export const LATEST = 249

export interface HttpLake {
  rows: Record<'blocks' | 'transactions' | 'logs', Row[]>
}

const range = ([a, b]: [number, number]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)

/** Writes and publishes the lake into `store` (deterministic for a seed). */
export async function buildHttpLake(store: ObjectStore, seed = 7): Promise<HttpLake> {
  const r = rng(seed)
  const pools = makePools(r)
  const out: HttpLake = { rows: { blocks: [], transactions: [], logs: [] } }
  for (const dataset of [blocks, transactions, logs]) {
    const parts = SPANS.map(([from, to]) => {
      const rows =
        dataset === blocks ? range([from, to]).map(b => oneRow(dataset, b, r, pools)) : makeRows(dataset, range([from, to]), r, pools, 6)
      return { from, to, rows }
    })
    await buildLake(store, ETH, dataset, parts, { rowGroupSize: 40 })
    out.rows[dataset.name as keyof HttpLake['rows']] = parts.flatMap(p => p.rows)
  }
  return out
}

/** A row for block `b` even when the generator drew none. */
function oneRow(dataset: DatasetDecl, b: number, r: () => number, pools: ReturnType<typeof makePools>): Row {
  for (;;) {
    const rows = makeRows(dataset, [b], r, pools, 1)
    if (rows.length) return rows[0]
  }
}

/** The canonical records of `rows` for `fields` (as test/format/decode.ts reads every format back). */
export function canonicalRecords(rows: readonly Row[], fields: readonly FieldDecl[], chainId: number): Canonical[] {
  return rows.map(row =>
    Object.fromEntries(
      fields.map(f => [
        f.name,
        f.virtual === 'chain' ? String(chainId) : f.virtual === 'null' ? null : canonicalOf(f.kind, row[columnOf(f)] ?? null),
      ]),
    ),
  )
}

/** Source rows whose range key lies in [from, to]. */
export const inBlocks = (rows: readonly Row[], from: number, to: number): Row[] =>
  rows.filter(row => Number(row.block_number as bigint) >= from && Number(row.block_number as bigint) <= to)

/** 0x-hex of a stored binary value. */
export const hexOf = (v: unknown): string => '0x' + Buffer.from(v as Uint8Array).toString('hex')

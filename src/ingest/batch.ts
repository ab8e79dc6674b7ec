/**
 * Column batches as the ingester builds them: rows checked against the dataset's
 * stored columns (a transform that misses or invents a column fails loudly), sorted
 * in the declaration's order and concatenated; packed, sliced by block range.
 */
import type { DatasetDecl } from '../schema/dataset.ts'
import { columnOf } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { storedFields } from '../parquet/write.ts'
import { takeBatch, type ColumnBatch, type ColumnValues, type PackedBatch } from '../columns/batch.ts'

export type Row = Record<string, StoredValue | null>

/** Collects rows of one dataset into columns. */
export class BatchBuilder {
  readonly dataset: DatasetDecl
  readonly names: string[]
  private columns: Record<string, ColumnValues>
  private rows = 0

  constructor(dataset: DatasetDecl) {
    this.dataset = dataset
    this.names = storedFields(dataset).map(columnOf)
    this.columns = Object.fromEntries(this.names.map(n => [n, []]))
  }

  /** Adds a row; it must give every stored column (null where nullable) and nothing else. */
  push(row: Row): void {
    for (const name of this.names) {
      const value = row[name]
      if (value === undefined) throw new Error(`${this.dataset.name}: row has no value for column ${name}`)
      this.columns[name].push(value)
    }
    // counted without Object.keys' array per row
    let keys = 0
    for (const _ in row) keys++
    if (keys !== this.names.length) {
      const extra = Object.keys(row).filter(k => !this.names.includes(k))
      throw new Error(`${this.dataset.name}: row has columns the declaration does not store: ${extra.join(', ')}`)
    }
    this.rows++
  }

  /** The rows so far, in the declaration's order. */
  finish(): ColumnBatch {
    return sortBatch(this.dataset, { length: this.rows, columns: this.columns })
  }
}

function compare(a: StoredValue | null, b: StoredValue | null): number {
  if (a === b) return 0
  if (a === null) return -1
  if (b === null) return 1
  if (typeof a === 'bigint' || typeof a === 'number') return a < (b as bigint) ? -1 : a > (b as bigint) ? 1 : 0
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i]
    return a.length - b.length
  }
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0
}

/** Sorts rows by the dataset's `orderBy` columns (a no-op when already in order). */
export function sortBatch(dataset: DatasetDecl, batch: ColumnBatch): ColumnBatch {
  const keys = dataset.orderBy.map(k => batch.columns[k])
  const cmp = (i: number, j: number) => {
    for (const col of keys) {
      const c = compare(col[i], col[j])
      if (c) return c
    }
    return 0
  }
  let sorted = true
  for (let i = 1; i < batch.length && sorted; i++) sorted = cmp(i - 1, i) <= 0
  if (sorted) return batch
  const order = Array.from({ length: batch.length }, (_, i) => i).sort(cmp)
  return { length: batch.length, columns: Object.fromEntries(Object.entries(batch.columns).map(([k, v]) => [k, order.map(i => v[i])])) }
}

/** Batches of one dataset, one after another (callers pass them in order). */
export function concatBatches(batches: readonly ColumnBatch[]): ColumnBatch {
  if (batches.length === 1) return batches[0]
  const names = Object.keys(batches[0]?.columns ?? {})
  return {
    length: batches.reduce((n, b) => n + b.length, 0),
    columns: Object.fromEntries(names.map(n => [n, batches.flatMap(b => b.columns[n])])),
  }
}

/** Rows whose range key (a u64 column) lies in [from, to]. */
export function sliceRange(batch: PackedBatch, rangeKey: string, from: number, to: number): PackedBatch {
  const key = batch.columns[rangeKey]
  if (key?.type !== 'u64') throw new Error(`range key ${rangeKey} is not a u64 column of the batch`)
  const keep: number[] = []
  for (let i = 0; i < batch.length; i++) {
    const v = key.words[2 * i] + key.words[2 * i + 1] * 2 ** 32
    if (v >= from && v <= to) keep.push(i)
  }
  return keep.length === batch.length ? batch : takeBatch(batch, keep)
}

/** RowBatch helpers for the places that cut, join or build batches from plain values. */
import type { FieldDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import type { RowBatch } from './types.ts'
import { concatVectors, sliceVector, valueAt, vectorOf } from './vector.ts'

/** A batch of `fields` from plain values keyed by field name (missing columns are not added). */
export function batchOf(fields: readonly FieldDecl[], values: Record<string, readonly (StoredValue | null | undefined)[]>, length: number): RowBatch {
  const columns: RowBatch['columns'] = {}
  for (const f of fields) {
    const col = values[f.name]
    if (col !== undefined) columns[f.name] = vectorOf(f.kind, col)
  }
  return { length, columns }
}

/** Rows `[start, end)` of a batch. */
export function sliceBatch(b: RowBatch, start: number, end: number): RowBatch {
  const columns: RowBatch['columns'] = {}
  for (const [name, v] of Object.entries(b.columns)) columns[name] = sliceVector(v, start, end)
  return { length: end - start, columns }
}

/** Two batches of the same columns, one after the other. */
export function concatBatches(a: RowBatch, b: RowBatch): RowBatch {
  const columns: RowBatch['columns'] = {}
  for (const name of Object.keys(b.columns)) columns[name] = concatVectors([a.columns[name], b.columns[name]])
  return { length: a.length + b.length, columns }
}

/** The value of column `name` at row `i`. */
export function cellOf(b: RowBatch, name: string, i: number): StoredValue | null {
  const v = b.columns[name]
  if (v === undefined) throw new Error(`batch has no column "${name}"`)
  return valueAt(v, i)
}

/**
 * The two batch shapes every layer exchanges. A ColumnBatch is what writers hold:
 * plain values keyed by stored column name (the ingester's and the live window's
 * rows). A RowBatch is what readers hold: packed vectors keyed by output field name
 * (the scanner's output, the encoders' input). Helpers cut, join and build them.
 */
import type { FieldDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { concatVectors, sliceVector, valueAt, vectorOf, type Vector } from './vector.ts'

export type ColumnValues = (StoredValue | null)[]

/** A dataset's rows in columnar form, keyed by stored column name. */
export interface ColumnBatch {
  length: number
  columns: Record<string, ColumnValues>
}

/**
 * Rows in columnar form keyed by output field name, virtual fields filled in, each
 * column a packed vector (see vector.ts). Batches arrive in (range key, index) order.
 */
export interface RowBatch {
  length: number
  columns: Record<string, Vector>
}

/** A batch of `fields` from plain values keyed by field name (missing columns are not added). */
export function batchOf(
  fields: readonly FieldDecl[],
  values: Record<string, readonly (StoredValue | null | undefined)[]>,
  length: number,
): RowBatch {
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

/** Batches of the same columns, one after the other. */
export function joinBatches(batches: readonly RowBatch[]): RowBatch {
  if (batches.length === 1) return batches[0]
  const columns: RowBatch['columns'] = {}
  for (const name of Object.keys(batches[0].columns)) columns[name] = concatVectors(batches.map(b => b.columns[name]))
  return { length: batches.reduce((n, b) => n + b.length, 0), columns }
}

/** The value of column `name` at row `i`. */
export function cellOf(b: RowBatch, name: string, i: number): StoredValue | null {
  const v = b.columns[name]
  if (v === undefined) throw new Error(`batch has no column "${name}"`)
  return valueAt(v, i)
}

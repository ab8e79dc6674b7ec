/**
 * The batch shapes every layer exchanges. A ColumnBatch is what writers hold: plain
 * values keyed by stored column name (the live window's rows, the test and bench lakes).
 * A PackedBatch is the same rows packed into vectors, still keyed by stored column name
 * (what a chain source gives the ingester). A RowBatch is what readers hold: packed
 * vectors keyed by output field name (the scanner's output, the encoders' input).
 * Helpers cut, join, pack and build them.
 */
import { columnOf, type FieldDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { concatVectors, sliceVector, takeVector, valueAt, valuesOf, vectorOf, type Vector } from './vector.ts'

export type ColumnValues = (StoredValue | null)[]

/** A dataset's rows in columnar form, keyed by stored column name. */
export interface ColumnBatch {
  length: number
  columns: Record<string, ColumnValues>
}

/**
 * A ColumnBatch packed into vectors, keyed by stored column name: what a chain source gives
 * the ingester. A unit's rows live from its first step to its last; a value each, they were
 * millions of objects that every full collection marked and a lookup copy's sort scattered
 * over the heap, where packed they are a few buffers a column (src/ingest/README.md, Cost).
 */
export interface PackedBatch {
  length: number
  columns: Record<string, Vector>
}

/** Whether a column is a vector, not plain values. */
export const isVectorColumn = (column: ColumnValues | Vector): column is Vector => !Array.isArray(column)

/** Whether a batch's columns are vectors (a batch without columns counts as plain). */
export const isPacked = (batch: ColumnBatch | PackedBatch): batch is PackedBatch => Object.values(batch.columns).some(isVectorColumn)

/** `batch` packed, each stored field's column by its kind (`fields`: one per stored column). */
export function packBatch(fields: readonly FieldDecl[], batch: ColumnBatch): PackedBatch {
  const columns: PackedBatch['columns'] = {}
  for (const f of fields) {
    const name = columnOf(f)
    const values = batch.columns[name]
    if (values === undefined) throw new Error(`batch has no column "${name}"`)
    if (values.length !== batch.length) throw new Error(`column ${name} has ${values.length} values, expected ${batch.length}`)
    columns[name] = vectorOf(f.kind, values)
  }
  return { length: batch.length, columns }
}

/** The same rows as plain values. */
export function unpackBatch(batch: PackedBatch): ColumnBatch {
  const columns: ColumnBatch['columns'] = {}
  for (const [name, v] of Object.entries(batch.columns)) columns[name] = valuesOf(v)
  return { length: batch.length, columns }
}

/** The rows of `batch` at `rows`, in that order. */
export function takeBatch<B extends PackedBatch | RowBatch>(batch: B, rows: ArrayLike<number>): B {
  const columns: Record<string, Vector> = {}
  for (const [name, v] of Object.entries(batch.columns)) columns[name] = takeVector(v, rows)
  return { length: rows.length, columns } as B
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
export function sliceBatch<B extends PackedBatch | RowBatch>(b: B, start: number, end: number): B {
  const columns: RowBatch['columns'] = {}
  for (const [name, v] of Object.entries(b.columns)) columns[name] = sliceVector(v, start, end)
  return { length: end - start, columns } as B
}

/** Batches of the same columns, one after the other. */
export function joinBatches<B extends PackedBatch | RowBatch>(batches: readonly B[]): B {
  if (batches.length === 1) return batches[0]
  const columns: RowBatch['columns'] = {}
  for (const name of Object.keys(batches[0].columns)) columns[name] = concatVectors(batches.map(b => b.columns[name]))
  return { length: batches.reduce((n, b) => n + b.length, 0), columns } as B
}

/** The value of column `name` at row `i`. */
export function cellOf(b: RowBatch, name: string, i: number): StoredValue | null {
  const v = b.columns[name]
  if (v === undefined) throw new Error(`batch has no column "${name}"`)
  return valueAt(v, i)
}

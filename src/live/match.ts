/**
 * A subscription's filter applied to the rows of one block held in memory: the
 * same exact value tests as the scanner (query/filter.ts), so a row matches live
 * exactly when it would match over HTTP. The stored columns become output fields,
 * virtual ones filled in.
 */
import { decideVirtual, valueTest, virtualValue } from '../query/filter.ts'
import type { Predicate } from '../query/types.ts'
import { constantVector, vectorOf } from '../columns/vector.ts'
import { columnOf, type FieldDecl } from '../schema/dataset.ts'
import type { ColumnBatch, RowBatch } from '../columns/batch.ts'

/** A compiled row filter and projection for one subscription. */
export interface RowSelector {
  select(batch: ColumnBatch, options?: { removed?: boolean }): RowBatch
}

/**
 * Compiles predicates and fields for a chain. `removed: true` sets a `removed`
 * field to true in the output (rows of blocks a reorg dropped).
 */
export function rowSelector(predicates: readonly Predicate[], fields: readonly FieldDecl[], chainId: number): RowSelector {
  const { stored, never } = decideVirtual(predicates, chainId)
  const tests = stored.map(p => ({ column: columnOf(p.field), test: valueTest(p) }))
  return {
    select(batch, options = {}) {
      const keep: number[] = []
      if (!never) {
        const cols = tests.map(t => {
          const col = batch.columns[t.column]
          if (!col) throw new Error(`block rows have no column "${t.column}"`)
          return col
        })
        for (let i = 0; i < batch.length; i++) {
          let ok = true
          for (let k = 0; k < tests.length && ok; k++) ok = tests[k].test(cols[k][i] ?? null)
          if (ok) keep.push(i)
        }
      }
      const columns: RowBatch['columns'] = {}
      for (const f of fields) {
        if (f.virtual !== undefined) {
          columns[f.name] = constantVector(f.kind, virtualValue(f, chainId), keep.length)
        } else if (options.removed && f.name === 'removed' && f.kind === 'bool') {
          columns[f.name] = constantVector(f.kind, true, keep.length)
        } else {
          const col = batch.columns[columnOf(f)]
          if (!col) throw new Error(`block rows have no column "${columnOf(f)}"`)
          columns[f.name] = vectorOf(
            f.kind,
            keep.map(i => col[i] ?? null),
          )
        }
      }
      return { length: keep.length, columns }
    },
  }
}

/**
 * How the unfinalized window holds a block's rows: one small Parquet buffer per
 * dataset (schema from the declaration, snappy pages, no bloom filters or page
 * indexes), not JavaScript objects. A mainnet block's logs and transactions are
 * megabytes as objects and a few hundred kilobytes like this, so a window of a
 * hundred blocks fits a 128 MB isolate. Decoding happens only when a subscriber
 * replays the window, a reorg resends dropped rows, or blocks are compacted.
 */
import { parquetRead } from 'hyparquet'
import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer'
import { parquetSchemaOf, storedFields } from '../parquet/write.ts'
import { columnOf, type DatasetDecl } from '../schema/dataset.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { ownBuffer } from '../schema/hex.ts'
import type { ColumnBatch } from '../columns/batch.ts'

/** Encodes a dataset's rows (stored columns) as a compact Parquet buffer. */
export function encodeRows(dataset: DatasetDecl, batch: ColumnBatch): Uint8Array {
  const columnData: ColumnSource[] = storedFields(dataset).map(f => {
    const name = columnOf(f)
    const data = batch.columns[name]
    if (!data || data.length !== batch.length)
      throw new Error(`${dataset.name}: column ${name} has ${data?.length ?? 0} values, expected ${batch.length}`)
    return { name, data: data as ColumnSource['data'], statistics: false, offsetIndex: false }
  })
  return new Uint8Array(
    parquetWriteBuffer({ columnData, schema: parquetSchemaOf(dataset), statistics: false, rowGroupSize: Math.max(1, batch.length) }),
  )
}

/** Decodes what `encodeRows` wrote back into stored columns (bigint, Uint8Array, boolean, string, null). */
export async function decodeRows(dataset: DatasetDecl, bytes: Uint8Array): Promise<ColumnBatch> {
  const names = storedFields(dataset).map(columnOf)
  const columns: Record<string, (StoredValue | null)[]> = Object.fromEntries(names.map(n => [n, []]))
  let length = 0
  await parquetRead({
    file: ownBuffer(bytes),
    utf8: false,
    onChunk: chunk => {
      const target = columns[chunk.columnName]
      if (!target) return
      const data = chunk.columnData as ArrayLike<unknown>
      for (let i = 0; i < data.length; i++) target[chunk.rowStart + i] = (data[i] ?? null) as StoredValue | null
      length = Math.max(length, chunk.rowEnd)
    },
  })
  return { length, columns }
}

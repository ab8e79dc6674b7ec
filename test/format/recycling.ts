/**
 * The contract `recyclingEncoders` relies on, for any encoder factory: a text batch is
 * taken (written out, or copied elsewhere) by the time `batch` returns, so its columns
 * may be lent to another scan at once; each is handed back once, and an Arrow batch's
 * never (its buffers are the response).
 */
import { expect } from 'vitest'
import { encodeRows, recyclingEncoders, type EncoderFactory, type Format } from '../../src/format/encode.ts'
import type { RowBatch } from '../../src/columns/batch.ts'
import type { Vector } from '../../src/columns/vector.ts'
import { logs } from '../../src/datasets/evm.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { makeBatches, packed } from './cases.ts'
import { collect, fromArray } from './decode.ts'

/** Overwrites every byte `v` holds (values, offsets, validity) with 0xee, as a scan given its memory would. */
function scribble(v: Vector): void {
  const parts: ArrayBufferView[] = [v.valid ?? new Uint8Array(0)]
  if (v.type === 'u64' || v.type === 'bool') parts.push(v.values)
  else if (v.type === 'fixed') parts.push(v.bytes)
  else parts.push(v.offsets, v.bytes)
  for (const p of parts) new Uint8Array(p.buffer, p.byteOffset, p.byteLength).fill(0xee)
}

/** Fresh logs batches with one column under two fields (`again` is `block_hash`). */
function twinBatches(): { fields: FieldDecl[]; batches: RowBatch[] } {
  const fields: FieldDecl[] = [...logs.fields, { name: 'again', kind: 'hash' }]
  const batches = makeBatches(logs.fields, [500, 40, 700], 5)
    .map(b => packed(logs.fields, b))
    .map(b => ({ ...b, columns: { ...b.columns, again: b.columns.block_hash } }))
  return { fields, batches }
}

const encoded = (format: Format, fields: readonly FieldDecl[], batches: RowBatch[], encoders?: EncoderFactory) =>
  collect(encodeRows(format, fields, fromArray(batches), encoders))

export async function expectRecycledOnceTaken(encoders: EncoderFactory): Promise<void> {
  for (const format of ['csv', 'json_stream', 'arrow'] as const) {
    const { fields, batches } = twinBatches()
    const want = await encoded(format, fields, batches)
    const seen: Vector[] = []
    const recycling = recyclingEncoders(encoders, v => {
      seen.push(v)
      scribble(v)
    })
    expect(Buffer.compare(await encoded(format, fields, batches, recycling), want), `${format}: the same bytes`).toBe(0)
    const columns = format === 'arrow' ? [] : batches.flatMap(b => [...new Set(fields.map(f => b.columns[f.name]))])
    expect(seen.length, `${format}: columns handed back`).toBe(columns.length)
    expect(new Set(seen), format).toEqual(new Set(columns))
  }
}

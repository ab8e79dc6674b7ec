/**
 * The contract `recyclingEncoders` relies on, for any encoder factory: a text batch is
 * taken (written out, or copied elsewhere) by the time `batch` returns, so its columns
 * may be lent to another scan at once; each is handed back once. An Arrow batch's columns
 * are handed out with the batch's own chunks: every chunk of the stream that views their
 * memory is among them, so once those are written nothing reads the columns.
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

/** Fresh logs batches with one column under two fields (`again` is `block_hash`); the last one's hashes fill more than a chunk. */
function twinBatches(): { fields: FieldDecl[]; batches: RowBatch[] } {
  const fields: FieldDecl[] = [...logs.fields, { name: 'again', kind: 'hash' }]
  const batches = makeBatches(logs.fields, [500, 40, 3000], 5)
    .map(b => packed(logs.fields, b))
    .map(b => ({ ...b, columns: { ...b.columns, again: b.columns.block_hash } }))
  return { fields, batches }
}

const encoded = (format: Format, fields: readonly FieldDecl[], batches: RowBatch[], encoders?: EncoderFactory) =>
  collect(encodeRows(format, fields, fromArray(batches), encoders))

/** The chunks of a stream, as it hands them out (not copied). */
async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  const reader = stream.getReader()
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value)
  return out
}

/** The memory a vector's values and offsets are in. */
const memoryOf = (v: Vector): ArrayBufferLike[] =>
  v.type === 'u64' || v.type === 'bool' ? [v.values.buffer] : v.type === 'fixed' ? [v.bytes.buffer] : [v.offsets.buffer, v.bytes.buffer]

export async function expectRecycledOnceTaken(encoders: EncoderFactory): Promise<void> {
  for (const format of ['csv', 'json_stream', 'arrow'] as const) {
    const { fields, batches } = twinBatches()
    const want = await encoded(format, fields, batches)
    const seen: Vector[] = []
    const handed: { columns: Vector[]; chunks: readonly Uint8Array[] }[] = []
    const recycling = recyclingEncoders(encoders, {
      recycle: v => {
        seen.push(v)
        scribble(v)
      },
      // The stream empties its chunk list as it hands chunks out: a copy now.
      handOut: (columns, chunks) => handed.push({ columns: [...columns], chunks: [...chunks] }),
    })
    const chunks = await chunksOf(encodeRows(format, fields, fromArray(batches), recycling))
    expect(Buffer.compare(Buffer.concat(chunks), want), `${format}: the same bytes`).toBe(0)
    const columns = batches.map(b => [...new Set(fields.map(f => b.columns[f.name]))])
    if (format !== 'arrow') {
      expect(seen.length, `${format}: columns handed back`).toBe(columns.flat().length)
      expect(new Set(seen), format).toEqual(new Set(columns.flat()))
      expect(handed, format).toEqual([])
      continue
    }
    expect(seen, 'arrow: nothing recycled before it is written').toEqual([])
    expect(
      handed.map(h => h.columns),
      'arrow: each batch handed out with its columns, each once',
    ).toEqual(columns)
    let views = 0
    handed.forEach((h, i) => {
      const memory = new Set(h.columns.flatMap(memoryOf))
      for (const c of chunks.filter(c => memory.has(c.buffer))) {
        views++
        expect(h.chunks.includes(c), `arrow batch ${i}: a chunk viewing its memory is handed out with it`).toBe(true)
      }
    })
    expect(views, "arrow: some chunks are the columns' own memory").toBeGreaterThan(0)
  }
}

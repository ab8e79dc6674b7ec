/**
 * The Node server's encoding thread: the same bytes as the format encoders in place,
 * in every format and on every kind, whether a stream goes to the thread or stays;
 * failures anywhere (the batches, the encoder in the thread, the thread itself) fail
 * the stream without its closing bytes, and the next stream is served.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { encodeRows, FORMATS, type Format } from '../../src/format/encode.ts'
import { packVector, THREAD_CHUNK_SIZE, threadEncoders, unpackVector } from '../../src/node/encode-threads.ts'
import { logs } from '../../src/datasets/evm.ts'
import type { RowBatch } from '../../src/columns/batch.ts'
import { fixedVector, type BinaryVector, type FixedVector, type U64Vector, type Vector } from '../../src/columns/vector.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { ALL_KINDS, JSON_TEXTS, NASTY_STRINGS, makeBatches, packed } from '../format/cases.ts'
import { expectRecycledOnceTaken } from '../format/recycling.ts'
import { collect, concat, fromArray, readAll } from '../format/decode.ts'

const TEXT_FIELDS: FieldDecl[] = [
  { name: 'text', kind: 'string' },
  { name: 'doc', kind: 'json', nullable: true },
]
const textBatch = packed(TEXT_FIELDS, {
  length: NASTY_STRINGS.length,
  columns: { text: NASTY_STRINGS, doc: NASTY_STRINGS.map((_, i) => (i % 3 === 2 ? null : JSON_TEXTS[i % JSON_TEXTS.length])) },
})

const kindBatches = makeBatches(ALL_KINDS, [66, 0, 300, 1], 7).map(b => packed(ALL_KINDS, b))
const logBatches = makeBatches(logs.fields, [500, 40, 700], 3).map(b => packed(logs.fields, b))

/** Every byte of `batches` encoded in `format` by `encoders` (in place when absent). */
function encoded(format: Format, fields: readonly FieldDecl[], batches: RowBatch[], encoders?: Parameters<typeof encodeRows>[3]) {
  return collect(encodeRows(format, fields, fromArray(batches), encoders))
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8')

describe('threadEncoders', () => {
  const all = threadEncoders({ minRows: 1 })
  const none = threadEncoders({ minRows: 1_000_000 })
  afterAll(() => Promise.all([all.close(), none.close()]))

  const cases: [string, readonly FieldDecl[], RowBatch[]][] = [
    ['every kind with nulls', ALL_KINDS, kindBatches],
    ['text that needs escaping', TEXT_FIELDS, [textBatch, textBatch]],
    ['logs', logs.fields, logBatches],
    ['no batches', logs.fields, []],
    ['an empty first batch', ALL_KINDS, [kindBatches[1], kindBatches[0]]],
  ]
  for (const format of FORMATS) {
    for (const [name, fields, batches] of cases) {
      it(`${format}, ${name}: the bytes of the encoder in place, in the thread or not`, async () => {
        const want = await encoded(format, fields, batches)
        const sent = all.threadBatches
        expect(Buffer.compare(await encoded(format, fields, batches, all.encoders), want)).toBe(0)
        // From the first batch of at least minRows (1) on, every batch goes to the thread.
        const first = batches.findIndex(b => b.length >= 1)
        expect(all.threadBatches - sent).toBe(format === 'arrow' || first < 0 ? 0 : batches.length - first)
        expect(Buffer.compare(await encoded(format, fields, batches, none.encoders), want)).toBe(0)
        expect(none.threadBatches).toBe(0)
      })
    }
  }

  it('takes back the chunk buffers written out, and answers written into them again are the same bytes', async () => {
    const large = makeBatches(logs.fields, [3000, 2000], 9).map(b => packed(logs.fields, b))
    const want = await encoded('json_stream', logs.fields, large)
    const own = threadEncoders({ minRows: 1 })
    try {
      for (let round = 0; round < 3; round++) {
        const reader = encodeRows('json_stream', logs.fields, fromArray(large), own.encoders).getReader()
        const parts: Buffer[] = []
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          parts.push(Buffer.from(r.value))
          own.written(r.value)
        }
        expect(Buffer.compare(Buffer.concat(parts), want), `round ${round + 1}`).toBe(0)
      }
      // A chunk a THREAD_CHUNK_SIZE (about 13 a round): the later rounds are written into buffers of the earlier ones.
      expect(own.recycled).toBeGreaterThan(2 * Math.floor(want.length / THREAD_CHUNK_SIZE))
    } finally {
      await own.close()
    }
  })

  it('copies later batches into the memory the thread returned with its answers, and the bytes stay the same', async () => {
    const large = makeBatches(logs.fields, [3000, 2000, 2500], 11).map(b => packed(logs.fields, b))
    const want = await encoded('json', logs.fields, large)
    const own = threadEncoders({ minRows: 1 })
    try {
      expect(own.packMemory).toBe(0)
      for (let round = 0; round < 3; round++) {
        expect(Buffer.compare(await encoded('json', logs.fields, large, own.encoders), want), `round ${round + 1}`).toBe(0)
        expect(own.packMemory, `round ${round + 1}`).toBeGreaterThan(0)
      }
    } finally {
      await own.close()
    }
  })

  for (const [place, minRows] of [
    ['in the thread', 1],
    ['in place', 1_000_000],
  ] as const) {
    it(`has taken a text batch ${place} when batch() returns: its columns may be recycled then`, async () => {
      const own = threadEncoders({ minRows })
      try {
        await expectRecycledOnceTaken(own.encoders)
      } finally {
        await own.close()
      }
    })
  }

  it('keeps small batches in place until the first large one, which the thread takes over with the rest, the bytes unchanged', async () => {
    const split = threadEncoders({ minRows: 100 })
    const small = logBatches[1]
    const empty = makeBatches(logs.fields, [0], 4).map(b => packed(logs.fields, b))[0]
    try {
      for (const format of ['json', 'json_stream', 'csv'] as const)
        for (const [order, inThread] of [
          [logBatches, 3],
          [[...logBatches].reverse(), 3],
          [[small, logBatches[0], small], 2],
          [[small, small, logBatches[2], small], 2],
          [[empty, logBatches[0]], 1],
          [[small, empty, small], 0],
        ] as [RowBatch[], number][]) {
          const want = await encoded(format, logs.fields, order)
          const sent = split.threadBatches
          const got = await encoded(format, logs.fields, order, split.encoders)
          expect(text(got)).toBe(text(want))
          expect(split.threadBatches - sent, `${format}: ${order.map(b => b.length)}`).toBe(inThread)
        }
    } finally {
      await split.close()
    }
  })

  it('errors the stream without closing bytes when the batches fail after some went to the thread', async () => {
    const boom = new Error('partition read failed')
    async function* source() {
      yield logBatches[0]
      yield logBatches[2]
      throw boom
    }
    for (const format of ['json', 'csv', 'json_stream'] as const) {
      const { chunks, error } = await readAll(encodeRows(format, logs.fields, source(), all.encoders))
      expect(error).toBe(boom)
      const out = text(concat(chunks))
      if (format === 'json') expect(out.trimEnd().endsWith(']')).toBe(false)
    }
  })

  it("carries the thread encoder's shape error back, and the stream has no closing bytes", async () => {
    const { block_hash: _, ...columns } = logBatches[2].columns
    const { chunks, error } = await readAll(
      encodeRows('json', logs.fields, fromArray([logBatches[0], { length: logBatches[2].length, columns }]), all.encoders),
    )
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name === 'BatchShapeError' || (error as Error).constructor.name === 'BatchShapeError').toBe(true)
    expect(String(error)).toMatch(/no column "block_hash"/)
    expect(text(concat(chunks)).endsWith(']')).toBe(false)
  })

  it('releases the source when the consumer cancels, and the thread serves the next stream', async () => {
    const state = { released: false, taken: 0 }
    async function* source() {
      try {
        for (const b of [...logBatches, ...logBatches]) {
          state.taken++
          yield b
        }
      } finally {
        state.released = true
      }
    }
    const reader = encodeRows('json_stream', logs.fields, source(), all.encoders).getReader()
    await reader.read()
    await reader.cancel()
    expect(state.released).toBe(true)
    expect(state.taken).toBeLessThan(6)
    const want = await encoded('json_stream', logs.fields, logBatches)
    expect(Buffer.compare(await encoded('json_stream', logs.fields, logBatches, all.encoders), want)).toBe(0)
  })

  it('fails the streams of a thread that stops, in flight or asked after, and starts a new thread for the next', async () => {
    const own = threadEncoders({ minRows: 1 })
    // In flight: the thread stops while it encodes the first batch.
    const inFlight = readAll(encodeRows('json', logs.fields, fromArray(logBatches), own.encoders))
    await new Promise(resolve => setTimeout(resolve, 20))
    await own.close()
    const first = await inFlight
    expect(String(first.error)).toMatch(/encoding thread/)
    expect(text(concat(first.chunks)).endsWith(']')).toBe(false)

    // Asked after: the first batch was answered, the thread stops, then the next batch comes.
    let stop!: () => void
    const stopped = new Promise<void>(resolve => (stop = resolve))
    async function* source() {
      yield logBatches[0]
      await stopped
      yield logBatches[2]
    }
    const reader = encodeRows('json', logs.fields, source(), own.encoders).getReader()
    const head = await reader.read()
    expect(head.done).toBe(false)
    await own.close()
    await new Promise(resolve => setTimeout(resolve, 50))
    stop()
    let error: unknown
    try {
      while (!(await reader.read()).done);
    } catch (err) {
      error = err
    }
    expect(String(error)).toMatch(/encoding thread/)

    const want = await encoded('json', logs.fields, logBatches)
    try {
      expect(Buffer.compare(await encoded('json', logs.fields, logBatches, own.encoders), want)).toBe(0)
    } finally {
      await own.close()
    }
  })
})

describe('packVector', () => {
  const roundTrip = (v: Vector, length: number) => {
    const transfer: ArrayBuffer[] = []
    const packed = packVector(v, length, transfer)
    const clone = structuredClone(packed, { transfer })
    return { out: unpackVector(clone), transfer }
  }

  it('copies a binary column viewed mid-buffer, its offsets rebased to 0, and leaves the original usable', () => {
    const bytes = new TextEncoder().encode('xxabcdefgh')
    const v: BinaryVector = { type: 'binary', length: 3, valid: null, text: true, offsets: new Int32Array([2, 4, 4, 7, 10]), bytes }
    const { out, transfer } = roundTrip(v, 3)
    expect(out.type).toBe('binary')
    const b = out as BinaryVector
    expect([...b.offsets]).toEqual([0, 2, 2, 5])
    expect(new TextDecoder().decode(b.bytes)).toBe('abcde')
    expect(transfer.every(t => t !== bytes.buffer)).toBe(true)
    expect(new TextDecoder().decode(bytes)).toBe('xxabcdefgh')
  })

  it('copies into memory it is lent, exactly the rows asked for, and transfers that memory', () => {
    const bytes = new Uint8Array(64).map((_, i) => i)
    const v: FixedVector = fixedVector(16, bytes, null)
    const lent = new ArrayBuffer(128)
    const transfer: ArrayBuffer[] = []
    const p = packVector(v, 3, transfer, n => (n === 48 ? lent : undefined))
    expect(p.type === 'fixed' && p.bytes.buffer).toBe(lent)
    expect(p.type === 'fixed' && [...p.bytes]).toEqual([...bytes.subarray(0, 48)])
    expect(transfer).toEqual([lent])
  })

  it('gives a u64 column its 32-bit words over the same memory', () => {
    const values = new BigUint64Array([1n, 2n ** 40n + 3n, 7n, 9n])
    const v: U64Vector = { type: 'u64', length: 4, valid: new Uint8Array([1, 1, 0, 1]), values, words: new Uint32Array(values.buffer) }
    const { out } = roundTrip(v, 3)
    const u = out as U64Vector
    expect([...u.values]).toEqual([1n, 2n ** 40n + 3n, 7n])
    expect([...u.words]).toEqual([1, 0, 3, 256, 7, 0])
    expect([...u.valid!]).toEqual([1, 1, 0])
    expect(values[3]).toBe(9n)
  })
})

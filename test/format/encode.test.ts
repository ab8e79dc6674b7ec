/**
 * encodeRows with an encoder that answers later (the Node server's encoding thread):
 * batches are read ahead only as far as the encoder asks, handed over in order, and
 * their bytes come out in order however late each answer is.
 */
import { describe, expect, it } from 'vitest'
import { encodeRows, formatEncoder, type StreamEncoder } from '../../src/format/encode.ts'
import { logs } from '../../src/datasets/evm.ts'
import type { RowBatch } from '../../src/columns/batch.ts'
import { makeBatches, packed } from './cases.ts'
import { collect, concat, readAll } from './decode.ts'
import { expectRecycledOnceTaken } from './recycling.ts'

const fields = logs.fields
const batches: RowBatch[] = makeBatches(fields, [30, 1, 50, 7, 0, 40, 12], 11).map(b => packed(fields, b))

/** The format's encoder, each answer late by a random few milliseconds; records the order batches reach it. */
function lateEncoder(ahead: number, seen: number[]): StreamEncoder {
  const inner = formatEncoder('json', fields)
  const late = <T>(value: T) => new Promise<T>(resolve => setTimeout(() => resolve(value), Math.random() * 8))
  return {
    ahead,
    open: () => late(inner.open()),
    batch: b => {
      seen.push(b.length)
      return late(inner.batch(b))
    },
    close: () => late(inner.close()),
  }
}

/** A source that counts the batches taken. */
function counted(fail?: Error) {
  const state = { taken: 0 }
  async function* source() {
    for (const b of batches) {
      state.taken++
      yield b
    }
    if (fail) throw fail
  }
  return { state, source: source() }
}

describe('recyclingEncoders', () => {
  it("over the format encoders: a text batch's columns are handed back once written, each once, and an Arrow batch's handed out with the chunks that view them", () =>
    expectRecycledOnceTaken(formatEncoder))
})

describe('encodeRows with an encoder that answers later', () => {
  for (const ahead of [0, 1, 3]) {
    it(`reading ${ahead} ahead: the bytes in place, batches handed over in order`, async () => {
      const want = await collect(encodeRows('json', fields, counted().source))
      const seen: number[] = []
      const got = await collect(encodeRows('json', fields, counted().source, () => lateEncoder(ahead, seen)))
      expect(Buffer.compare(got, want)).toBe(0)
      expect(seen).toEqual(batches.map(b => b.length))
    })
  }

  it('reads nothing before the first pull, and at most `ahead` batches beyond those answered', async () => {
    const { state, source } = counted()
    const reader = encodeRows('json', fields, source, () => lateEncoder(2, [])).getReader()
    await new Promise(resolve => setTimeout(resolve, 20))
    expect(state.taken).toBe(0)
    await reader.read()
    await reader.read()
    await new Promise(resolve => setTimeout(resolve, 40))
    expect(state.taken).toBeLessThanOrEqual(1 + 2 + 1)
    await reader.cancel()
  })

  it('errors the stream without the closing bytes when the batches fail behind reads ahead', async () => {
    const boom = new Error('partition read failed')
    const { chunks, error } = await readAll(encodeRows('json', fields, counted(boom).source, () => lateEncoder(3, [])))
    expect(error).toBe(boom)
    expect(Buffer.from(concat(chunks)).toString('utf8').trimEnd().endsWith(']')).toBe(false)
  })
})

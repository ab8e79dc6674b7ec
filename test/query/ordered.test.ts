import { describe, expect, it } from 'vitest'
import { mapOrdered } from '../../src/query/ordered.ts'

describe('mapOrdered', () => {
  async function* numbers(n: number) {
    for (let i = 0; i < n; i++) yield i
  }

  it('yields in source order whatever order the work finishes in, with bounded work in flight', async () => {
    let inFlight = 0
    let most = 0
    const work = async (i: number) => {
      inFlight++
      most = Math.max(most, inFlight)
      await new Promise(r => setTimeout(r, (7 - i) % 4))
      inFlight--
      return i * 10
    }
    const out: number[] = []
    for await (const x of mapOrdered(numbers(8), work, { count: 3 })) out.push(x)
    expect(out).toEqual([0, 10, 20, 30, 40, 50, 60, 70])
    expect(most).toBe(3)
  })

  it('keeps in-flight weight within the bound but always runs one item', async () => {
    let inFlight = 0
    let most = 0
    const work = async (i: number) => {
      inFlight += i
      most = Math.max(most, inFlight)
      await new Promise(r => setTimeout(r, 1))
      inFlight -= i
      return i
    }
    const out: number[] = []
    for await (const x of mapOrdered(numbers(6), work, { count: 10, weight: i => i, maxWeight: 5 })) out.push(x)
    expect(out).toEqual([0, 1, 2, 3, 4, 5])
    expect(most).toBe(5)
  })

  it('surfaces an error at its turn and stops pulling the source when the consumer stops', async () => {
    let pulled = 0
    async function* counted() {
      for (let i = 0; i < 100; i++) {
        pulled++
        yield i
      }
    }
    const failing = mapOrdered(numbers(5), async i => {
      if (i === 2) throw new Error('boom')
      return i
    })
    const seen: number[] = []
    await expect(
      (async () => {
        for await (const x of failing) seen.push(x)
      })(),
    ).rejects.toThrow('boom')
    expect(seen).toEqual([0, 1])
    async function* breaking() {
      yield 1
      yield 2
      throw new Error('source broke')
    }
    const before: number[] = []
    await expect(
      (async () => {
        for await (const x of mapOrdered(breaking(), async i => i)) before.push(x)
      })(),
    ).rejects.toThrow('source broke')
    expect(before).toEqual([1, 2])
    for await (const x of mapOrdered(counted(), async i => i, { count: 4, rampUp: true })) if (x === 2) break
    expect(pulled).toBeLessThanOrEqual(7)
  })
})

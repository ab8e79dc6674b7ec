/**
 * PositionTracker's bookkeeping with a fake loader: carried state while units follow one
 * another, a start over (loaded as of the unit's first block) when one does not, units that
 * start together decoded in block order, and a unit finishing after a start over not leaking
 * its changes into the new state.
 */
import { describe, expect, it } from 'vitest'
import type { PositionChanges, PositionEntry, PositionState } from '../../src/dex/positions.ts'
import { PositionTracker, type PositionLoader } from '../../src/ingest/positions.ts'

const entry = (owner: string): PositionEntry => ({
  pool: null,
  tick_lower: null,
  tick_upper: null,
  token0: null,
  token1: null,
  owner: owner as `0x${string}`,
  owed0: null,
  owed1: null,
})

/** A loader whose every entry is owned by `lake@<before>`, recording its calls. */
function fakeLoader(): PositionLoader & { calls: [string[], number][] } {
  const calls: [string[], number][] = []
  return {
    calls,
    async load(keys, before) {
      calls.push([[...keys], before])
      return new Map(keys.map(k => [k, entry(`lake@${before}`)]))
    },
  }
}

/** A unit touching `key`: records the owner it saw, sets the owner to `unit@<from>`. */
function unitWork(key: string, seen: string[], gate?: Promise<void>) {
  return async (from: number, stateOf: (keys: readonly string[]) => Promise<PositionState>) => {
    await gate
    const state = await stateOf([key])
    seen.push(`${from}:${state.get(key)?.owner ?? 'none'}`)
    const positionChanges: PositionChanges = new Map([[key, entry(`unit@${from}`)]])
    return { positionChanges }
  }
}

describe('PositionTracker', () => {
  it('carries state between units in block order and loads only what it lacks, as of its start', async () => {
    const loader = fakeLoader()
    const t = new PositionTracker(loader)
    const seen: string[] = []
    const work = unitWork('m:1', seen)
    await t.unit([10, 19], s => work(10, s))
    await t.unit([20, 29], s => work(20, s))
    await t.unit([30, 39], s => unitWork('m:2', seen)(30, s))
    expect(seen).toEqual(['10:lake@10', '20:unit@10', '30:lake@10'])
    // A unit that does not follow starts over from the lake at its own first block.
    await t.unit([50, 59], s => work(50, s))
    expect(seen.at(-1)).toBe('50:lake@50')
  })

  it('decodes units started together in block order, whichever is fetched first', async () => {
    const t = new PositionTracker(fakeLoader())
    const seen: string[] = []
    let release!: () => void
    const slow = new Promise<void>(r => (release = r))
    const first = t.unit([0, 9], s => unitWork('m:1', seen, slow)(0, s))
    const second = t.unit([10, 19], s => unitWork('m:1', seen)(10, s))
    await new Promise(r => setTimeout(r, 10))
    expect(seen).toEqual([])
    release()
    await Promise.all([first, second])
    expect(seen).toEqual(['0:lake@0', '10:unit@0'])
  })

  it('drops the changes of a unit that finishes after another started the state over', async () => {
    const t = new PositionTracker(fakeLoader())
    const seen: string[] = []
    let release!: () => void
    const slow = new Promise<void>(r => (release = r))
    // Unit 0-9 reads the state, then stalls; unit 30-39 (not its successor) starts over meanwhile.
    const stalled = t.unit([0, 9], async s => {
      const out = await unitWork('m:1', seen)(0, s)
      await slow
      return out
    })
    await new Promise(r => setTimeout(r, 10))
    await t.unit([30, 39], s => unitWork('m:1', seen)(30, s))
    release()
    await stalled
    await t.unit([40, 49], s => unitWork('m:1', seen)(40, s))
    expect(seen).toEqual(['0:lake@0', '30:lake@30', '40:unit@30'])
  })

  it('starts over after a failed unit', async () => {
    const t = new PositionTracker(fakeLoader())
    const seen: string[] = []
    await t.unit([0, 9], s => unitWork('m:1', seen)(0, s))
    await expect(t.unit([10, 19], async () => Promise.reject(new Error('node down')))).rejects.toThrow('node down')
    await t.unit([20, 29], s => unitWork('m:1', seen)(20, s))
    expect(seen).toEqual(['0:lake@0', '20:lake@20'])
  })
})

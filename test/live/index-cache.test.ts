import { afterAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { LiveChain } from '../../src/live/hub.ts'
import type { QuerySpec } from '../../src/query/types.ts'
import { batchRows, buildLake, collect, partsOver } from '../query/lake.ts'
import { recordingStore } from '../support/recording.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

afterAll(removeTempDirs)

describe("a chain's history queries", () => {
  it('share the index objects one of them read: the next subscription reads none, and gets the same rows', async () => {
    const { store } = await tempStore()
    const parts = partsOver(
      logs,
      [
        [100, 199],
        [200, 299],
        [300, 399],
      ],
      7,
    )
    await buildLake(store, ETH, logs, parts, { rowGroupSize: 16, pageSize: 256 }, { index: true })
    const rec = recordingStore(store)
    const live = new LiveChain({ chain: ETH, store: rec.store })
    const address = parts[1].rows[3].address as Uint8Array
    const spec: QuerySpec = {
      chain: ETH,
      dataset: logs,
      fields: [...logs.fields],
      from: 100,
      to: 399,
      predicates: [{ field: logs.fields.find(f => f.name === 'address')!, op: 'eq', values: [address] }],
    }
    const indexReads = (from: number) => rec.reads.slice(from).filter(x => x.key.includes('/index/')).length
    const first = await live.query(spec)
    expect(first.index).toBeDefined()
    const rows = batchRows(await collect(first.batches))
    expect(rows.length).toBeGreaterThan(0)
    expect(indexReads(0)).toBeGreaterThan(0)
    const before = rec.reads.length
    const second = await live.query(spec)
    expect(batchRows(await collect(second.batches))).toEqual(rows)
    expect(indexReads(before)).toBe(0)
  })
})

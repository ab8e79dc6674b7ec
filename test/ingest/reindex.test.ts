import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { loadRetired } from '../../src/manifest/retired.ts'
import { ManifestReader, parseRoot } from '../../src/manifest/read.ts'
import { reindex } from '../../src/ingest/reindex.ts'
import { segmentKeys } from '../../src/index/tiers.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import type { QuerySpec } from '../../src/query/types.ts'
import { batchRows, buildLake, collect, partsOver, type PartSpec } from '../query/lake.ts'
import { ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const ROOT = resolve(import.meta.dirname, '../..')
const LAYOUT = { rowGroupSize: 32, pageSize: 512 }

const parts = (): PartSpec[] =>
  partsOver(
    logs,
    [
      [0, 99],
      [100, 199],
      [300, 399],
    ],
    3,
    6,
  )

const indexOf = async (store: ObjectStore) => parseRoot((await store.get(rootKey(ETH)))!.body).datasets.logs.index

afterAll(removeTempDirs)

describe('reindex', () => {
  it('builds for a lake written without an index the same segments its writer would have published', async () => {
    const written = await tempStore()
    await buildLake(written.store, ETH, logs, parts(), LAYOUT, { index: true })
    const plain = await tempStore()
    await buildLake(plain.store, ETH, logs, parts(), LAYOUT)
    expect(await indexOf(plain.store)).toBeUndefined()

    const [report] = await reindex({ store: plain.store, chain: ETH, datasets: [logs] })
    expect(report).toMatchObject({ dataset: 'logs', partitions: 3, segments: 1 })
    expect(await indexOf(plain.store)).toEqual(await indexOf(written.store))

    // and queries now go through it, with the rows of the per-partition path
    const rows = parts().flatMap(p => p.rows)
    const address = rows[rows.length - 1].address
    const spec: QuerySpec = {
      chain: ETH,
      dataset: logs,
      from: 0,
      to: 399,
      predicates: [{ field: logs.fields.find(f => f.name === 'address')!, op: 'eq', values: [address] }],
      fields: [...logs.fields],
    }
    const run = async (noIndex: boolean) => {
      const result = await runQuery({ store: plain.store, manifest: new ManifestReader(plain.store), noIndex }, spec)
      return { result, rows: batchRows(await collect(result.batches)) }
    }
    const [viaIndex, walked] = [await run(false), await run(true)]
    expect(viaIndex.result.index?.columns).toEqual(['address'])
    expect(viaIndex.rows.length).toBeGreaterThan(0)
    expect(viaIndex.rows).toEqual(walked.rows)

    // a rare value's rows come from the index's inline rows, which reindex read from the partitions
    const counts = new Map<string, number>()
    for (const row of rows) counts.set(String(row.topic1), (counts.get(String(row.topic1)) ?? 0) + 1)
    const rare = rows
      .filter(row => row.topic1 !== null && counts.get(String(row.topic1))! <= 3)
      .slice(0, 4)
      .map(row => row.topic1!)
    spec.predicates = [{ field: logs.fields.find(f => f.name === 'topic1')!, op: 'in', values: rare }]
    const [inline, scanned] = [await run(false), await run(true)]
    expect(inline.result.index?.rows).toBeGreaterThanOrEqual(4)
    expect(inline.result.stats.partitionsRead).toBe(0)
    expect(inline.rows).toEqual(scanned.rows)
    expect(inline.rows.length).toBeGreaterThanOrEqual(4)
  })

  it('leaves no object of a segment it merged away, and retires the segments it replaced', async () => {
    const { store } = await tempStore()
    await buildLake(store, ETH, logs, parts(), LAYOUT)
    const stored = async () => new Set((await store.list('evm-1/index/logs/')).map(o => o.key))
    const keysOf = async (index: Awaited<ReturnType<typeof indexOf>>) =>
      new Set(
        [...index!.segments, ...(await loadRetired(store, index!.retired)).map(r => r.segment)].flatMap(s =>
          segmentKeys('evm-1/index/logs', s),
        ),
      )
    // one segment per partition, so the run merges segments no root ever listed
    await reindex({ store, chain: ETH, datasets: [logs], segmentRows: 1 })
    const first = await indexOf(store)
    expect(first!.retired).toBeUndefined()
    expect(await stored()).toEqual(await keysOf(first))

    await reindex({ store, chain: ETH, datasets: [logs] })
    const second = await indexOf(store)
    expect((await loadRetired(store, second!.retired)).map(r => r.segment)).toEqual(
      first!.segments.filter(s => !second!.segments.some(t => t.columns.address.id === s.columns.address.id)),
    )
    expect(await stored()).toEqual(await keysOf(second))
  })

  it('npm run reindex indexes every chain of a store and says what it built', async () => {
    const { store, dir } = await tempStore()
    await buildLake(store, ETH, logs, parts(), LAYOUT)
    const r = spawnSync(process.execPath, ['scripts/reindex.ts', '--data', dir], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^ETH logs: 3 partitions, \d+ rows → 1 segments, [\d.]+ MiB/m)
    expect((await indexOf(store))?.segments.length).toBe(1)
  })
})

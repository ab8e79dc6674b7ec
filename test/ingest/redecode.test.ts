import { afterAll, describe, expect, it } from 'vitest'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findChain } from '../../src/chains/registry.ts'
import { DEX_DATASETS } from '../../src/datasets/dex.ts'
import { redecode } from '../../src/ingest/redecode.ts'
import { mergePartitions, OverlapError } from '../../src/manifest/publish.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { fsStore } from '../../src/store/fs.ts'
import { partitionsOf, readManifest } from './fixtures.ts'
import { parquetReadObjects } from 'hyparquet'
import type { ObjectStore } from '../../src/store/types.ts'

const rowsOf = async (store: ObjectStore, key: string) => {
  const body = (await store.get(key))!.body
  return parquetReadObjects({ file: body.slice().buffer, utf8: false })
}

const SAMPLE = fileURLToPath(new URL('../../partitions-manifest/sample', import.meta.url))
const DEVNET = findChain('evm', '31337')!
const ref = { family: 'evm' as const, id: 31337, code: DEVNET.code }
const dirs: string[] = []
afterAll(() => dirs.forEach(d => rmSync(d, { recursive: true, force: true })))

describe('redecode', () => {
  it('rebuilds the DEX partitions of a lake from its logs: the bundled sample, row for row, and a rerun changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redecode-'))
    dirs.push(dir)
    // Only what ingest stores without the DEX datasets: blocks, transactions, logs and their manifest.
    for (const d of ['blocks', 'transactions', 'logs']) cpSync(join(SAMPLE, 'evm-31337', d), join(dir, 'evm-31337', d), { recursive: true })
    cpSync(join(SAMPLE, 'evm-31337', 'manifest'), join(dir, 'evm-31337', 'manifest'), { recursive: true })
    const store = fsStore(dir)
    const sample = fsStore(SAMPLE)
    const report = await redecode({ chain: DEVNET, store })
    for (const d of DEX_DATASETS) {
      const want = await partitionsOf(sample, ref, d.storage)
      const got = await partitionsOf(store, ref, d.storage)
      // The same partitions and rows (the bytes differ: the sample predates page checksums).
      expect(
        got.map(p => [p.from, p.to, p.rows]),
        d.name,
      ).toEqual(want.map(p => [p.from, p.to, p.rows]))
      for (const [i, p] of got.entries()) expect(await rowsOf(store, p.key), p.key).toEqual(await rowsOf(sample, want[i].key))
      expect(report.rows[d.storage]).toBe(want.reduce((n, p) => n + p.rows, 0))
    }
    expect(report.rows.dex_swaps).toBeGreaterThan(500)
    const before = await readManifest(store, ref)
    await redecode({ chain: DEVNET, store })
    expect((await readManifest(store, ref))!.generation).toBe(before!.generation)
  })

  it('refuses a chain with no logs stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redecode-'))
    dirs.push(dir)
    await expect(redecode({ chain: findChain('evm', 'ETH')!, store: fsStore(dir) })).rejects.toThrow(/no logs stored for chain ETH/)
  })
})

describe('mergePartitions with replace', () => {
  const entry = (key: string, from: number, to: number): PartitionEntry => ({ key, from, to, rows: 1, bytes: 1 }) as PartitionEntry
  it('replaces partitions inside the new one and still refuses a partial overlap', () => {
    const existing = [entry('a', 0, 99), entry('b', 100, 199)]
    expect(() => mergePartitions(existing, [entry('c', 0, 99)])).toThrow(OverlapError)
    expect(mergePartitions(existing, [entry('c', 0, 99)], true).partitions.map(p => p.key)).toEqual(['c', 'b'])
    expect(mergePartitions(existing, [entry('d', 0, 199)], true).partitions.map(p => p.key)).toEqual(['d'])
    expect(() => mergePartitions(existing, [entry('e', 50, 149)], true)).toThrow(OverlapError)
  })
})

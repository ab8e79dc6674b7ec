import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchIngest, distinctCopy, ingestNodeFlags, isDistinctOnChain, jsonSizes, poolRows, repeatSource } from '../../bench/lib/ingest.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { transformBlocks } from '../../src/ingest/transform.ts'
import { bytesToHex } from '../../src/schema/hex.ts'
import { packBatch, unpackBatch, type ColumnBatch, type PackedBatch } from '../../src/columns/batch.ts'
import { storedFields } from '../../src/parquet/write.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'
import type { PoolRun } from '../../bench/lib/ingest-pool.ts'
import { ETH, recordedBlock, recordedReceipts, startReplay, WITH_RECEIPTS, type Replay } from '../ingest/fixtures.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

let replay: Replay
beforeAll(async () => {
  replay = await startReplay()
})
afterAll(() => replay?.stop())

describe('benchIngest', () => {
  it('measures the recorded mainnet blocks: rows, Parquet and JSON bytes per dataset', async () => {
    const b = await benchIngest(
      replay.url,
      WITH_RECEIPTS.map(n => [n, n] as [number, number]),
    )
    expect(b.blocks).toBe(3)
    expect(b.datasets.blocks.rows).toBe(3)
    expect(b.datasets.transactions.rows).toBe(102 + 94 + 157)
    expect(b.datasets.logs.rows).toBe(237 + 291 + 408)
    const json = WITH_RECEIPTS.map(n => jsonSizes({ block: recordedBlock(n), receipts: recordedReceipts(n) }))
    expect(b.datasets.logs.jsonBytes).toBe(json.reduce((s, j) => s + j.logs, 0))
    // (the DEX datasets may have no rows in three blocks)
    for (const d of Object.values(b.datasets).filter(d => d.rows > 0)) {
      expect(d.parquetBytes).toBeGreaterThan(0)
      expect(d.parquetBytesPerRow).toBeCloseTo(d.parquetBytes / d.rows)
    }
    // Logs compress well against their JSON even in one-block partitions.
    expect(b.datasets.logs.ratio).toBeLessThan(0.5)
    expect(b.rpcBytes).toBeGreaterThan(b.datasets.transactions.jsonBytes)
  })
})

describe('the pool rows', () => {
  it("take the Node flags of package.json's ingest script, and refuse a script that does not start node", async () => {
    expect(ingestNodeFlags(ROOT)).toEqual(['--single-threaded-gc'])
    const dir = await mkdtemp(join(tmpdir(), 'bench-flags-'))
    try {
      await writeFile(join(dir, 'package.json'), JSON.stringify({ scripts: { ingest: 'tsx scripts/ingest.ts' } }))
      expect(() => ingestNodeFlags(dir)).toThrow(/does not start with node/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('run in a process of their own with those flags, every dataset and without DEX, each repetition apart, then units of a partition', async () => {
    const run: PoolRun = {
      url: replay.url,
      nodePid: replay.pid,
      chain: ETH,
      blocks: [WITH_RECEIPTS[0]],
      rounds: 2,
      blocksPerUnit: 2,
      repetitions: 2,
      partitionBlocks: 3,
    }
    const out = await poolRows(ingestNodeFlags(ROOT), run, () => {})
    expect(out.execArgv).toContain('--single-threaded-gc')
    expect(out.rows.map(([name]) => name)).toEqual([
      expect.stringMatching(/every dataset/),
      expect.stringMatching(/without the DEX datasets/),
      expect.stringMatching(/units of the chain's default partition \(3 blocks\)/),
    ])
    for (const [, runs] of out.rows.slice(0, 2)) {
      expect(runs).toHaveLength(2)
      for (const r of runs) {
        expect(r.blocks).toBe(2)
        expect(r.cpuMsPerBlock).toBeGreaterThan(0)
        expect(r.nodeCpuMsPerBlock).toBeGreaterThanOrEqual(0)
        expect(r.peakRssMiB).toBeGreaterThan(0)
      }
    }
    // two units of 3 blocks a thread, as many at once as the pool builds (a unit a thread)
    const [big] = out.rows[2][1]
    expect(big.blocks).toBe(2 * availableParallelism() * 3)
    expect(big.peakRssMiB).toBeGreaterThan(0)
  }, 60_000)
})

/** A fetch's rows packed, as a source gives them. */
const packAll = (datasets: readonly DatasetDecl[], part: object): Record<string, PackedBatch> =>
  Object.fromEntries(datasets.map(d => [d.storage, packBatch(storedFields(d), (part as Record<string, ColumnBatch>)[d.storage])]))
/** A fetch's rows as values, byte values copied out (a copy changes the packed bytes where they lie). */
const unpackAll = (part: Record<string, PackedBatch>) =>
  Object.fromEntries(
    Object.entries(part).map(([k, b]) => {
      const { length, columns } = unpackBatch(b)
      const own = Object.fromEntries(Object.entries(columns).map(([c, vs]) => [c, vs.map(v => (v instanceof Uint8Array ? v.slice() : v))]))
      return [k, { length, columns: own }]
    }),
  ) as Record<string, { length: number; columns: Record<string, unknown[]> }>

describe('distinctCopy', () => {
  const raw = { block: recordedBlock(18000000), receipts: recordedReceipts(18000000) }
  const hex = (v: unknown) => (v instanceof Uint8Array ? bytesToHex(v) : v)

  it('changes the columns distinct on a chain in every row, the same way wherever a value recurs, and leaves the rest', () => {
    const packed = packAll(EVM_DATASETS, transformBlocks([raw]))
    const part = unpackAll(packed)
    const copy = unpackAll(distinctCopy(EVM_DATASETS, packed, 7))
    for (const d of EVM_DATASETS) {
      for (const f of d.fields.filter(f => !f.virtual)) {
        const [a, b] = [part[d.storage].columns[f.name], copy[d.storage].columns[f.name]]
        const changed = a.map((v, i) => hex(v) !== hex(b[i]))
        const expected = a.map(v => isDistinctOnChain(f) && v instanceof Uint8Array && v.length >= 4)
        expect(changed, `${d.storage}.${f.name}`).toEqual(expected)
      }
    }
    expect(['hash', 'r', 's', 'input'].every(c => isDistinctOnChain(EVM_DATASETS[1].fields.find(f => f.name === c)!))).toBe(true)
    expect(['from', 'to', 'value'].some(c => isDistinctOnChain(EVM_DATASETS[1].fields.find(f => f.name === c)!))).toBe(false)
    // a transaction's hash still joins its logs
    const txHash = new Map(copy.transactions.columns.hash.map((h, i) => [hex(h), i]))
    const logTx = copy.logs.columns.transaction_hash
    expect(logTx.every(h => txHash.has(hex(h)))).toBe(true)
    // the rows are changed where they lie, and the xor lands on the first four bytes and the last four
    const first = part.transactions.columns.hash[0] as Uint8Array
    const changed = copy.transactions.columns.hash[0] as Uint8Array
    expect(bytesToHex(first)).toBe(raw.block.transactions[0].hash)
    expect(bytesToHex(unpackBatch(packed.transactions).columns.hash[0] as Uint8Array)).toBe(bytesToHex(changed))
    expect([...changed.subarray(4, 28)]).toEqual([...first.subarray(4, 28)])
    expect([changed[0] ^ first[0], changed[1] ^ first[1], changed[28] ^ first[28], changed[31] ^ first[31]]).toEqual([7, 0, 7, 0])
  })
})

describe('repeatSource', () => {
  it('fetches the copies a few at a time and gives them in copy order, each after the first made distinct', async () => {
    const raw = { block: recordedBlock(17000000), receipts: recordedReceipts(17000000) }
    let active = 0
    let most = 0
    let calls = 0
    const source = {
      datasets: EVM_DATASETS,
      head: async () => 17000000,
      async fetch() {
        active++
        most = Math.max(most, active)
        // later calls answer sooner, so arrival order is not copy order
        await new Promise(r => setTimeout(r, 30 - 5 * calls++))
        active--
        return packAll(EVM_DATASETS, transformBlocks([raw]))
      },
    }
    const out = await repeatSource(source, 5, 3).fetch([17000000, 17000000])
    expect(most).toBe(3)
    const hashes = unpackBatch(out.transactions).columns.hash as Uint8Array[]
    const n = raw.block.transactions.length
    expect(hashes).toHaveLength(5 * n)
    for (let copy = 0; copy < 5; copy++) {
      const first = hashes[copy * n]
      const original = raw.block.transactions[0].hash
      // copy k carries k xored into its first byte (the xor's low byte)
      expect(first[0] ^ Number.parseInt(original.slice(2, 4), 16), `copy ${copy}`).toBe(copy)
    }
  })
})

describe('jsonSizes', () => {
  it('splits a block into header, transactions with receipts (no logs), and logs', () => {
    const raw = { block: recordedBlock(17000000), receipts: recordedReceipts(17000000) }
    const sizes = jsonSizes(raw)
    const whole = JSON.stringify(raw.block).length + JSON.stringify(raw.receipts).length
    // Every byte of the JSON is counted once, give or take the brackets and commas joining the pieces.
    const pieces = sizes.blocks + sizes.transactions + sizes.logs
    expect(Math.abs(whole - pieces)).toBeLessThan(0.05 * whole)
    expect(sizes.logs).toBe(
      raw.receipts.flatMap((r: { logs: unknown[] }) => r.logs).reduce((n: number, l: unknown) => n + JSON.stringify(l).length, 0),
    )
  })
})

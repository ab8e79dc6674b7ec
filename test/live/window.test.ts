import { afterAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CHAINS } from '../../src/chains/registry.ts'
import { blocks, EVM_DATASETS, logs, transactions } from '../../src/datasets/evm.ts'
import { transformBlocks, type EvmBatches } from '../../src/ingest/transform.ts'
import { decodeRows, encodeRows } from '../../src/live/block-codec.ts'
import { compactBlocks, partitionRanges } from '../../src/live/compact.ts'
import { rowSelector } from '../../src/live/match.ts'
import { rowsMessages } from '../../src/live/messages.ts'
import { BrokenLinkError, UnfinalizedWindow, windowBlock, type WindowBlock } from '../../src/live/window.ts'
import { jsonEncoder } from '../../src/format/json.ts'
import { HexKernel, hexModuleFromFile } from '../../src/format/hex-kernel.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { runQuery } from '../../src/query/engine.ts'
import type { Predicate } from '../../src/query/types.ts'
import { valuesOf } from '../../src/columns/vector.ts'
import { columnOf } from '../../src/schema/dataset.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { plain } from '../query/lake.ts'
import { sharedPath } from '../support/shared.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import type { RowBatch } from '../../src/columns/batch.ts'

const DATA = sharedPath('data', 'evm-mainnet')
const RECORDED = [17000000, 18000000, 18500000]
const ETH = CHAINS.find(c => c.code === 'ETH')!
const json = (path: string) => JSON.parse(readFileSync(join(DATA, path), 'utf8'))
const raw = (n: number) => ({ block: json(`blocks/mainnet_block_${n}_full.json`), receipts: json(`receipts/mainnet_receipts_${n}.json`) })
const recorded: { n: number; rpc: ReturnType<typeof raw>; batches: EvmBatches }[] = RECORDED.map(n => {
  const rpc = raw(n)
  return { n, rpc, batches: transformBlocks([rpc]) }
})

afterAll(removeTempDirs)

const plainBatch = (b: { length: number; columns: Record<string, unknown[]> }) =>
  Array.from({ length: b.length }, (_, i) => Object.fromEntries(Object.entries(b.columns).map(([k, v]) => [k, plain(v[i] as never)])))

/** A RowBatch's rows as plainBatch gives them, its vectors read back as values. */
const plainRowBatch = (b: RowBatch) =>
  plainBatch({ length: b.length, columns: Object.fromEntries(Object.entries(b.columns).map(([k, v]) => [k, valuesOf(v)])) })

/** A fake chain of `n` headers on top of `parent`, each holding the same recorded rows. */
function chainOf(from: number, n: number, parent: string, rows: EvmBatches, tag = 'a'): WindowBlock[] {
  const out: WindowBlock[] = []
  for (let i = 0; i < n; i++) {
    const hash = '0x' + `${tag}${from + i}`.padStart(64, '0')
    out.push(windowBlock({ number: from + i, hash, parentHash: out.at(-1)?.hash ?? parent }, EVM_DATASETS, { ...rows }))
  }
  return out
}

describe('block codec', () => {
  it('round-trips real mainnet rows of every dataset exactly', async () => {
    for (const { batches } of recorded) {
      for (const d of EVM_DATASETS) {
        const batch = batches[d.storage as keyof EvmBatches]
        const back = await decodeRows(d, encodeRows(d, batch))
        expect(plainBatch(back)).toEqual(plainBatch(batch))
      }
    }
  })

  it('keeps a hundred mainnet blocks well inside a 128 MB isolate', () => {
    const perBlock = recorded.map(r => EVM_DATASETS.reduce((n, d) => n + encodeRows(d, r.batches[d.storage as keyof EvmBatches]).length, 0))
    const hundred = (perBlock.reduce((a, b) => a + b, 0) / perBlock.length) * 100
    // The JSON-RPC text of the same blocks, which the rows come from, for scale.
    const source = RECORDED.map(
      n =>
        readFileSync(join(DATA, `blocks/mainnet_block_${n}_full.json`)).length +
        readFileSync(join(DATA, `receipts/mainnet_receipts_${n}.json`)).length,
    )
    expect(hundred).toBeLessThan(16 * 1024 * 1024)
    expect(hundred / 100).toBeLessThan(source.reduce((a, b) => a + b, 0) / source.length / 3)
  })

  it('handles a block without logs', async () => {
    const empty = transformBlocks([{ block: { ...recorded[0].rpc.block, transactions: [] }, receipts: [] }])
    expect((await decodeRows(logs, encodeRows(logs, empty.logs))).length).toBe(0)
  })
})

describe('UnfinalizedWindow', () => {
  const rows = recorded[0].batches

  it('appends blocks linked by parent hash and refuses any other', () => {
    const w = new UnfinalizedWindow({ number: 9, hash: '0x' + '9'.padStart(64, '0') })
    const chain = chainOf(10, 3, w.anchor.hash, rows)
    for (const b of chain) w.append(b)
    expect([w.low, w.tip.number, w.size]).toEqual([10, 12, 3])
    expect(w.hashAt(9)).toBe(w.anchor.hash)
    expect(w.get(11)).toBe(chain[1])
    expect(w.range(11, 99)).toEqual(chain.slice(1))
    expect(w.bytes).toBe(chain.reduce((n, b) => n + b.bytes, 0))
    const [orphan] = chainOf(13, 1, '0x' + 'f'.repeat(64), rows)
    expect(() => w.append(orphan)).toThrow(BrokenLinkError)
    const [gap] = chainOf(14, 1, chain[2].hash, rows)
    expect(() => w.append(gap)).toThrow(BrokenLinkError)
  })

  it('rolls back above a fork point and finalizes from the bottom', () => {
    const w = new UnfinalizedWindow({ number: 9, hash: '0x' + '9'.padStart(64, '0') })
    const chain = chainOf(10, 5, w.anchor.hash, rows)
    chain.forEach(b => w.append(b))
    expect(w.rollback(12)).toEqual(chain.slice(3))
    const fork = chainOf(13, 2, chain[2].hash, rows, 'b')
    fork.forEach(b => w.append(b))
    expect(w.tip.hash).toBe(fork[1].hash)
    expect(w.finalize(11)).toEqual(chain.slice(0, 2))
    expect(w.anchor).toEqual({ number: 11, hash: chain[1].hash })
    expect(w.low).toBe(12)
    expect(() => w.rollback(10)).toThrow('anchor')
    expect(w.bytes).toBe([chain[2], ...fork].reduce((n, b) => n + b.bytes, 0))
  })
})

describe('live rows are HTTP rows', () => {
  const block = recorded[2].batches
  /** A rows message as the client reads it: UTF-8 JSON text. */
  const parsed = (m: Uint8Array) => JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(m))

  it('rows messages hold the records of the HTTP JSON format, split by count', () => {
    const fields = logs.fields.filter(f => !f.extra)
    const selected = rowSelector([], fields, ETH.id).select(block.logs)
    const http = jsonEncoder(fields)
    const bytes = Buffer.concat([...http.open(), ...http.batch(selected), ...http.close()])
    const messages = rowsMessages(fields, selected, 100).map(parsed)
    expect(messages.length).toBe(Math.ceil(selected.length / 100))
    expect(messages.every(m => m.type === 'rows' && m.rows.length <= 100 && m.removed === undefined)).toBe(true)
    expect(messages.flatMap(m => m.rows)).toEqual(JSON.parse(bytes.toString('utf8')))
    const removed = rowSelector([], fields, ETH.id).select(block.logs, { removed: true })
    const again = rowsMessages(fields, removed, 1000, { removed: true }).map(parsed)
    expect(again[0].removed).toBe(true)
    expect(again[0].rows).toEqual(JSON.parse(bytes.toString('utf8')).map((r: object) => ({ ...r, removed: true })))
  })

  it('rows messages end after the record that takes them past the byte cap (in UTF-8 bytes), so no frame is huge', () => {
    const fields = logs.fields.filter(f => !f.extra)
    const selected = rowSelector([], fields, ETH.id).select(block.logs)
    const all = rowsMessages(fields, selected, 10_000)
    expect(all.length).toBe(1)
    const cap = Math.floor(all[0].length / 5)
    const split = rowsMessages(fields, selected, 10_000, { maxBytes: cap })
    expect(split.length).toBeGreaterThanOrEqual(5)
    const record = (m: Uint8Array) => parsed(m).rows as object[]
    for (const m of split.slice(0, -1)) {
      // Past the cap, and only by its last record.
      expect(m.length).toBeGreaterThanOrEqual(cap)
      const rows = record(m)
      expect(JSON.stringify({ type: 'rows', rows: rows.slice(0, -1) }).length).toBeLessThan(cap + 2)
    }
    expect(split.flatMap(record)).toEqual(record(all[0]))
    expect(
      rowsMessages(fields, selected, 10_000, { maxBytes: 1 })
        .map(record)
        .every(r => r.length === 1),
    ).toBe(true)
  })

  it('rows messages are the records of the HTTP JSON format cut as one at a time would cut them, with or without the hex kernel', async () => {
    const kernel = new HexKernel(await hexModuleFromFile())
    for (const [decl, rows] of [
      [logs, block.logs],
      [transactions, block.transactions],
    ] as const) {
      const fields = decl.fields.filter(f => !f.extra)
      const selected = rowSelector([], fields, ETH.id).select(rows)
      const http = jsonEncoder(fields)
      const texts = (
        JSON.parse(Buffer.concat([...http.open(), ...http.batch(selected), ...http.close()]).toString('utf8')) as object[]
      ).map(r => JSON.stringify(r))
      const total = texts.reduce((n, t) => n + t.length + 1, 0)
      for (const maxRows of [1, 7, 100, 100_000]) {
        for (const cap of [1, Math.floor(total / 7), Math.floor(total / 2), total + 100]) {
          // The reference: a message ends at maxRows records, or after the record that takes it to the cap.
          const expected: string[] = []
          for (let i = 0; i < texts.length;) {
            let m = '{"type":"rows","rows":[' + texts[i++]
            for (let n = 1; i < texts.length && n < maxRows && m.length < cap; n++) m += ',' + texts[i++]
            expected.push(m + ']}')
          }
          const text = (ms: Uint8Array[]) => ms.map(m => Buffer.from(m).toString('utf8'))
          expect(text(rowsMessages(fields, selected, maxRows, { maxBytes: cap }))).toEqual(expected)
          expect(text(rowsMessages(fields, selected, maxRows, { maxBytes: cap, hex: kernel }))).toEqual(expected)
        }
      }
    }
  })

  it('filters exactly like the reference: __in lists, equality, null topics, virtual chain', () => {
    const logsJson = recorded[2].rpc.receipts.flatMap((r: { logs: unknown[] }) => r.logs) as {
      address: string
      topics: string[]
      logIndex: string
    }[]
    const hot = logsJson[0].address
    const topic0 = logsJson[0].topics[0]
    const field = (name: string) => logs.fields.find(f => f.name === name)!
    const p = (name: string, op: Predicate['op'], values: (string | null)[]): Predicate => ({
      field: field(name),
      op,
      values: values.map(v => (v === null ? null : KINDS[field(name).kind].parse(v))),
    })
    const fields = [field('log_index'), field('address'), field('topic3')]
    const cases: [Predicate[], (l: (typeof logsJson)[number]) => boolean][] = [
      [[p('address', 'in', [hot, '0x' + '00'.repeat(20)])], l => l.address.toLowerCase() === hot.toLowerCase()],
      [[p('topic0', 'eq', [topic0]), p('topic3', 'eq', [null])], l => l.topics[0] === topic0 && l.topics[3] === undefined],
      [[p('chain', 'eq', ['1'])], () => true],
      [[p('chain', 'eq', ['2'])], () => false],
      [[p('log_index', 'gte', ['100']), p('log_index', 'lte', ['0x80'])], l => Number(l.logIndex) >= 100 && Number(l.logIndex) <= 128],
    ]
    for (const [predicates, keep] of cases) {
      const out = rowSelector(predicates, fields, ETH.id).select(block.logs)
      const expected = logsJson
        .filter(keep)
        .map(l => ({ log_index: l.logIndex, address: l.address.toLowerCase(), topic3: l.topics[3] ?? null }))
      expect(out.length).toBe(expected.length)
      expect(rowsMessages(fields, out, 10_000).flatMap(m => parsed(m).rows)).toEqual(expected)
    }
  })
})

describe('compaction', () => {
  it('cuts contiguous runs at shard boundaries', () => {
    const at = (...ns: number[]) => ns.map(number => ({ number }))
    expect(partitionRanges(at(5, 6, 7, 9, 10), 100)).toEqual([
      [5, 7],
      [9, 10],
    ])
    expect(partitionRanges(at(98, 99, 100, 101), 100)).toEqual([
      [98, 99],
      [100, 101],
    ])
  })

  it('writes and publishes partitions the engine reads back, and a rerun publishes nothing new', async () => {
    const store = (await tempStore()).store
    const ref = { family: 'evm' as const, id: ETH.id, code: ETH.code }
    const blocksHeld = recorded.map(r =>
      windowBlock({ number: r.n, hash: r.rpc.block.hash, parentHash: r.rpc.block.parentHash }, EVM_DATASETS, { ...r.batches }),
    )
    const first = await compactBlocks(store, ref, EVM_DATASETS, blocksHeld)
    expect(first.ranges).toEqual(RECORDED.map(n => [n, n]))
    const second = await compactBlocks(store, ref, EVM_DATASETS, blocksHeld)
    expect(second.generation).toBe(first.generation)
    const manifest = new ManifestReader(store)
    for (const d of [blocks, transactions, logs]) {
      const fields = d.fields.filter(f => f.virtual === undefined)
      const result = await runQuery(
        { store, manifest },
        { chain: ETH, dataset: d, from: RECORDED[0], to: RECORDED[2], predicates: [], fields },
      )
      const got: RowBatch[] = []
      for await (const b of result.batches) got.push(b)
      const rows = got.flatMap(b => plainRowBatch(b))
      const expected = recorded
        .flatMap(r => plainBatch(r.batches[d.storage as keyof EvmBatches]))
        .map(row => Object.fromEntries(fields.map(f => [f.name, row[columnOf(f)]])))
      expect(rows, d.name).toEqual(expected)
    }
  })
})

/**
 * Integrity end to end: one bit flipped anywhere in a lake written by the real writer
 * (pages, dictionary pages, page headers, page indexes, bloom filters, footers, the
 * lookup copy, the manifest shard and root) and queried through the real engine gives
 * exactly the original rows or a CorruptObjectError naming the damaged object, never
 * other rows; through the HTTP app, a 503 storage_corrupt or an aborted stream, and a
 * log line naming the object. A lake written before checksums still reads.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { crc32 as zlibCrc32 } from 'node:zlib'
import { parquetMetadata, parquetReadObjects, readOffsetIndex } from 'hyparquet'
import { parquetHeader } from 'hyparquet/src/column.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { createApp } from '../../src/http/app.ts'
import { rootKey } from '../../src/manifest/keys.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { PartitionEntry } from '../../src/manifest/types.ts'
import { runQuery } from '../../src/query/engine.ts'
import { groupSpan } from '../../src/query/hold.ts'
import type { QuerySpec } from '../../src/query/types.ts'
import { crc32Js } from '../../src/store/crc32.ts'
import { fsStore } from '../../src/store/fs.ts'
import { CorruptObjectError, type ObjectStore } from '../../src/store/types.ts'
import { basic } from '../support/basic.ts'
import { DEVNET, ETH } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { batchRows, buildLake, collect, expected, makePools, makeRows, rng, type Row } from './lake.ts'

/** Serves `objects` from memory, with bit `bit` of byte `at` of object `key` flipped. */
function flipped(objects: Map<string, Uint8Array>, flip?: { key: string; at: number; bit: number }): ObjectStore {
  const bytesOf = (key: string) => {
    const bytes = objects.get(key)
    if (!bytes || !flip || flip.key !== key) return bytes
    const copy = bytes.slice()
    copy[flip.at] ^= 1 << flip.bit
    return copy
  }
  return {
    get: async (key, range) => {
      const bytes = bytesOf(key)
      if (!bytes) return null
      const start = range && 'offset' in range ? range.offset : range && 'suffix' in range ? Math.max(0, bytes.length - range.suffix) : 0
      const end = range && 'length' in range && range.length !== undefined ? Math.min(bytes.length, start + range.length) : bytes.length
      return { key, etag: 'e', size: bytes.length, body: bytes.subarray(start, end), offset: start }
    },
    head: async key => (objects.has(key) ? { key, etag: 'e', size: objects.get(key)!.length } : null),
    put: async () => null,
    list: async prefix =>
      [...objects.keys()].filter(k => k.startsWith(prefix)).map(key => ({ key, etag: 'e', size: objects.get(key)!.length })),
    delete: async () => {},
  }
}

async function objectsOf(store: ObjectStore): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>()
  for (const { key } of await store.list('')) out.set(key, (await store.get(key))!.body.slice())
  return out
}

/** The byte regions of a Parquet file: dictionary pages, page headers, page bodies, page indexes, blooms, footer. */
function regionsOf(bytes: Uint8Array, entry: { tailOffset: number; footerOffset?: number }): Record<string, [number, number][]> {
  const metadata = parquetMetadata(bytes.slice().buffer)
  const out: Record<string, [number, number][]> = { 'dictionary pages': [], 'page headers': [], 'data pages': [] }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let bloomStart = bytes.length - 8 - metadata.metadata_length
  for (const rg of metadata.row_groups) {
    for (const chunk of rg.columns) {
      const m = chunk.meta_data!
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
      const end = start + Number(m.total_compressed_size)
      const reader = { view, offset: start }
      while (reader.offset < end) {
        const headerStart = reader.offset
        const header = parquetHeader(reader)
        out['page headers'].push([headerStart, reader.offset])
        const body: [number, number] = [reader.offset, reader.offset + header.compressed_page_size]
        out[header.type === 'DICTIONARY_PAGE' ? 'dictionary pages' : 'data pages'].push(body)
        reader.offset = body[1]
      }
      if (m.bloom_filter_offset !== undefined) bloomStart = Math.min(bloomStart, Number(m.bloom_filter_offset))
    }
  }
  const footerOffset = bytes.length - 8 - metadata.metadata_length
  out['page indexes'] = [[entry.tailOffset, bloomStart]]
  if (bloomStart < footerOffset) out['bloom filters'] = [[bloomStart, footerOffset]]
  out.footer = [[footerOffset, bytes.length]]
  return out
}

/** `n` (byte, bit) positions spread over `spans`, drawn with `r`. */
function positions(spans: [number, number][], n: number, r: () => number): { at: number; bit: number }[] {
  const total = spans.reduce((s, [a, b]) => s + b - a, 0)
  return Array.from({ length: n }, () => {
    let k = Math.floor(r() * total)
    for (const [a, b] of spans) {
      if (k < b - a) return { at: a + k, bit: Math.floor(r() * 8) }
      k -= b - a
    }
    throw new Error('unreachable')
  })
}

const hex = (b: Uint8Array) => Array.from(b, x => x.toString(16).padStart(2, '0')).join('')

let objects: Map<string, Uint8Array>
let rows: Row[]
let entry: PartitionEntry
let queries: QuerySpec[]
let baselines: unknown[][]
let rareHex: string

const FROM = 0
const TO = 1599

beforeAll(async () => {
  const { store } = await tempStore()
  const r = rng(11)
  const pools = makePools(r)
  rows = makeRows(
    logs,
    Array.from({ length: TO - FROM + 1 }, (_, i) => FROM + i),
    r,
    pools,
    22,
  )
  // The default layout, and enough rows for a lookup copy.
  ;[entry] = await buildLake(store, ETH, logs, [{ from: FROM, to: TO, rows }])
  expect(entry.lookup).toBeDefined()
  objects = await objectsOf(store)
  const counts = new Map<string, number>()
  for (const row of rows) counts.set(hex(row.address as Uint8Array), (counts.get(hex(row.address as Uint8Array)) ?? 0) + 1)
  const rare = rows.find(row => counts.get(hex(row.address as Uint8Array)) === 1)!.address as Uint8Array
  rareHex = hex(rare)
  const hot = rows.find(row => row.topic0 !== null)!.topic0 as Uint8Array
  const field = (name: string) => logs.fields.find(f => f.name === name)!
  const spec = (extra: Partial<QuerySpec>): QuerySpec => ({
    chain: ETH,
    dataset: logs,
    from: FROM,
    to: TO,
    predicates: [],
    fields: [...logs.fields],
    ...extra,
  })
  queries = [
    // Every page of every column, the page indexes and the footer.
    spec({}),
    // The address blooms, then the lookup copy's tail and row group.
    spec({ predicates: [{ field: field('address'), op: 'eq', values: [rare] }] }),
    // The topic0 blooms, filter pages, then the output pages of the matching rows.
    spec({ from: 100, to: 900, predicates: [{ field: field('topic0'), op: 'in', values: [hot] }] }),
  ]
  baselines = []
  for (const q of queries) {
    const result = await runQuery({ store: flipped(objects), manifest: new ManifestReader(flipped(objects)) }, q)
    const got = batchRows(await collect(result.batches))
    expect(got).toEqual(expected(rows, q.predicates, q.fields, result.range, logs.rangeKey, ETH.id))
    baselines.push(got)
  }
  expect(baselines[1].length).toBe(1)
  expect(baselines[2].length).toBeGreaterThan(0)
}, 120_000)

afterAll(removeTempDirs)

describe('the writer', () => {
  it('sets every page header’s standard CRC-32 (zlib’s) and records the tail’s and the manifest’s checksums', () => {
    for (const key of [entry.key, entry.lookup!.key]) {
      const bytes = objects.get(key)!
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const metadata = parquetMetadata(bytes.slice().buffer)
      let pages = 0
      for (const rg of metadata.row_groups) {
        for (const chunk of rg.columns) {
          const m = chunk.meta_data!
          const reader = { view, offset: Number(m.dictionary_page_offset ?? m.data_page_offset) }
          const end = reader.offset + Number(m.total_compressed_size)
          while (reader.offset < end) {
            const header = parquetHeader(reader)
            const body = bytes.subarray(reader.offset, reader.offset + header.compressed_page_size)
            expect(header.crc! >>> 0).toBe(zlibCrc32(body))
            reader.offset += header.compressed_page_size
            pages++
          }
          expect(reader.offset).toBe(end)
          // The offset index still points at the pages' headers.
          if (chunk.offset_index_offset !== undefined) {
            const at = Number(chunk.offset_index_offset)
            const index = readOffsetIndex({
              view: new DataView(bytes.buffer, bytes.byteOffset + at, chunk.offset_index_length!),
              offset: 0,
            })
            for (const p of index.page_locations) expect(parquetHeader({ view, offset: Number(p.offset) }).type).toBe('DATA_PAGE_V2')
          }
        }
      }
      expect(pages).toBeGreaterThan(40)
    }
    const bytes = objects.get(entry.key)!
    expect(entry.footerCrc).toBe(zlibCrc32(bytes.subarray(entry.footerOffset!)))
    for (const span of Object.values(entry.blooms!))
      expect(span.crc).toBe(zlibCrc32(bytes.subarray(span.offset, span.offset + span.length)))
    expect(entry.lookup!.tailCrc).toBe(zlibCrc32(objects.get(entry.lookup!.key)!.subarray(entry.lookup!.tailOffset)))
    const root = JSON.parse(new TextDecoder().decode(objects.get(rootKey(ETH))!))
    const [ref] = root.datasets.logs.shards
    const shardKey = [...objects.keys()].find(k => k.includes('/manifest/logs/'))!
    expect(ref[7]).toBe(zlibCrc32(objects.get(shardKey)!))
    expect(typeof root.crc).toBe('number')
  })

  it('computes CRC-32 in JavaScript exactly as zlib does, at any alignment and length', () => {
    const r = rng(3)
    const bytes = Uint8Array.from({ length: 4096 }, () => Math.floor(r() * 256))
    for (let offset = 0; offset < 8; offset++) {
      for (const length of [0, 1, 3, 15, 16, 17, 63, 64, 65, 1000, 4000]) {
        const s = bytes.subarray(offset, offset + length)
        expect(crc32Js(s), `${offset}+${length}`).toBe(zlibCrc32(s))
      }
    }
  })
})

describe('one flipped bit', () => {
  it('anywhere in the lake gives the original rows or a CorruptObjectError naming the object, never other rows', async () => {
    const r = rng(5)
    const shardKey = [...objects.keys()].find(k => k.includes('/manifest/logs/'))!
    const targets: { region: string; key: string; spans: [number, number][]; n: number }[] = []
    for (const [name, spans] of Object.entries(regionsOf(objects.get(entry.key)!, entry)))
      targets.push({ region: name, key: entry.key, spans, n: name === 'page headers' ? 24 : 12 })
    // The copy's row group that the rare-address query reads (its address bounds hold the value).
    const copyBytes = objects.get(entry.lookup!.key)!
    const copyGroups = parquetMetadata(copyBytes.slice().buffer).row_groups
    const read = copyGroups.findIndex(rg => {
      const s = rg.columns.find(c => c.meta_data!.path_in_schema[0] === 'address')!.meta_data!.statistics!
      return hex(s.min_value as Uint8Array) <= rareHex && rareHex <= hex(s.max_value as Uint8Array)
    })
    const span = groupSpan({ row_groups: copyGroups } as never, read)
    targets.push({ region: 'lookup copy pages', key: entry.lookup!.key, spans: [span], n: 12 })
    targets.push({ region: 'lookup copy tail', key: entry.lookup!.key, spans: [[entry.lookup!.tailOffset, entry.lookup!.bytes]], n: 12 })
    targets.push({ region: 'manifest shard', key: shardKey, spans: [[0, objects.get(shardKey)!.length]], n: 12 })
    targets.push({ region: 'manifest root', key: rootKey(ETH), spans: [[0, objects.get(rootKey(ETH))!.length]], n: 12 })

    const report: Record<string, { flips: number; detected: number }> = {}
    const wrong: string[] = []
    for (const t of targets) {
      const seen = (report[t.region] = { flips: 0, detected: 0 })
      for (const { at, bit } of positions(t.spans, t.n, r)) {
        const store = flipped(objects, { key: t.key, at, bit })
        const manifest = new ManifestReader(store)
        let detected = false
        for (const [i, q] of queries.entries()) {
          try {
            const result = await runQuery({ store, manifest }, q)
            const got = batchRows(await collect(result.batches))
            if (JSON.stringify(got) !== JSON.stringify(baselines[i]))
              wrong.push(`${t.region} byte ${at} bit ${bit}: query ${i} answered other rows`)
          } catch (error) {
            if (!(error instanceof CorruptObjectError) || error.key !== t.key) {
              wrong.push(`${t.region} byte ${at} bit ${bit}: query ${i} failed without naming the object: ${String(error)}`)
            }
            detected = true
          }
        }
        seen.flips++
        if (detected) seen.detected++
      }
    }
    console.log(
      'flipped bits, detected / flipped:',
      Object.entries(report)
        .map(([k, v]) => `${k} ${v.detected}/${v.flips}`)
        .join(', '),
    )
    expect(wrong).toEqual([])
    // Every byte of these is read by one of the queries and covered by a checksum.
    for (const region of [
      'dictionary pages',
      'data pages',
      'page indexes',
      'footer',
      'lookup copy pages',
      'lookup copy tail',
      'manifest shard',
    ]) {
      expect(report[region].detected, region).toBe(report[region].flips)
    }
    // Blooms of columns no query filters by, unused header fields or a root's `crc` key name change nothing a query returns.
    for (const region of Object.keys(report)) expect(report[region].detected, region).toBeGreaterThan(0)
  }, 600_000)

  it('is a 503 storage_corrupt or an aborted stream through the HTTP app, logged naming the object', async () => {
    const logged: unknown[] = []
    const users = await parseUsers('alice:wonderland')
    const regions = regionsOf(objects.get(entry.key)!, entry)
    // Near the end of the last page of the `data` column (an output column) in the last row group.
    const metadata = parquetMetadata(objects.get(entry.key)!.slice().buffer)
    const data = metadata.row_groups.at(-1)!.columns.find(c => c.meta_data!.path_in_schema[0] === 'data')!.meta_data!
    const cases = [
      { what: 'footer', at: regions.footer[0][0] + 9 },
      { what: 'a late data page', at: Number(data.data_page_offset) + Number(data.total_compressed_size) - 3 },
    ]
    const outcomes: string[] = []
    for (const c of cases) {
      logged.length = 0
      const store = flipped(objects, { key: entry.key, at: c.at, bit: 2 })
      const app = createApp({ store, manifest: new ManifestReader(store), users, log: (_m, e) => logged.push(e) })
      const res = await app.fetch(
        new Request(`http://api.example.com/v1/api/logs?chains=ETH&from_block=${FROM}&to_block=${TO}&format=json_stream`, {
          headers: { authorization: basic('alice', 'wonderland') },
        }),
      )
      if (res.status === 503) {
        expect(((await res.json()) as { error: { code: string } }).error.code, c.what).toBe('storage_corrupt')
        outcomes.push('503')
      } else {
        expect(res.status, c.what).toBe(200)
        await expect(res.text(), c.what).rejects.toThrow()
        outcomes.push('aborted')
      }
      await new Promise(resolve => setTimeout(resolve, 10))
      expect(logged.map(String).join('\n'), c.what).toContain(entry.key)
    }
    // The footer is read before the first byte of the body.
    expect(outcomes[0]).toBe('503')
  })
})

describe('a lake written before checksums', () => {
  it('still reads: the bundled sample (no page, tail, shard or root checksums) gives the rows its files hold', async () => {
    const dir = new URL('../../partitions-manifest/sample/', import.meta.url).pathname
    // The sample's root was rewritten with a checksum when dex/tokens was added; its logs partitions and shard were not.
    const sample = fsStore(dir)
    const rootBytes = (await sample.get(rootKey(DEVNET)))!.body
    const { crc, ...root } = JSON.parse(new TextDecoder().decode(rootBytes))
    expect(crc).toBeDefined()
    const store: ObjectStore = {
      ...sample,
      get: async (key, range) => {
        if (key !== rootKey(DEVNET) || range !== undefined) return sample.get(key, range)
        const body = new TextEncoder().encode(JSON.stringify(root))
        return { ...(await sample.get(key))!, body, size: body.length }
      },
    }
    for (const shard of root.datasets.logs.shards) expect(shard.length, 'a logs shard reference without checksum').toBe(7)
    const files: string[] = []
    for (const name of await readdir(join(dir, 'evm-31337/logs'), { recursive: true }))
      if (name.endsWith('.parquet') && !name.includes('by-')) files.push(join(dir, 'evm-31337/logs', name))
    let stored = 0
    for (const file of files) {
      const bytes = new Uint8Array(await readFile(file))
      const header = parquetHeader({ view: new DataView(bytes.buffer), offset: 4 })
      expect(header.crc, relative(dir, file)).toBeUndefined()
      stored += (await parquetReadObjects({ file: bytes.buffer, columns: ['block_number'] })).length
    }
    const result = await runQuery(
      { store, manifest: new ManifestReader(store) },
      { chain: DEVNET, dataset: logs, from: 0, to: 'latest', predicates: [], fields: [...logs.fields] },
    )
    const got = batchRows(await collect(result.batches))
    expect(got.length).toBe(stored)
    expect(got.length).toBe(root.datasets.logs.rows)
  })
})

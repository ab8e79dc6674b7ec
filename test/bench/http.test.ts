import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { benchHttp, benchQueries, countNewlines, duckdbTextColumns, matchingPageBytes } from '../../bench/lib/http.ts'
import { durableObjectsOf } from '../../scripts/dev/bundle.ts'
import { RARE, TRANSFER } from '../../bench/lib/lake.ts'
import { benchLake } from '../../bench/lib/lake.ts'

const root = join(import.meta.dirname, '..', '..')
let dir: string
let lake: Awaited<ReturnType<typeof benchLake>>

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'http-bench-'))
  lake = await benchLake({ dir, logs: 12_000, partitionBlocks: 10 })
}, 120_000)
afterAll(() => rm(dir, { recursive: true, force: true }))

const same = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && Buffer.from(a).equals(Buffer.from(b))

describe('countNewlines', () => {
  it('counts line feeds only', () => {
    expect(countNewlines(new TextEncoder().encode('a\nb\r\n\nc'))).toBe(3)
    expect(countNewlines(new Uint8Array(0))).toBe(0)
  })
})

describe('DuckDB text columns', () => {
  it('give the same CSV as the API for the same rows', async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api')
    const { serve } = await import('../../src/node/serve.ts')
    const { createApp } = await import('../../src/http/app.ts')
    const { parseUsers } = await import('../../src/api/auth.ts')
    const { ManifestReader } = await import('../../src/manifest/read.ts')
    const { fsStore } = await import('../../src/store/fs.ts')
    const store = fsStore(dir)
    const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers('u:p') })
    const server = await serve({ fetch: r => app.fetch(r) })
    const out = await mkdtemp(join(tmpdir(), 'http-bench-csv-'))
    try {
      const block = lake.from + 3
      const res = await fetch(`${server.url}/v1/api/logs?chains=ETH&from_block=${block}&to_block=${block}&format=csv`, {
        headers: { authorization: `Basic ${btoa('u:p')}` },
      })
      expect(res.status).toBe(200)
      const ours = await res.text()
      const instance = await DuckDBInstance.create(':memory:')
      const c = await instance.connect()
      const file = join(out, 'x.csv')
      await c.run(
        `COPY (SELECT ${duckdbTextColumns(
          logs.fields.filter(f => !f.extra),
          1,
        )} FROM (SELECT * FROM read_parquet([${lake.files.map(f => `'${f}'`).join(',')}]) WHERE block_number = ${block} ORDER BY log_index)) TO '${file}' (FORMAT csv, HEADER)`,
      )
      c.closeSync()
      instance.closeSync()
      const theirs = await readFile(file, 'utf8')
      expect(ours.split(/\r?\n/).filter(Boolean).length).toBeGreaterThan(1)
      expect(theirs.split(/\r?\n/).filter(Boolean)).toEqual(ours.split(/\r?\n/).filter(Boolean))
    } finally {
      await server.close()
      await rm(out, { recursive: true, force: true })
    }
  })
})

describe('matchingPageBytes', () => {
  it('counts pages only where the needle is, and nothing for an absent address', async () => {
    let total = 0
    let hits = 0
    for (const f of lake.files) {
      const buf = await readFile(f)
      total += buf.length
      const rows = await parquetReadObjects({
        file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer,
        columns: ['address', 'topic0'],
        utf8: false,
      })
      hits += rows.filter(r => same(r.address, RARE) && same(r.topic0, TRANSFER)).length
    }
    expect(hits).toBeGreaterThan(0)
    const fields = logs.fields.filter(f => !f.extra)
    const needed = await matchingPageBytes(lake.files, fields, RARE, TRANSFER)
    expect(needed).toBeGreaterThan(0)
    expect(needed).toBeLessThan(total)
    expect(await matchingPageBytes(lake.files, fields, new Uint8Array(20), TRANSFER)).toBe(0)
  })
})

describe('benchHttp', () => {
  it('measures every query through the Node server and agrees with DuckDB on the rows', async () => {
    const r = await benchHttp({ dir, root, runs: 1, exportRuns: 1, servers: ['node'] })
    expect(r.figures.map(f => f.name)).toEqual(benchQueries(lake.from, lake.to).map(q => q.name))
    for (const f of r.figures) {
      expect(f.rows).toBe(f.duckdbRows)
      expect(f.served.node!.ms).toBeGreaterThan(0)
      // A fresh server reads storage for every query; a warm one may answer a rare value from cached index slices alone.
      expect(f.coldRequests).toBeGreaterThan(0)
      expect(f.coldBytes).toBeGreaterThan(0)
      expect(f.coldRequests).toBeGreaterThanOrEqual(f.requests)
      // A fresh server reads the manifest root and shard first: never fewer rounds than a warm one.
      expect(f.coldRounds).toBeGreaterThanOrEqual(f.rounds)
    }
    const exports = r.figures.filter(f => f.name.startsWith('(c)'))
    for (const f of exports) expect(f.rows).toBe(lake.rows)
    expect(r.figures[1].rows).toBeLessThan(lake.rows)
    expect(r.manifestBytes).toBeGreaterThan(0)
  }, 240_000)
})

describe('altQueries', () => {
  it('runs the classes on values picked from the lake, every one matching rows and agreeing with DuckDB', async () => {
    const r = await benchHttp({ dir, root, runs: 1, exportRuns: 1, servers: ['node'], values: 'alt' })
    const names = r.figures.map(f => f.name)
    expect(names.length).toBeGreaterThan(10)
    expect(names.every(n => n.startsWith('alt: '))).toBe(true)
    expect(names.some(n => n.startsWith('(a)') || n.startsWith('(c)'))).toBe(false)
    for (const f of r.figures) {
      expect(f.rows).toBeGreaterThan(0)
      expect(f.rows).toBe(f.duckdbRows)
    }
    // other values than the planted ones: none of the planted queries' strings
    const planted = new Set(benchQueries(lake.from, lake.to).map(q => q.duckdb.sql))
    expect(r.figures.filter(f => planted.has(f.duckdbSql)).map(f => f.name)).toEqual([])
    expect(r.neededBytesA).toBeUndefined()
  }, 240_000)
})

describe('durableObjectsOf', () => {
  it('reads every Durable Object binding of a wrangler.toml, and nothing else', () => {
    const toml = [
      '[[r2_buckets]]',
      'binding = "LAKE"',
      '',
      '[[durable_objects.bindings]]',
      'name = "LIVE"',
      'class_name = "LiveChainObject"',
      '',
      '[[durable_objects.bindings]]',
      'name = "OTHER"',
      'class_name = "Other"',
      '',
      '[[migrations]]',
      'tag = "v1"',
    ].join('\n')
    expect(durableObjectsOf(toml)).toEqual({ LIVE: 'LiveChainObject', OTHER: 'Other' })
    expect(durableObjectsOf('[[r2_buckets]]\nbinding = "LAKE"\n')).toEqual({})
  })
})

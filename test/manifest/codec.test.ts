import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { decodeRoot, decodeShard, encodeRoot, encodeShard } from '../../src/manifest/codec.ts'
import { MANIFEST_FORMAT, type ManifestShard, type PartitionEntry } from '../../src/manifest/types.ts'

const schema = JSON.parse(readFileSync(new URL('../../partitions-manifest/manifest.schema.json', import.meta.url), 'utf8'))
const partitionSchema = schema.$defs.shard.properties.partitions.items

const withBlooms: PartitionEntry = {
  key: 'evm-1/logs/000000000000-000000000099-aaaaaaaaaaaaaaaa.parquet',
  from: 0,
  to: 99,
  rows: 20,
  bytes: 5000,
  tailOffset: 3000,
  footerOffset: 4200,
  blooms: { address: { offset: 3400, length: 300 }, topic0: { offset: 3700, length: 500 } },
  rowGroups: [{ from: 0, to: 99, rows: 20, offset: 4, length: 2996 }],
}
const { footerOffset: _f, blooms: _b, ...legacy } = withBlooms
const withLookup: PartitionEntry = {
  ...withBlooms,
  lookup: {
    column: 'address',
    key: 'evm-1/logs/by-address/000000000000-000000000099-bbbbbbbbbbbbbbbb.parquet',
    bytes: 4100,
    tailOffset: 3500,
  },
}

const shardOf = (partitions: PartitionEntry[]): ManifestShard => ({
  format: MANIFEST_FORMAT,
  chain: { family: 'evm', id: 1, code: 'ETH' },
  dataset: 'logs',
  index: 0,
  generation: 1,
  partitions,
})

describe('shard codec', () => {
  it('stores bloom spans as [offset, length] tuples and reads them back as objects', () => {
    const stored = JSON.parse(JSON.stringify(encodeShard(shardOf([withBlooms, legacy]))))
    expect(stored.partitions[0].blooms).toEqual({ address: [3400, 300], topic0: [3700, 500] })
    expect(stored.partitions[0].footerOffset).toBe(4200)
    expect(decodeShard(stored)).toEqual(shardOf([withBlooms, legacy]))
  })

  it('reads a partition written before bloom spans without them', () => {
    const stored = JSON.parse(JSON.stringify(encodeShard(shardOf([legacy]))))
    expect(stored.partitions[0]).not.toHaveProperty('blooms')
    expect(decodeShard(stored).partitions[0]).not.toHaveProperty('footerOffset')
  })

  it('writes only properties the JSON Schema declares, with tuples of the declared length', () => {
    const stored = JSON.parse(JSON.stringify(encodeShard(shardOf([withBlooms]))))
    const p = stored.partitions[0]
    expect(Object.keys(p).filter(k => !(k in partitionSchema.properties))).toEqual([])
    expect(partitionSchema.required.filter((k: string) => !(k in p))).toEqual([])
    const span = partitionSchema.properties.blooms.additionalProperties
    for (const tuple of Object.values(p.blooms) as number[][]) expect(tuple.length).toBe(span.minItems)
    expect(partitionSchema.dependentRequired).toEqual({ blooms: ['footerOffset'], footerOffset: ['blooms'] })
  })

  it('keeps a lookup copy as declared: an object with exactly the properties the schema lists', () => {
    const stored = JSON.parse(JSON.stringify(encodeShard(shardOf([withLookup, withBlooms]))))
    const lookup = stored.partitions[0].lookup
    const declared = partitionSchema.properties.lookup
    expect(Object.keys(stored.partitions[0]).filter(k => !(k in partitionSchema.properties))).toEqual([])
    // Every declared property but the checksum (absent in copies written before checksums).
    expect(Object.keys(lookup).sort()).toEqual(
      Object.keys(declared.properties)
        .filter(k => k !== 'tailCrc')
        .sort(),
    )
    expect(declared.required.slice().sort()).toEqual(Object.keys(lookup).sort())
    expect(declared.additionalProperties).toBe(false)
    const schemaSays = (k: string, v: unknown) =>
      declared.properties[k].$ref === '#/$defs/count' ? Number.isInteger(v) && (v as number) >= 0 : typeof v === declared.properties[k].type
    expect(Object.entries(lookup).filter(([k, v]) => !schemaSays(k, v))).toEqual([])
    expect(stored.partitions[1]).not.toHaveProperty('lookup')
    expect(decodeShard(stored)).toEqual(shardOf([withLookup, withBlooms]))
  })
})

describe('decodeRoot', () => {
  const stored = {
    format: MANIFEST_FORMAT,
    chain: { family: 'evm', id: 31337, code: 'DEVNET' },
    generation: 3,
    shardSpan: 100,
    updatedAt: '2026-01-01T00:00:00.000Z',
    datasets: {
      logs: {
        coverage: [
          [0, 99],
          [150, 219],
        ],
        rows: 30,
        bytes: 3000,
        shards: [
          [0, 3, 0, 99, 1, 10, 1000],
          [1, 3, 150, 199, 1, 10, 1000],
          [2, 3, 200, 219, 1, 10, 1000],
        ],
      },
    },
  }
  const damaged = (change: (d: any) => void) => {
    const copy = structuredClone(stored)
    change(copy.datasets.logs)
    return () => decodeRoot(copy as never)
  }

  it('reads a root whose numbers agree', () => {
    expect(decodeRoot(stored as never).datasets.logs.coverage).toEqual(stored.datasets.logs.coverage)
  })

  it('refuses a root whose coverage, rows, bytes or shards disagree', () => {
    expect(damaged(d => (d.coverage[1][1] = 500))).toThrow(/coverage does not match/)
    expect(damaged(d => (d.rows = 31))).toThrow(/sums of its shards/)
    expect(damaged(d => (d.shards[2][3] = 300))).toThrow(/outside its span/)
    expect(damaged(d => d.coverage.reverse())).toThrow(/sorted/)
  })
})

describe('checksums in the manifest', () => {
  const checked: PartitionEntry = {
    ...withLookup,
    blooms: { address: { offset: 3400, length: 300, crc: 4294967295 }, topic0: { offset: 3700, length: 500, crc: 7 } },
    indexCrc: 12345,
    footerCrc: 0,
    lookup: { ...withLookup.lookup!, tailCrc: 99 },
  }

  it('stores tail checksums as the schema declares them and reads them back', () => {
    const stored = JSON.parse(JSON.stringify(encodeShard(shardOf([checked, legacy]))))
    const p = stored.partitions[0]
    expect(p.blooms).toEqual({ address: [3400, 300, 4294967295], topic0: [3700, 500, 7] })
    expect(Object.keys(p).filter(k => !(k in partitionSchema.properties))).toEqual([])
    expect(Object.keys(p.lookup).filter(k => !(k in partitionSchema.properties.lookup.properties))).toEqual([])
    expect(partitionSchema.properties.blooms.additionalProperties.maxItems).toBe(3)
    expect(decodeShard(stored)).toEqual(shardOf([checked, legacy]))
  })

  it('writes a root with its own CRC-32 and each shard’s, and refuses one whose bytes changed', () => {
    const root = decodeRoot({
      format: MANIFEST_FORMAT,
      chain: { family: 'evm', id: 1, code: 'ETH' },
      generation: 2,
      shardSpan: 100,
      updatedAt: '2026-01-01T00:00:00.000Z',
      datasets: { logs: { coverage: [[0, 99]], rows: 20, bytes: 5000, shards: [[0, 2, 0, 99, 1, 20, 5000, 3735928559]] } },
    } as never)
    expect(root.datasets.logs.shards[0].crc).toBe(3735928559)
    const text = JSON.stringify(encodeRoot(root))
    const stored = JSON.parse(text)
    expect(Object.keys(stored).at(-1)).toBe('crc')
    expect(schema.$defs.root.properties.crc.type).toBe('integer')
    expect(decodeRoot(JSON.parse(text))).toEqual(root)
    expect(() => decodeRoot(JSON.parse(text.replace('"rows":20', '"rows":21').replace('"coverage"', '"coverage"')) as never)).toThrow(
      /sums of its shards|checksum/,
    )
    expect(() => decodeRoot(JSON.parse(text.replace('2026-01-01', '2026-01-02')) as never)).toThrow(/checksum/)
  })
})

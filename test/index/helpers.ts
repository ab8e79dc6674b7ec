/**
 * Test helpers for the value index: an in-memory ObjectStore that records its reads (how many,
 * and whether each started before any other finished: one round), and seeded synthetic
 * partitions with the exact truth of where each value lies.
 */
import type { PartitionEntry } from '../../src/manifest/types.ts'
import type { ByteRange, GetResult, ObjectInfo, ObjectStore, PutOptions } from '../../src/store/types.ts'
import type { PartitionInput } from '../../src/index/build.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'

export interface MemoryStore extends ObjectStore {
  objects: Map<string, Uint8Array>
  /** Keys of the gets since the last reset, in call order. */
  gets: string[]
  /** Per get since the last reset: how many gets had finished when it started (all 0: one round). */
  finishedBefore: number[]
  puts: number
  bytesPut: number
  reset(): void
}

/** An in-memory store whose gets finish a macrotask later, so sequential reads are visible as rounds. */
export function memoryStore(): MemoryStore {
  const objects = new Map<string, Uint8Array>()
  let finished = 0
  const info = (key: string, body: Uint8Array): ObjectInfo => ({ key, size: body.length, etag: String(body.length) })
  const store: MemoryStore = {
    objects,
    gets: [],
    finishedBefore: [],
    puts: 0,
    bytesPut: 0,
    reset() {
      store.gets = []
      store.finishedBefore = []
      store.puts = 0
      store.bytesPut = 0
      finished = 0
    },
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      store.gets.push(key)
      store.finishedBefore.push(finished)
      await new Promise(resolve => setImmediate(resolve))
      finished++
      const body = objects.get(key)
      if (!body) return null
      if (range) throw new Error('the index reads whole objects')
      return { ...info(key, body), body, offset: 0 }
    },
    async head(key: string) {
      const body = objects.get(key)
      return body ? info(key, body) : null
    },
    async put(key: string, body: Uint8Array, _options?: PutOptions) {
      store.puts++
      store.bytesPut += body.length
      objects.set(key, body.slice())
      return info(key, body)
    },
    async list(prefix: string) {
      return [...objects]
        .filter(([k]) => k.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, b]) => info(k, b))
    },
    async delete(key: string) {
      objects.delete(key)
    },
  }
  return store
}

export const hex = (b: Uint8Array) => Array.from(b, x => x.toString(16).padStart(2, '0')).join('')

/** A 20-byte address for a number: distinct numbers, distinct addresses. */
export function address(n: number): Uint8Array {
  const out = new Uint8Array(20)
  new DataView(out.buffer).setUint32(16, n)
  out[0] = 0xaa
  return out
}

export interface LakeShape {
  partitions: number
  /** Row groups per partition, or per partition p. */
  groups: number | ((p: number) => number)
  rows: number
  /** Distinct values per column: value i is `address(i)` (column a) or `address(1e6 + i)` (column b). */
  universe: number
  /** Values 0..hot-1 of column a appear in every row group. */
  hot?: number
  blocksPerPartition?: number
  firstBlock?: number
}

/** Where each value lies: value hex → set of `partitionKey#rowGroup`. */
export type Truth = Map<string, Set<string>>

export interface Lake {
  inputs: PartitionInput[]
  truth: Record<'a' | 'b', Truth>
}

const pad = (n: number) => String(n).padStart(12, '0')

/** A manifest entry shaped like the lake's: realistic key, offsets and row groups. */
export function entryOf(from: number, to: number, groups: number, rows: number, tag: string): PartitionEntry {
  const bytes = groups * rows * 90 + 50_000
  const blocksPerGroup = Math.max(1, Math.floor((to - from + 1) / groups))
  return {
    key: `evm-1/logs/${pad(from)}-${pad(to)}-${tag.padStart(16, '0').slice(-16)}.parquet`,
    from,
    to,
    rows: groups * rows,
    bytes,
    tailOffset: bytes - 50_000,
    footerOffset: bytes - 5_000,
    blooms: { address: { offset: bytes - 45_000, length: 20_000 }, topic0: { offset: bytes - 25_000, length: 20_000 } },
    rowGroups: Array.from({ length: groups }, (_, g) => ({
      from: Math.min(to, from + g * blocksPerGroup),
      to: g === groups - 1 ? to : Math.min(to, from + (g + 1) * blocksPerGroup - 1),
      rows,
      offset: 4 + g * rows * 90,
      length: rows * 90,
    })),
  }
}

/** Partitions with columns a and b of random values from a skewed universe, and the truth. */
export function randomLake(seed: number, shape: LakeShape): Lake {
  const r = mulberry32(seed)
  const span = shape.blocksPerPartition ?? 100
  const first = shape.firstBlock ?? 0
  const truth: Lake['truth'] = { a: new Map(), b: new Map() }
  const note = (t: Truth, v: Uint8Array, where: string) => {
    const k = hex(v)
    if (!t.has(k)) t.set(k, new Set())
    t.get(k)!.add(where)
  }
  const inputs: PartitionInput[] = []
  for (let p = 0; p < shape.partitions; p++) {
    const from = first + p * span
    const groups = typeof shape.groups === 'number' ? shape.groups : shape.groups(p)
    const entry = entryOf(from, from + span - 1, groups, shape.rows, `${seed}x${p}`)
    const rowGroups = Array.from({ length: groups }, (_, g) => {
      const a: (Uint8Array | null)[] = []
      const b: (Uint8Array | null)[] = []
      for (let i = 0; i < shape.rows; i++) {
        // skewed: squaring a uniform favours small numbers
        const va = i < (shape.hot ?? 0) ? address(i) : address(Math.floor(r() * r() * shape.universe))
        const vb = r() < 0.2 ? null : address(1e6 + Math.floor(r() * shape.universe))
        a.push(va)
        b.push(vb)
        note(truth.a, va, `${entry.key}#${g}`)
        if (vb) note(truth.b, vb, `${entry.key}#${g}`)
      }
      return { a, b }
    })
    inputs.push({ entry, rowGroups })
  }
  return { inputs, truth }
}

/** A lookup's candidates as `partitionKey#rowGroup` strings. */
export function candidateSet(partitions: readonly { entry: { key: string }; rowGroups: number[] }[]): Set<string> {
  return new Set(partitions.flatMap(p => p.rowGroups.map(g => `${p.entry.key}#${g}`)))
}

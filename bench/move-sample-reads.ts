/**
 * What the slice byte cap costs a reader (run H6 in BENCHMARKS.md):
 * `npx node bench/move-sample-reads.ts [lake dir] [chain code]` looks up every sender and
 * every entry function of a Move chain of a lake (default the bundled sample, APTOS) through
 * `runQuery` with the value index (every field but those inline rows leave out), cold (new manifest, tail and index caches), every read
 * +30 ms and at most 6 at once as in `npm run bench -- history`. Prints one JSON line per
 * column: values answered from inline rows and from partitions, with their reads, rounds and
 * bytes (mean and max). Run it on the sample before and after a change of caps
 * (`git archive <commit> partitions-manifest/sample | tar -x -C <dir>`).
 */
import { resolve } from 'node:path'
import { CHAINS } from '../src/chains/registry.ts'
import { moveTransactions } from '../src/datasets/move.ts'
import { semaphore } from '../src/ingest/rpc.ts'
import { IndexCache } from '../src/index/read.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import { runQuery } from '../src/query/engine.ts'
import { TailCache } from '../src/query/io.ts'
import type { QuerySpec } from '../src/query/types.ts'
import { fsStore } from '../src/store/fs.ts'
import type { ObjectStore } from '../src/store/types.ts'
import { batchRows, collect } from '../test/query/lake.ts'
import { recordingStore, rounds } from '../test/support/recording.ts'

const LATENCY_MS = 30
const CONNECTIONS = 6
const [dir = resolve(import.meta.dirname, '../partitions-manifest/sample'), code = 'APTOS'] = process.argv.slice(2)
const chain = CHAINS.find(c => c.code === code)!
const fs = fsStore(dir)
const field = (name: string) => moveTransactions.fields.find(f => f.name === name)!

function limited(store: ObjectStore, n: number): ObjectStore {
  const slot = semaphore(n)
  return { ...store, get: (key, range) => slot(() => store.get(key, range)) }
}

const all: QuerySpec = {
  chain,
  dataset: moveTransactions,
  from: 0,
  to: Number.MAX_SAFE_INTEGER,
  predicates: [],
  fields: moveTransactions.fields.filter(f => f.inline !== false),
}
const every = await runQuery({ store: fs, manifest: new ManifestReader(fs), noIndex: true }, all)
const rows = batchRows(await collect(every.batches))
const last = Number(rows.at(-1)!.version)

for (const name of ['sender', 'entry_function_id']) {
  // rows as plain values: bytes as 0x-hex text, turned back into bytes for the lookup
  const values = new Map<string, Uint8Array | string>()
  for (const r of rows) {
    const v = r[name] as string | null
    if (v !== null) values.set(v, name === 'sender' ? Uint8Array.from(Buffer.from(v.slice(2), 'hex')) : v)
  }
  const figures = { inline: [] as number[][], partitions: [] as number[][] }
  for (const v of values.values()) {
    const rec = recordingStore(fs, LATENCY_MS)
    const spec: QuerySpec = { ...all, to: last, predicates: [{ field: field(name), op: 'eq', values: [v] }] }
    const result = await runQuery(
      {
        store: limited(rec.store, CONNECTIONS),
        manifest: new ManifestReader(rec.store),
        scan: { tails: new TailCache() },
        index: new IndexCache(),
      },
      spec,
    )
    let n = 0
    for await (const b of result.batches) n += b.length
    const inline = (result.index?.rows ?? 0) > 0 && result.stats.partitionsRead === 0
    figures[inline ? 'inline' : 'partitions'].push([n, rec.reads.length, rounds(rec.reads), result.stats.bytesFetched])
  }
  const summary = (list: number[][]) => {
    const mean = (i: number) => +(list.reduce((s, x) => s + x[i], 0) / (list.length || 1)).toFixed(1)
    const max = (i: number) => Math.max(0, ...list.map(x => x[i]))
    return { values: list.length, rows: mean(0), reads: mean(1), readsMax: max(1), rounds: mean(2), roundsMax: max(2), bytes: mean(3) }
  }
  console.log(
    JSON.stringify({
      lake: dir,
      chain: code,
      column: name,
      fromInlineRows: summary(figures.inline),
      fromPartitions: summary(figures.partitions),
    }),
  )
}

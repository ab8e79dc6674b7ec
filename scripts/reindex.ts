/**
 * `npm run reindex -- --data <store-url> [--chain C]`: builds or rebuilds the value index of a
 * lake already written (every chain with a manifest in the store, or one), and publishes it.
 * Queries keep working meanwhile: until the new root is written they use the old index, or none.
 */
import { cliArgs } from './args.ts'
import { CHAINS, findChainAnyFamily } from '../src/chains/registry.ts'
import { DATASETS } from '../src/api/datasets.ts'
import { reindex } from '../src/ingest/reindex.ts'
import { rootKey } from '../src/manifest/keys.ts'
import { openStore } from '../src/store/open.ts'

const USAGE = `usage: npm run reindex -- --data <store-url> [--chain <code|chain id|name>]

  --data    the lake: a directory, file://…, or s3://bucket/prefix (as for ingest --out)
  --chain   only this chain (default: every chain with a manifest in the store)`

const values = cliArgs({ data: { type: 'string' }, chain: { type: 'string' } }, USAGE)
if (!values.data) {
  console.error(`error: --data is required\n${USAGE}`)
  process.exit(2)
}
const chain = values.chain === undefined ? undefined : findChainAnyFamily(values.chain)
if (values.chain !== undefined && !chain) {
  console.error(`error: unknown chain ${JSON.stringify(values.chain)}\n${USAGE}`)
  process.exit(2)
}
const store = await openStore(values.data)
const chains = chain
  ? [chain]
  : (await Promise.all(CHAINS.map(async c => ((await store.head(rootKey(c))) ? c : null)))).filter(c => c !== null)
if (chains.length === 0) {
  console.error(`error: no chain has a manifest in ${values.data}`)
  process.exit(1)
}
for (const c of chains) {
  // one storage once (Move transactions and decoded transactions share theirs)
  const datasets = [...new Map(DATASETS.filter(d => d.family === c.family).map(d => [d.storage, d])).values()]
  let last = 0
  const reports = await reindex({
    store,
    chain: c,
    datasets,
    onProgress: p => {
      if (Date.now() - last < 2000 && p.partitions < p.of) return
      last = Date.now()
      console.error(`${c.code} ${p.dataset}: ${p.partitions}/${p.of} partitions, ${p.rows} rows`)
    },
  })
  for (const r of reports) {
    const perMillion = r.rows ? ((r.bytes / r.rows) * 1e6) / 2 ** 20 : 0
    console.log(
      `${c.code} ${r.dataset}: ${r.partitions} partitions, ${r.rows} rows → ${r.segments} segments, ${(r.bytes / 2 ** 20).toFixed(2)} MiB (${perMillion.toFixed(1)} MiB per million rows) in ${(r.ms / 1000).toFixed(1)} s`,
    )
  }
}

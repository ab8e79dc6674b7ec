/**
 * `npx node scripts/move-sample.ts [--out <dir-or-store-url>] [--blocks N] [--replace]`
 *
 * Writes the synthetic Move-VM sample (scripts/dev/move-sample.ts) of every Move chain of the
 * registry (APTOS, MOVEMENT, MOVEMENT_TESTNET) into the store, by default the bundled
 * sample lake partitions-manifest/sample that `npm start` serves. Transactions are
 * signed with the SDK for each chain's id and ingested through the real Move ingest
 * path. Deterministic: a rerun finds everything published and writes nothing.
 * --replace first deletes the chain's objects (`move-<id>/…`), for a changed generator.
 */
import { cliArgs } from './args.ts'
import { chainKey, CHAINS } from '../src/chains/registry.ts'
import { ingestSample, SAMPLE_BLOCKS } from './dev/move-sample.ts'
import { openStore } from '../src/store/open.ts'

const values = cliArgs(
  {
    out: { type: 'string', default: 'partitions-manifest/sample' },
    blocks: { type: 'string', default: String(SAMPLE_BLOCKS) },
    replace: { type: 'boolean', default: false },
  },
  'usage: npx node scripts/move-sample.ts [--out <store-url>] [--blocks <n>] [--replace]',
)
const blocks = Number(values.blocks)
if (!Number.isInteger(blocks) || blocks < 1) {
  console.error(`--blocks must be a positive integer, got ${values.blocks}`)
  process.exit(2)
}

const store = openStore(values.out)
for (const chain of CHAINS.filter(c => c.family === 'move')) {
  if (values.replace) {
    const old = await store.list(`${chainKey(chain)}/`)
    for (const o of old) await store.delete(o.key)
    if (old.length) console.log(`[move-sample] ${chain.code}: deleted ${old.length} objects`)
  }
  const { report, stats } = await ingestSample(store, chain, blocks)
  console.log(
    `[move-sample] ${chain.code} (chain id ${chain.id}): versions ${report.from}-${report.to}, ${report.units} partitions written ` +
      `(${report.rows.move_transactions ?? 0} rows, ${report.bytes.move_transactions ?? 0} bytes), generation ${report.generation}; ` +
      `${stats.transactions} transactions read, ${stats.verified} hash-verified, ${stats.undecoded} calls undecoded (module not on chain)`,
  )
}

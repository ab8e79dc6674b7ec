/**
 * The head follower's view of a Move-VM node: a version is a "block" of the live
 * window. The window, the subscriptions' cursors and the stored partitions all key
 * Move data by version (a version is both `block_number` and `transaction_index`),
 * so one window unit per version keeps every cursor a version and every handover
 * exact. A unit's hash is the transaction's hash, its parent the previous version's.
 *
 * Rows come from the ingester's Move source (pages of at most 100 transactions,
 * ABIs cached in the store, hash-verified rows), fetched a range at a time and cut
 * into one batch per version. The datasets `transactions` and `transactions/decoded`
 * read the same storage, so the window holds it once (`moveTransactions`).
 *
 * Move chains have BFT finality: the source is `final`, so a node that goes back
 * below a delivered version or names another hash for it is an error of the node,
 * never a reorg (follower.ts).
 */
import { moveTransactions } from '../datasets/move.ts'
import { checkContiguous, MissingVersionError, moveSource, type MoveSourceOptions } from '../ingest/move-source.ts'
import { fullnodeClient, FullnodeError, type FullnodeClient } from '../move/rest.ts'
import { bytesToHex } from '../schema/hex.ts'
import type { FetchedBlock, LiveSource, SourceFactory } from './source.ts'
import type { BlockHeader } from './window.ts'
import { unpackBatch, type ColumnBatch } from '../columns/batch.ts'

/** The parent named by version 0: nothing comes before genesis. */
const GENESIS_PARENT = '0x' + '0'.repeat(64)

const hexOf = (v: unknown): string => (v instanceof Uint8Array ? bytesToHex(v) : String(v).toLowerCase())

/** Row `i` of a batch as a batch of its own. */
const rowAt = (batch: ColumnBatch, i: number): ColumnBatch => ({
  length: 1,
  columns: Object.fromEntries(Object.entries(batch.columns).map(([k, v]) => [k, [v[i]]])),
})

/** A LiveSource over an Aptos-style fullnode: one window unit per version. */
export function moveLiveSource(client: FullnodeClient, options: MoveSourceOptions): LiveSource {
  const ingest = moveSource(client, options)

  /** Version `v` with its parent, in one page request; null when the node does not have it. */
  async function headerAt(v: number): Promise<BlockHeader | null> {
    const start = Math.max(0, v - 1)
    const count = v - start + 1
    let page
    try {
      page = await client.transactions(start, count)
      checkContiguous(page, start, count)
    } catch (err) {
      // Above the ledger (400), pruned (404, 410) or a short page: the node has no such version.
      if ((err instanceof FullnodeError && [400, 404, 410].includes(err.status)) || err instanceof MissingVersionError) return null
      throw err
    }
    const tx = page[count - 1]
    return { number: v, hash: tx.hash.toLowerCase(), parentHash: v === 0 ? GENESIS_PARENT : page[0].hash.toLowerCase() }
  }

  return {
    datasets: [moveTransactions],
    final: true,
    async latest() {
      const v = await ingest.head()
      const header = await headerAt(v)
      if (!header) throw new Error(`the node reports ledger version ${v} but does not serve it`)
      return header
    },
    headers: numbers => Promise.all(numbers.map(headerAt)),
    async blocks(from, to) {
      const batch = unpackBatch((await ingest.fetch([from, to]))[moveTransactions.storage])
      const out: FetchedBlock[] = []
      if (batch.length !== to - from + 1) throw new Error(`versions ${from}-${to}: ${batch.length} rows fetched`)
      for (let v = from; v <= to; v++) {
        const rows = rowAt(batch, v - from)
        if (Number(rows.columns.version[0] as bigint) !== v)
          throw new Error(`versions ${from}-${to}: row ${v - from} is version ${rows.columns.version[0]}`)
        const parent = rows.columns.parent_transaction_hash[0]
        if (parent === null && v > 0)
          throw new Error(`version ${v}: the node does not serve version ${v - 1} (pruned?), so its parent hash is unknown`)
        const header = { number: v, hash: hexOf(rows.columns.hash[0]), parentHash: parent === null ? GENESIS_PARENT : hexOf(parent) }
        out.push({ header, batches: { [moveTransactions.storage]: rows } })
      }
      return out
    },
  }
}

/** Move-VM chains are followed through the fullnode REST API; the ABI cache lives in `store`. */
export const moveFollowed: SourceFactory = (f, store, client) => {
  if (!f.rest) throw new Error(`chain ${f.chain.code}: a Move-VM chain is followed through a fullnode REST URL`)
  return moveLiveSource(fullnodeClient({ url: f.rest, retries: client.retries, timeoutMs: client.timeoutMs }), { chain: f.chain, store })
}

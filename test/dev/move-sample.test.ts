import { afterAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import {
  Deserializer,
  Ed25519PublicKey,
  Ed25519Signature,
  generateSigningMessageForTransaction,
  RawTransaction,
  SimpleTransaction,
} from '@aptos-labs/ts-sdk'
import { CHAINS, chainKey } from '../../src/chains/registry.ts'
import { AbiCache } from '../../src/move/abi-cache.ts'
import { verifyUserTransaction } from '../../src/move/bcs.ts'
import type { RestUserTransaction } from '../../src/move/rest-types.ts'
import { ingestSample, SAMPLE_MODULES, sampleChain, sampleSpecOf } from '../../scripts/dev/move-sample.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ManifestRoot } from '../../src/manifest/types.ts'
import { readManifest, readRows } from '../ingest/fixtures.ts'

const MOVE_CHAINS = CHAINS.filter(c => c.family === 'move')
const SAMPLE_LAKE = resolve(import.meta.dirname, '../../partitions-manifest/sample')
const dirs: string[] = []
afterAll(() => dirs.forEach(d => rmSync(d, { recursive: true, force: true })))

describe('the synthetic Move sample', () => {
  it('covers the three Move chains of the registry', () => {
    expect(MOVE_CHAINS.map(c => c.code).sort()).toEqual(['APTOS', 'MOVEMENT', 'MOVEMENT_TESTNET'])
  })

  for (const chain of MOVE_CHAINS) {
    it(`signs ${chain.code} transactions with ed25519 for chain id ${chain.id}, and they hash as the ingester rebuilds them`, () => {
      const blocks = sampleChain(sampleSpecOf(chain), 20)
      const users = blocks.flatMap(b => b.transactions).filter((t): t is RestUserTransaction => t.type === 'user_transaction')
      expect(users.length).toBeGreaterThan(20)
      const abis = new AbiCache().add(SAMPLE_MODULES)
      for (const tx of users) {
        const check = verifyUserTransaction(tx, { abis, chainId: chain.id })
        if (!check.ok) throw new Error(check.reason)
        const raw = RawTransaction.deserialize(new Deserializer(check.raw.rawTransaction))
        expect(raw.chain_id.chainId).toBe(chain.id)
        // The signature verifies over the signing message of the raw transaction: a real signature, not filler.
        const sig = tx.signature as unknown as { public_key: string; signature: string }
        const message = generateSigningMessageForTransaction(new SimpleTransaction(raw))
        expect(new Ed25519PublicKey(sig.public_key).verifySignature({ message, signature: new Ed25519Signature(sig.signature) })).toBe(true)
        // Signed for another chain, the same transaction would hash differently: the chain id is inside.
        const other = verifyUserTransaction(tx, { abis, chainId: chain.id + 1 })
        expect(other.ok).toBe(false)
      }
      const functions = new Set(users.map(t => (t.payload as { function: string }).function))
      expect(functions).toEqual(
        new Set([
          '0x1::aptos_account::transfer',
          '0x1::coin::transfer',
          '0x1::aptos_account::transfer_coins',
          '0x1::aptos_account::batch_transfer',
          '0xc0ffee::message::set_message',
          '0xbadc0de::mystery::poke',
        ]),
      )
    })
  }

  it('is deterministic per chain and different across chains', () => {
    const [a, b] = [sampleChain(sampleSpecOf(MOVE_CHAINS[0]), 5), sampleChain(sampleSpecOf(MOVE_CHAINS[0]), 5)]
    expect(b).toEqual(a)
    const c = sampleChain(sampleSpecOf(MOVE_CHAINS[1]), 5)
    expect(c[0].id).not.toBe(a[0].id)
    expect(c.flatMap(x => x.transactions).map(t => t.hash)).not.toEqual(a.flatMap(x => x.transactions).map(t => t.hash))
  })

  it('has blocks of a metadata transaction, user transactions and a state checkpoint, versions without gaps', () => {
    const blocks = sampleChain(sampleSpecOf(MOVE_CHAINS[0]), 30)
    let next = 0
    for (const b of blocks) {
      const types = b.transactions.map(t => t.type)
      expect(types[0]).toBe('block_metadata_transaction')
      expect(types.at(-1)).toBe('state_checkpoint_transaction')
      expect(types.slice(1, -1).every(t => t === 'user_transaction')).toBe(true)
      expect(b.transactions.map(t => Number(t.version))).toEqual(Array.from({ length: b.transactions.length }, (_, i) => next + i))
      next += b.transactions.length
    }
    expect(blocks.some(b => b.transactions.length === 2)).toBe(true)
  })

  it('is what partitions-manifest/sample holds: regenerated, the same partitions, rows and ABI cache', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'move-sample-'))
    dirs.push(dir)
    const fresh = fsStore(dir)
    const bundled = fsStore(SAMPLE_LAKE)
    for (const chain of MOVE_CHAINS) {
      const { stats, report } = await ingestSample(fresh, chain)
      expect(stats.verified).toBe(stats.transactions)
      expect(stats.undecoded).toBeGreaterThan(0)
      const expected = (await readManifest(fresh, chain))!
      const got = await readManifest(bundled, chain)
      expect(got, `${chain.code}: run \`npx node scripts/move-sample.ts\``).not.toBeNull()
      // Retired index segments carry the time of the run that retired them: compared without them.
      expect(withoutRetired(got!.datasets)).toEqual(withoutRetired(expected.datasets))
      const keys = async (store: typeof fresh) =>
        (await store.list(`${chainKey(chain)}/`)).filter(o => !o.key.includes('/manifest/')).map(o => [o.key, o.size])
      expect(await keys(bundled)).toEqual(await keys(fresh))
      const rows = await readRows(bundled, chain, 'move_transactions')
      expect(rows.length).toBe(report.rows.move_transactions)
      expect(rows.length).toBeLessThan(400)
      expect(rows.filter(r => r.kind === 'UserTransaction').every(r => r.tx_chain_id === BigInt(chain.id))).toBe(true)
    }
  })
})

/** The datasets of a root without their retired index segments (`since` is the generating run's clock). */
function withoutRetired(datasets: ManifestRoot['datasets']): ManifestRoot['datasets'] {
  return Object.fromEntries(
    Object.entries(datasets).map(([name, d]) => [name, d.index ? { ...d, index: { segments: d.index.segments } } : d]),
  )
}

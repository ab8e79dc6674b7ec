/**
 * dex/tokens at ingest, against anvil running the devnet workload's real tokens (the npm
 * ERC20 and WETH9 builds) plus two small contracts deployed here: an MKR-style token whose
 * `symbol()` and `name()` return `bytes32`, and one whose every call reverts. A v2 pair of
 * the two makes the DEX rows name them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { erc20Abi, getContractAddress, stringToHex, type Address, type Hex } from 'viem'
import { findChain } from '../../src/chains/registry.ts'
import { dexTokens } from '../../src/datasets/dex.ts'
import { tokenCacheKey } from '../../src/ingest/dex.ts'
import { chainRefOf, runIngest } from '../../src/ingest/run.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { startAnvil, type Anvil } from '../../scripts/dev/devnet/anvil.ts'
import { mineBlock } from '../../scripts/dev/devnet/blocks.ts'
import { callData } from '../../scripts/dev/devnet/contracts.ts'
import { setupWorkload, type WorkloadContext } from '../../scripts/dev/devnet/workload.ts'
import { readRows } from './fixtures.ts'

/**
 * Runtime code: `decimals()` (0x313ce567) returns 18; any other call returns the bytes32
 * "MKR" (as MKR's `symbol()` and `name()` do).
 */
const MKR_RUNTIME =
  '60003560e01c8063313ce56714603a57507f' + stringToHex('MKR', { size: 32 }).slice(2) + '60005260206000f3' + '5b601260005260206000f3'
/** Runtime code: REVERT(0, 0) on every call. */
const REVERT_RUNTIME = '60006000fd'
/** Init code returning `runtime` as the contract's code. */
const deployment = (runtime: string): Hex => {
  const length = runtime.length / 2
  if (length > 0xff) throw new Error('runtime too long for this init code')
  return `0x60${length.toString(16).padStart(2, '0')}80600b6000396000f3${runtime}`
}

const chain = findChain('evm', 'DEVNET')!
const DEVNET = chainRefOf(chain)
const hex = (v: unknown): string => '0x' + Buffer.from(v as Uint8Array).toString('hex')

let anvil: Anvil
let ctx: WorkloadContext
let mkr: Address
let reverter: Address
let dir: string
let store: ObjectStore

beforeAll(async () => {
  anvil = await startAnvil()
  ctx = await setupWorkload(anvil.url)
  const { dev } = ctx
  const from = dev.accounts[0].address
  ;[mkr, reverter] = [0, 1].map(i => getContractAddress({ from, nonce: BigInt(dev.nonces[0] + i) }))
  await mineBlock(dev, [
    { from: 0, data: deployment(MKR_RUNTIME), gas: 200_000n },
    { from: 0, data: deployment(REVERT_RUNTIME), gas: 200_000n },
  ])
  await mineBlock(dev, [{ from: 0, to: ctx.contracts.v2Factory, data: callData('UniswapV2Factory', 'createPair', [mkr, reverter]) }])
  dir = mkdtempSync(join(tmpdir(), 'ingest-dex-tokens-'))
  store = fsStore(dir)
}, 120_000)

afterAll(async () => {
  await anvil?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('dex/tokens at ingest', () => {
  it('holds each token its DEX rows name, with what its getters answer, bytes32 and reverts included', async () => {
    await runIngest({ chain, rpcUrl: anvil.url, from: 0, to: 'latest', store, partitionBlocks: 4 })
    const rows = (await readRows(store, DEVNET, dexTokens.storage)).map(r => ({
      block_number: r.block_number as bigint,
      address: hex(r.address),
      symbol: r.symbol,
      name: r.name,
      decimals: r.decimals,
    }))
    const client = ctx.dev.client
    const erc20 = [...ctx.contracts.tokens.map(t => t.address), ctx.contracts.weth]
    const want = new Map<string, { symbol: unknown; name: unknown; decimals: unknown }>()
    for (const token of erc20) {
      const read = (functionName: 'symbol' | 'name' | 'decimals') => client.readContract({ address: token, abi: erc20Abi, functionName })
      want.set(token.toLowerCase(), { symbol: await read('symbol'), name: await read('name'), decimals: BigInt(await read('decimals')) })
    }
    want.set(mkr.toLowerCase(), { symbol: 'MKR', name: 'MKR', decimals: 18n })
    want.set(reverter.toLowerCase(), { symbol: null, name: null, decimals: null })
    expect(want.get(ctx.contracts.weth.toLowerCase())).toEqual({ symbol: 'WETH', name: 'Wrapped Ether', decimals: 18n })

    // Each token once per ingest unit that names it (units of 4 blocks here), at the first block naming it.
    const units = new Map<string, bigint[]>()
    for (const r of rows) {
      expect(want.get(r.address), r.address).toEqual({ symbol: r.symbol, name: r.name, decimals: r.decimals })
      const unit = r.block_number / 4n
      const seen = units.get(r.address) ?? []
      expect(seen, `${r.address} twice in unit ${unit}`).not.toContain(unit)
      units.set(r.address, [...seen, unit])
    }
    expect([...units.keys()].sort()).toEqual([...want.keys()].sort())

    // Rows in (block_number, address) order, and the answers cached: reverts too.
    const keys = rows.map(r => `${String(r.block_number).padStart(8, '0')}:${r.address}`)
    expect(keys).toEqual([...keys].sort())
    for (const token of want.keys()) expect(await store.head(tokenCacheKey(DEVNET, token as Hex)), token).not.toBeNull()
  })
})

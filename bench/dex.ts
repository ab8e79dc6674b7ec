/**
 * `npm run bench -- dex`: the DEX datasets on ≥1 M synthetic swaps. Blocks of real-shaped
 * logs (the registry's own ABI items, encoded with viem) on the devnet's registered v2 and
 * v3 factories, so every pool verifies by CREATE2: v2 swaps with their Sync, v3 swaps, and
 * unrelated ERC-20 transfers between them. Measures decoding at ingest (scan → decode →
 * column batches) in rows/s, Parquet writing of dex/swaps, and three queries over the
 * resulting lake: one pool's swaps, the swaps of one token, one wallet's swaps.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeAbiParameters, encodeEventTopics, type Hex } from 'viem'
import { findChain } from '../src/chains/registry.ts'
import { dexSwaps } from '../src/datasets/dex.ts'
import type { DexLog } from '../src/dex/decode.ts'
import { FACTORIES, poolAddress } from '../src/dex/factories.ts'
import { decodeUnit, mergeScans, rpcPoolResolver, scanStep } from '../src/ingest/dex.ts'
import type { RawBlock } from '../src/ingest/evm-json.ts'
import { publish } from '../src/manifest/publish.ts'
import { ManifestReader } from '../src/manifest/read.ts'
import type { PartitionEntry } from '../src/manifest/types.ts'
import { putPartition } from '../src/parquet/put.ts'
import { runQuery } from '../src/query/engine.ts'
import { KINDS } from '../src/schema/kinds.ts'
import { fsStore } from '../src/store/fs.ts'
import { mulberry32 } from '../scripts/dev/random.ts'
import { int, ms, table } from './report.ts'
import type { Section } from './section.ts'

/** DEX_BENCH_SCALE (default 1) divides the sizes, for a quick run. */
const SCALE = Number(process.env.DEX_BENCH_SCALE ?? 1)
const SWAPS = 1_000_000 / SCALE
const BLOCKS = 10_000 / SCALE
const PARTITION = 1_000 / SCALE
const POOLS = 200
const WALLETS = 5_000

const hex = (n: number | bigint) => `0x${n.toString(16)}` as Hex
const addr = (i: number, tag: number) => `0x${tag.toString(16).padStart(8, '0')}${i.toString(16).padStart(32, '0')}` as Hex

const ABI = {
  v2Swap: {
    type: 'event',
    name: 'Swap',
    inputs: [
      { indexed: true, name: 'sender', type: 'address' },
      { indexed: false, name: 'amount0In', type: 'uint256' },
      { indexed: false, name: 'amount1In', type: 'uint256' },
      { indexed: false, name: 'amount0Out', type: 'uint256' },
      { indexed: false, name: 'amount1Out', type: 'uint256' },
      { indexed: true, name: 'to', type: 'address' },
    ],
  },
  sync: {
    type: 'event',
    name: 'Sync',
    inputs: [
      { indexed: false, name: 'reserve0', type: 'uint112' },
      { indexed: false, name: 'reserve1', type: 'uint112' },
    ],
  },
  v3Swap: {
    type: 'event',
    name: 'Swap',
    inputs: [
      { indexed: true, name: 'sender', type: 'address' },
      { indexed: true, name: 'recipient', type: 'address' },
      { indexed: false, name: 'amount0', type: 'int256' },
      { indexed: false, name: 'amount1', type: 'int256' },
      { indexed: false, name: 'sqrtPriceX96', type: 'uint160' },
      { indexed: false, name: 'liquidity', type: 'uint128' },
      { indexed: false, name: 'tick', type: 'int24' },
    ],
  },
} as const

interface Pool {
  address: Hex
  family: 'v2' | 'v3'
  token0: Hex
  token1: Hex
  fee: bigint | null
}

/** Pools of the devnet's registered factories, half v2 and half v3, over 50 tokens. */
function makePools(): Pool[] {
  const [v2, v3] = FACTORIES[31337]
  const pools: Pool[] = []
  for (let i = 0; i < POOLS; i++) {
    const a = addr(i % 50, 0x70c3)
    const b = addr((i * 7 + 1) % 50 === i % 50 ? (i + 1) % 50 : (i * 7 + 1) % 50, 0x70c3)
    const [token0, token1] = a < b ? [a, b] : [b, a]
    const v = i % 2 === 0
    const fee = v ? null : [500n, 3000n, 10000n][i % 3]
    const address = poolAddress(v ? v2 : v3, { token0, token1, fee })!
    pools.push({ address, family: v ? 'v2' : 'v3', token0, token1, fee })
  }
  return pools
}

/** Blocks `from`..`to` of the synthetic chain, as the ingester holds them (RawBlock: block + receipts); made per unit, as ingest fetches them. */
function makeBlocks(pools: readonly Pool[], r: () => number, from: number, to: number): RawBlock[] {
  const perBlock = SWAPS / BLOCKS
  const raws: RawBlock[] = []
  for (let n = from; n <= to; n++) {
    const logs: DexLog[] = []
    const transactions: { hash: Hex; from: Hex; to: Hex }[] = []
    for (let t = 0; t < perBlock; t++) {
      const pool = pools[Math.floor(r() * r() * POOLS)]
      const wallet = addr(Math.floor(r() * WALLETS), 0xa11e)
      const hash = `0x${n.toString(16).padStart(32, '0')}${t.toString(16).padStart(32, '0')}` as Hex
      transactions.push({ hash, from: wallet, to: addr(1, 0x2027) })
      const at = { transactionIndex: hex(t), transactionHash: hash }
      const push = (address: Hex, topics: Hex[], data: Hex) => logs.push({ address, topics, data, logIndex: hex(logs.length), ...at })
      const amountIn = BigInt(Math.floor(r() * 1e12)) * 1_000_000n
      const amountOut = (amountIn * 997n) / 1000n
      push(
        pool.token0,
        [...encodeEventTopics({ abi: [TRANSFER], eventName: 'Transfer', args: { from: wallet, to: pool.address } })] as Hex[],
        encodeAbiParameters([{ type: 'uint256' }], [amountIn]),
      )
      if (pool.family === 'v2') {
        push(
          pool.address,
          encodeEventTopics({ abi: [ABI.sync] }) as Hex[],
          encodeAbiParameters(ABI.sync.inputs, [10n ** 24n + amountIn, 10n ** 24n - amountOut]),
        )
        push(
          pool.address,
          encodeEventTopics({ abi: [ABI.v2Swap], args: { sender: addr(1, 0x2027), to: wallet } }) as Hex[],
          encodeAbiParameters(
            ABI.v2Swap.inputs.filter(i => !i.indexed),
            [amountIn, 0n, 0n, amountOut],
          ),
        )
      } else {
        push(
          pool.address,
          encodeEventTopics({ abi: [ABI.v3Swap], args: { sender: addr(1, 0x2027), recipient: wallet } }) as Hex[],
          encodeAbiParameters(
            ABI.v3Swap.inputs.filter(i => !i.indexed),
            [amountIn, -amountOut, 79228162514264337593543950336n + amountIn, 10n ** 20n, -5],
          ),
        )
      }
    }
    const block = { number: hex(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: hex(1_700_000_000 + 12 * n), transactions }
    raws.push({ block, receipts: [{ logs }] } as unknown as RawBlock)
  }
  return raws
}

const TRANSFER = {
  type: 'event',
  name: 'Transfer',
  inputs: [
    { indexed: true, name: 'from', type: 'address' },
    { indexed: true, name: 'to', type: 'address' },
    { indexed: false, name: 'value', type: 'uint256' },
  ],
} as const

export const dex: Section = {
  name: 'dex',
  title: 'DEX datasets: decode rate at ingest, Parquet writing, queries over ≥1 M swaps',
  slow: true,
  async run({ log }) {
    const pools = makePools()
    log(`${int(SWAPS)} swaps in ${int(BLOCKS)} blocks over ${POOLS} pools`)
    const r = mulberry32(7)
    // The pools are known (as a cache filled by earlier units would know them): decoding, not calls, is measured.
    const known = new Map(pools.map(p => [p.address, { token0: p.token0, token1: p.token1, fee: p.fee }]))
    const resolver = rpcPoolResolver(null, null, { family: 'evm', id: 31337 })
    await resolver.add(known)

    const dir = await mkdtemp(join(tmpdir(), 'bench-dex-'))
    try {
      const store = fsStore(dir)
      const chain = findChain('evm', '31337')!
      const ref = { family: 'evm' as const, id: 31337, code: chain.code }
      let decodeMs = 0
      let writeMs = 0
      let rows = 0
      const entries: PartitionEntry[] = []
      for (let from = 1; from <= BLOCKS; from += PARTITION) {
        const unit = makeBlocks(pools, r, from, from + PARTITION - 1)
        let t = performance.now()
        const scan = mergeScans(31337, [scanStep(31337, unit)])
        const scanMs = performance.now() - t
        const batches = await decodeUnit(scan, resolver, new Map())
        decodeMs += performance.now() - t
        log(`scan ${ms(scanMs)} ms, decode ${ms(performance.now() - t - scanMs)} ms`)
        rows += batches[dexSwaps.storage].length
        t = performance.now()
        const { entry } = await putPartition(store, ref, dexSwaps, batches[dexSwaps.storage], { from, to: from + PARTITION - 1 })
        writeMs += performance.now() - t
        entries.push(entry)
        log(`blocks ${from}-${from + PARTITION - 1}: ${int(rows)} swaps`)
      }
      await publish(store, ref, { [dexSwaps.storage]: entries })
      const lakeBytes = entries.reduce((n, e) => n + e.bytes, 0)

      const manifest = new ManifestReader(store)
      const field = (name: string) => dexSwaps.fields.find(f => f.name === name)!
      const hot = pools[0]
      const queries = [
        {
          name: "one pool's swaps",
          filter: `pool=${hot.address}`,
          preds: [{ field: field('pool'), op: 'eq' as const, values: [KINDS.address.parse(hot.address)] }],
        },
        {
          name: 'swaps of one token (as token0)',
          filter: `token0=${hot.token0}`,
          preds: [{ field: field('token0'), op: 'eq' as const, values: [KINDS.address.parse(hot.token0)] }],
        },
        {
          name: "one wallet's swaps",
          filter: `tx_from=${addr(42, 0xa11e)}`,
          preds: [{ field: field('tx_from'), op: 'eq' as const, values: [KINDS.address.parse(addr(42, 0xa11e))] }],
        },
      ]
      const results = []
      for (const q of queries) {
        const t = performance.now()
        const res = await runQuery(
          { store, manifest },
          { chain, dataset: dexSwaps, from: 1, to: BLOCKS, predicates: q.preds, fields: dexSwaps.fields.filter(f => !f.extra) },
        )
        let n = 0
        for await (const b of res.batches) n += b.length
        results.push([q.name, `\`${q.filter}\``, int(n), res.stats.rowGroupsRead, int(res.stats.bytesFetched), ms(performance.now() - t)])
      }
      return [
        table(
          ['swaps', 'blocks', 'decode ms', 'decoded rows/s', 'write ms', 'written rows/s', 'dex/swaps bytes', 'B/swap'],
          [
            [
              int(rows),
              int(BLOCKS),
              ms(decodeMs),
              int((rows / decodeMs) * 1000),
              ms(writeMs),
              int((rows / writeMs) * 1000),
              int(lakeBytes),
              (lakeBytes / rows).toFixed(1),
            ],
          ],
        ),
        '',
        table(['query', 'filter', 'rows', 'row groups read', 'bytes fetched', 'ms'], results),
        '',
        'Decoding covers scanning every log (a transfer and, for v2, a Sync per swap), CREATE2 verification, price text and column batches; pools are known to the resolver, as after their creation.',
      ].join('\n')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  },
}

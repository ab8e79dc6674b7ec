/**
 * Where the ingester's CPU goes, per mainnet block: the one-thread pipeline of
 * `npm run bench -- ingest` (WebAssembly keccak, node:http, xxhash-wasm bloom hash, every
 * dataset written) over the recorded blocks served by shared/tools/replay-evm.mjs, run
 * under V8's sampling profiler, then each sample counted in the innermost category of its
 * stack (shares of the samples that are not idle or module loading).
 *
 *   npx node --cpu-prof --cpu-prof-dir=/tmp/prof scripts/dev/ingest-profile.ts [rounds] [blocks a unit, default 25]
 *   npx node scripts/dev/ingest-profile.ts --report /tmp/prof/<file>.cpuprofile
 *
 * The first prints the ingester's CPU ms a block (the profiler's own cost included); the
 * second the table, and the functions with the most samples of their own.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { benchUnitRate, repeatSource } from '../../bench/lib/ingest.ts'
import { DEX_DATASETS, dexTokens } from '../../src/datasets/dex.ts'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { evmSource } from '../../src/ingest/evm-source.ts'
import { nodeHttpFetch } from '../../src/ingest/http-fetch.ts'
import { wasmKeccak256 } from '../../src/ingest/keccak.ts'
import { createRpcClient } from '../../src/ingest/rpc.ts'
import { localBuilder } from '../../src/ingest/unit.ts'
import type { ChainRef } from '../../src/manifest/types.ts'
import { wasmXxhash64 } from '../../src/parquet/bloom.ts'
import { fsStore } from '../../src/store/fs.ts'

const BLOCKS = [17000000, 18000000, 18500000]
const ETH: ChainRef = { family: 'evm', id: 1, code: 'ETH' }

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[]
  samples: number[]
}

/** Categories, first match wins at each frame from the innermost outwards; `null` leaves the sample out. */
const CATEGORIES: [string | null, (f: CallFrame) => boolean][] = [
  ['garbage collection', f => f.functionName === '(garbage collector)'],
  [null, f => f.functionName === '(idle)' || /node:internal\/modules|amaro/.test(f.url)],
  ['keccak (hash-wasm)', f => /hash-wasm|ingest\/keccak\.ts/.test(f.url)],
  ['JSON.parse of the responses (rpc.ts `send`)', f => /ingest\/rpc\.ts$/.test(f.url) && f.functionName === 'send'],
  [
    'HTTP (node:http, sockets)',
    f => /http-fetch\.ts$|^node:(_http|http|net|stream|events|internal\/(streams?|stream_base|http|net))/.test(f.url),
  ],
  ['verification without keccak (RLP, tries, hex)', f => /ingest\/(verify|rlp|trie)\.ts$/.test(f.url)],
  ['Parquet: dictionary search', f => /hyparquet-writer\/src\/dictionary\.js$/.test(f.url)],
  ['Parquet: bloom filters', f => /parquet\/bloom\.ts$|xxhash-wasm|hyparquet-writer\/src\/bloom\.js$/.test(f.url)],
  ['Parquet: the rest (pages, statistics, thrift, snappy, lookup copies)', f => /hyparquet|hysnappy|src\/parquet\//.test(f.url)],
  ['value index: inline rows (index/rows.ts)', f => /src\/index\/rows\.ts$/.test(f.url)],
  ['value index: the rest (postings, buckets, sealing)', f => /src\/index\//.test(f.url)],
  ['DEX scan and decode', f => /src\/dex\/|ingest\/(dex|positions)\.ts$/.test(f.url)],
  ['transform (rows, batches)', f => /ingest\/(transform|batch)\.ts$/.test(f.url)],
  ['store puts', f => /store\/fs\.ts$|^node:(fs|internal\/fs)/.test(f.url)],
]

function report(profile: Profile): string {
  const byId = new Map(profile.nodes.map(n => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const counts = new Map<string, number>()
  const own = new Map<string, number>()
  for (const sample of profile.samples) {
    let category: string | null | undefined
    for (let id: number | undefined = sample; id !== undefined && category === undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame
      category = CATEGORIES.find(([, test]) => test(frame))?.[0]
    }
    if (category === null) continue
    const name = category ?? 'other (the loop, promises, native code outside these)'
    counts.set(name, (counts.get(name) ?? 0) + 1)
    const f = byId.get(sample)!.callFrame
    const where = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`
    own.set(where, (own.get(where) ?? 0) + 1)
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0)
  const pct = (n: number) => `${((100 * n) / total).toFixed(1)} %`
  const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `| ${k} | ${pct(n)} |`)
  const top = [...own].sort((a, b) => b[1] - a[1]).slice(0, 25)
  return [
    `${total} samples counted`,
    '',
    '| | share |',
    '|---|---|',
    ...rows,
    '',
    'most samples of their own:',
    ...top.map(([k, n]) => `  ${pct(n).padStart(7)}  ${k}`),
  ].join('\n')
}

async function run(rounds: number, blocksPerUnit: number): Promise<void> {
  const tool = join(process.env.SHARED_DIR ?? join(import.meta.dirname, '..', '..', '..', 'shared'), 'tools', 'replay-evm.mjs')
  const node = spawn(process.execPath, [tool], { stdio: ['ignore', 'pipe', 'inherit'] })
  const dir = await mkdtemp(join(tmpdir(), 'ingest-profile-'))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: node.stdout }).once('line', line => resolve(line.replace(/^listening /, '')))
      node.once('exit', code => reject(new Error(`replay-evm.mjs exited with ${code}`)))
    })
    const rpc = createRpcClient(url, { concurrency: 4, fetch: nodeHttpFetch() })
    const source = repeatSource(evmSource(rpc, { keccak: await wasmKeccak256(), chain: { family: 'evm', id: ETH.id } }), blocksPerUnit)
    const builder = localBuilder(source, ETH, { bloomHash: await wasmXxhash64() })
    const storages = [...EVM_DATASETS, ...DEX_DATASETS, dexTokens].map(d => d.storage)
    const shape = { blocksPerUnit, store: fsStore(dir), concurrency: 2, storages }
    await benchUnitRate(builder, BLOCKS, { ...shape, rounds: 1 })
    const f = await benchUnitRate(builder, BLOCKS, { ...shape, rounds })
    console.log(`${f.blocks} blocks after a warm-up of ${BLOCKS.length * blocksPerUnit}: ${f.cpuMsPerBlock.toFixed(1)} ms of CPU a block`)
  } finally {
    node.kill()
    await rm(dir, { recursive: true, force: true })
  }
}

const args = process.argv.slice(2)
if (args[0] === '--report') console.log(report(JSON.parse(await readFile(args[1], 'utf8')) as Profile))
else await run(Number(args[0] ?? 4), Number(args[1] ?? 25))

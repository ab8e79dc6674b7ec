/**
 * `npm run redecode -- --data <store> [--chain C] [--from N] [--to N] [--rpc URL]`: rebuilds the
 * DEX datasets (dex/pools, swaps, liquidity, positions) of an EVM chain from the logs and
 * transactions already in the lake (src/ingest/redecode.ts). Without --chain, the lake's only
 * EVM chain. --rpc names a node for pools created before the lake's range that the store's
 * pool cache does not know; without it their token columns are null.
 */
import { cliArgs } from './args.ts'
import { CHAINS, findChain } from '../src/chains/registry.ts'
import { redecode } from '../src/ingest/redecode.ts'
import { createRpcClient } from '../src/ingest/rpc.ts'
import { openStore } from '../src/store/open.ts'

const USAGE = 'usage: npm run redecode -- --data <store-url> [--chain <code|id>] [--from <block>] [--to <block>] [--rpc <url>]'
const values = cliArgs(
  { data: { type: 'string' }, chain: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, rpc: { type: 'string' } },
  USAGE,
)

function fail(message: string): never {
  console.error(`error: ${message}\n${USAGE}`)
  process.exit(2)
}

function block(text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined
  if (!/^[0-9]+$/.test(text)) fail(`--${name} must be a block number, got "${text}"`)
  return Number(text)
}

if (!values.data) fail('--data is required')
const store = openStore(values.data)
const from = block(values.from, 'from')
const to = block(values.to, 'to')
if (from !== undefined && to !== undefined && from > to) fail(`--from ${from} is after --to ${to}`)

let chain = values.chain === undefined ? undefined : findChain('evm', values.chain)
if (values.chain !== undefined && !chain) fail(`unknown EVM chain "${values.chain}"`)
if (!chain) {
  const present = []
  for (const c of CHAINS.filter(c => c.family === 'evm')) if (await store.head(`evm-${c.id}/manifest/root.json`)) present.push(c)
  if (present.length !== 1)
    fail(`the lake holds ${present.length} EVM chains (${present.map(c => c.code).join(', ') || 'none'}): name one with --chain`)
  chain = present[0]
}

const report = await redecode({
  chain,
  store,
  from,
  to,
  rpc: values.rpc ? createRpcClient(values.rpc) : undefined,
  log: line => console.log(`[redecode ${chain.code}] ${line}`),
})
console.log(JSON.stringify({ chain: chain.code, ...report }))

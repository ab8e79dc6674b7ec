import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findChain } from '../../src/chains/registry.ts'
import { ingestCommand, parseIngestArgs } from '../../src/ingest/cli.ts'
import { moveSource } from '../../src/ingest/move-source.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { fullnodeClient } from '../../src/move/rest.ts'
import { fsStore } from '../../src/store/fs.ts'
import { openStore } from '../../src/store/open.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { startReplay, type Replay } from '../move/replay.ts'
import { partitionsOf, readManifest, readRows, view } from './fixtures.ts'
import { runIngestScript, usageError } from './script.ts'

const APTOS = findChain('move', 'APTOS')!
/** Eight recorded mainnet versions within 700,000 versions of each other. */
const CLUSTER = [2381742315, 2382373978] as const

const dirs: string[] = []
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'move-cli-'))
  dirs.push(d)
  return d
}
afterAll(() => dirs.forEach(d => rmSync(d, { recursive: true, force: true })))

let replay: Replay
beforeAll(async () => {
  replay = await startReplay('mainnet')
})
afterAll(() => replay?.stop())

describe('parseIngestArgs with --rest', () => {
  const rest = (chain: string, ...more: string[]) => [
    '--chain',
    chain,
    '--rest',
    'http://127.0.0.1:8080',
    '--from',
    '0',
    '--to',
    '9',
    '--out',
    '/tmp/x',
    ...more,
  ]

  it('resolves a chain id within the Move-VM family, codes and names in any family', () => {
    expect(parseIngestArgs(rest('1')).chain.code).toBe('APTOS')
    expect(parseIngestArgs(rest('126')).chain.code).toBe('MOVEMENT')
    expect(parseIngestArgs(rest('250')).chain.code).toBe('MOVEMENT_TESTNET')
    expect(parseIngestArgs(rest('movement-testnet')).chain.code).toBe('MOVEMENT_TESTNET')
    expect(parseIngestArgs(rest('aptos')).chain.code).toBe('APTOS')
    // Without --rest, 1 is still Ethereum.
    expect(parseIngestArgs(['--chain', '1', '--rpc', 'http://x', '--from', '0', '--to', '1', '--out', '/tmp/x']).chain.code).toBe('ETH')
  })

  it('reads --sparse, and says what is wrong', () => {
    expect(parseIngestArgs(rest('1', '--sparse')).sparse).toBe(true)
    expect(parseIngestArgs(rest('1')).sparse).toBeUndefined()
    expect(usageError(rest('ETH'))).toBe('--rest is for Move-VM chains; ETH is an EVM chain, use --rpc')
    expect(usageError(['--chain', 'ETH', '--rpc', 'http://x', '--from', '0', '--to', '1', '--out', '/tmp/x', '--sparse'])).toBe(
      '--sparse is for Move-VM sources (--rest); ETH is an EVM chain',
    )
    expect(usageError(['--chain', 'APTOS', '--rest', 'localhost:8080', '--from', '0', '--to', '1', '--out', '/tmp/x'])).toBe(
      '--rest must be an http(s) URL, got "localhost:8080"',
    )
    expect(usageError(['--chain', 'APTOS', '--rpc', 'http://x', '--from', '0', '--to', '1', '--out', '/tmp/x'])).toBe(
      '--rest is required for APTOS (a Move-VM chain)',
    )
    expect(usageError(rest('dogecoin'))).toBe('unknown chain "dogecoin"')
  })
})

/** Everything a reader of the lake sees: coverage, partitions and rows. */
async function snapshot(store: ObjectStore) {
  const root = (await readManifest(store, APTOS))!
  return {
    coverage: root.datasets.move_transactions.coverage,
    partitions: (await partitionsOf(store, APTOS, 'move_transactions')).map(p => ({
      key: p.key,
      from: p.from,
      to: p.to,
      rows: p.rows,
      bytes: p.bytes,
    })),
    rows: (await readRows(store, APTOS, 'move_transactions')).map(view),
  }
}

describe('npm run ingest --rest against the recorded mainnet (replay node)', () => {
  it('ingests a sparse range: one JSON line per unit, the Move summary, the final report; exit code 0', async () => {
    const dir = tempDir()
    const out: string[] = []
    let err = ''
    const argv = [
      '--chain',
      '1',
      '--rest',
      replay.url,
      '--sparse',
      '--from',
      String(CLUSTER[0]),
      '--to',
      String(CLUSTER[1]),
      '--out',
      dir,
      '--partition-blocks',
      '100000',
    ]
    const code = await ingestCommand(argv, {
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: (s: string) => (err += s) },
      openStore,
    })
    expect(err).toBe('')
    expect(code).toBe(0)
    const records = out
      .join('')
      .trim()
      .split('\n')
      .map(l => JSON.parse(l))
    const published = records.filter(r => r.event === 'published')
    // Units are the 100,000-version windows the range meets.
    expect(published.length).toBe(Math.floor(CLUSTER[1] / 100_000) - Math.floor(CLUSTER[0] / 100_000) + 1)
    const logs: string[] = records.filter(r => r.event === 'log').map(r => r.message)
    const summary = logs.find(m => m.startsWith('move: '))!
    expect(summary).toMatch(
      /^move: 8 transactions, 8 hash-verified, 0 stored unverified, \d+ call\(s\) not decoded.*; ABIs: \d+ fetched from the node, 0 from the store$/,
    )
    // Each unit with undecoded calls said so as it went; the summary counts them all.
    const perUnit = logs.map(m => /^versions \d+-\d+: (\d+) call\(s\) not decoded/.exec(m)).filter(m => m !== null)
    expect(perUnit.length).toBeGreaterThan(0)
    expect(Number(/(\d+) call\(s\) not decoded/.exec(summary)![1])).toBe(perUnit.reduce((n, m) => n + Number(m[1]), 0))
    expect(records.at(-1)).toMatchObject({
      event: 'done',
      chain: 'APTOS',
      from: CLUSTER[0],
      to: CLUSTER[1],
      rows: { move_transactions: 8 },
    })
    expect((await readRows(fsStore(dir), APTOS, 'move_transactions')).length).toBe(8)
  })

  it('fails with exit code 1 naming the missing version when the source skips one without --sparse', async () => {
    let err = ''
    const argv = [
      '--chain',
      'APTOS',
      '--rest',
      replay.url,
      '--from',
      String(CLUSTER[0]),
      '--to',
      String(CLUSTER[0] + 5),
      '--out',
      tempDir(),
    ]
    const code = await ingestCommand(argv, { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) }, openStore })
    expect(code).toBe(1)
    expect(err).toMatch(new RegExp(`^error: version ${CLUSTER[0] + 1} is missing: `))
  })

  const run = runIngestScript

  it('killed mid-way and run again, ends with the same manifest and rows as an uninterrupted run', async () => {
    // A proxy that never answers pages from version 2382000000 on: the ingester cannot get past them.
    const stall = 2_382_000_000
    const proxy: Server = createServer(async (req, res) => {
      const start = /[?&]start=(\d+)/.exec(req.url ?? '')
      if (req.url?.startsWith('/v1/transactions?') && start && Number(start[1]) >= stall) return
      const upstream = await fetch(replay.url + req.url)
      res.writeHead(upstream.status, { 'content-type': 'application/json' })
      res.end(await upstream.text())
    })
    await new Promise<void>(r => proxy.listen(0, '127.0.0.1', r))
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
    const dir = tempDir()
    const args = (rest: string) => [
      '--chain',
      'APTOS',
      '--rest',
      rest,
      '--sparse',
      '--from',
      String(CLUSTER[0]),
      '--to',
      String(CLUSTER[1]),
      '--out',
      dir,
      '--partition-blocks',
      '100000',
    ]
    try {
      const killed = await run(args(proxyUrl), (line, kill) => {
        if (JSON.parse(line).event === 'published') kill()
      })
      expect(killed.signal).toBe('SIGKILL')
    } finally {
      proxy.closeAllConnections()
      proxy.close()
    }
    const partial = (await readManifest(fsStore(dir), APTOS))!.datasets.move_transactions.coverage
    expect(partial.at(-1)![1]).toBeLessThan(stall)

    const rerun = await run(args(replay.url))
    expect(rerun.stderr).toBe('')
    expect(rerun.code).toBe(0)
    const reference = fsStore(tempDir())
    const source = moveSource(fullnodeClient({ url: replay.url }), { chain: APTOS, store: reference, sparse: true })
    await runIngest({ chain: APTOS, source, from: CLUSTER[0], to: CLUSTER[1], store: reference, partitionBlocks: 100_000 })
    const got = await snapshot(fsStore(dir))
    expect(got).toEqual(await snapshot(reference))
    expect(got.coverage).toEqual([[CLUSTER[0], CLUSTER[1]]])
    expect(got.rows.length).toBe(8)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ingestCommand, parseIngestArgs } from '../../src/ingest/cli.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { findChain } from '../../src/chains/registry.ts'
import type { ChainRef } from '../../src/manifest/types.ts'
import { fsStore } from '../../src/store/fs.ts'
import { openStore } from '../../src/store/open.ts'
import { readManifest, snapshot } from './fixtures.ts'
import { startWorkload, type Workload } from './devnet.ts'
import { runIngestScript, usageError } from './script.ts'

const DEV: ChainRef = { family: 'evm', id: 31337, code: 'DEVNET' }
const base = ['--chain', 'ETH', '--rpc', 'http://127.0.0.1:8545', '--from', '10', '--to', '20', '--out', '/tmp/x']
const set = (args: string[], name: string, value: string | null) => {
  const i = args.indexOf(name)
  const out = [...args]
  if (value === null) out.splice(i, 2)
  else if (i >= 0) out[i + 1] = value
  else out.push(name, value)
  return out
}

describe('parseIngestArgs', () => {
  it('reads every option', () => {
    const a = parseIngestArgs([
      ...base,
      '--datasets',
      'logs, blocks',
      '--confirmations',
      '12',
      '--partition-blocks',
      '1000',
      '--concurrency',
      '8',
      '--workers',
      '3',
    ])
    expect(a).toMatchObject({
      rpc: 'http://127.0.0.1:8545',
      from: 10,
      to: 20,
      out: '/tmp/x',
      datasets: ['logs', 'blocks'],
      confirmations: 12,
      partitionBlocks: 1000,
      concurrency: 8,
      workers: 3,
    })
    expect(a.chain.code).toBe('ETH')
    expect(parseIngestArgs(set(base, '--to', 'latest')).to).toBe('latest')
  })

  it('finds the chain by code, chain id or name', () => {
    for (const name of ['ETH', 'eth', '1', 'ethereum-mainnet']) expect(parseIngestArgs(set(base, '--chain', name)).chain.id).toBe(1)
    expect(parseIngestArgs(set(base, '--chain', '31337')).chain.code).toBe('DEVNET')
  })

  it('says what is wrong', () => {
    expect(usageError(set(base, '--chain', null))).toBe('--chain is required')
    expect(usageError(set(base, '--chain', 'dogecoin'))).toBe('unknown chain "dogecoin"')
    expect(usageError(set(base, '--rpc', null))).toBe('--rpc is required for ETH (an EVM chain)')
    expect(usageError(set(base, '--to', '5'))).toBe('--to 5 is below --from 10')
    expect(usageError(set(base, '--from', '-1'))).toMatch(/--from/)
    expect(usageError(set(base, '--from', '1e3'))).toBe('--from must be a non-negative integer, got "1e3"')
    expect(usageError(set(base, '--to', 'soon'))).toBe('--to must be a non-negative integer, got "soon"')
    expect(usageError([...base, '--bogus', '1'])).toMatch(/bogus/)
    expect(usageError([...base, '--datasets', ','])).toBe('--datasets is empty')
    expect(usageError([...base, '--partition-blocks', '0'])).toBe('--partition-blocks must be at least 1')
    expect(usageError([...base, '--workers', 'two'])).toBe('--workers must be a non-negative integer, got "two"')
    expect(usageError([...base, '--rest', 'http://x'])).toBe('--rest is for Move-VM chains; ETH is an EVM chain, use --rpc')
    expect(usageError(set(set(base, '--chain', 'APTOS'), '--rpc', null))).toBe('--rest is required for APTOS (a Move-VM chain)')
  })
})

describe('ingestCommand', () => {
  it('answers a usage error with exit code 2 and the usage text', async () => {
    let err = ''
    const code = await ingestCommand(['--chain', 'ETH'], {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (err += s) },
      openStore,
    })
    expect(code).toBe(2)
    expect(err).toMatch(/^error: --from is required\nusage: npm run ingest/)
  })
})

describe('scripts/ingest.ts against a live devnet', () => {
  let w: Workload
  const dirs: string[] = []
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'ingest-cli-'))
    dirs.push(d)
    return d
  }
  beforeAll(async () => {
    w = await startWorkload(3)
  })
  afterAll(async () => {
    await w?.stop()
    dirs.forEach(d => rmSync(d, { recursive: true, force: true }))
  })

  const run = runIngestScript

  it('prints one JSON line per published unit and a summary; exit code 0', async () => {
    const dir = tempDir()
    const out = await run([
      '--chain',
      'DEVNET',
      '--rpc',
      w.anvil.url,
      '--from',
      '0',
      '--to',
      'latest',
      '--out',
      pathToFileURL(dir).href,
      '--partition-blocks',
      '2',
    ])
    expect(out.stderr).toBe('')
    expect(out.code).toBe(0)
    const records = out.lines.map(l => JSON.parse(l))
    expect(records.slice(0, -1).every(r => r.event === 'published')).toBe(true)
    expect(records.length - 1).toBe(Math.ceil((w.head + 1) / 2))
    expect(records.at(-1)).toMatchObject({
      event: 'done',
      from: 0,
      to: w.head,
      blocks: w.head + 1,
      rows: { transactions: w.transactions, logs: w.logs },
    })
  })

  it('fails with exit code 1 and a clear message', async () => {
    const out = await run(['--chain', 'DEVNET', '--rpc', w.anvil.url, '--from', '0', '--to', '1000', '--out', tempDir()])
    expect(out.code).toBe(1)
    expect(out.stderr).toBe(`error: block 1000 is past the node's head ${w.head}\n`)
  })

  it('killed mid-way and run again, ends with the same manifest and rows as an uninterrupted run', async () => {
    // A proxy that stops answering once block 3 is asked for: the ingester cannot get past it.
    const proxy: Server = createServer((req, res) => {
      let body = ''
      req.on('data', c => (body += c))
      req.on('end', async () => {
        if (/"eth_getBlockByNumber","params":\["0x([3-9a-f]|[1-9a-f][0-9a-f]+)"/.test(body)) return
        const upstream = await fetch(w.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        res.writeHead(upstream.status, { 'content-type': 'application/json' })
        res.end(await upstream.text())
      })
    })
    await new Promise<void>(r => proxy.listen(0, '127.0.0.1', r))
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
    const dir = tempDir()
    const args = (rpc: string) => [
      '--chain',
      'DEVNET',
      '--rpc',
      rpc,
      '--from',
      '0',
      '--to',
      String(w.head),
      '--out',
      dir,
      '--partition-blocks',
      '1',
    ]
    try {
      const killed = await run(args(proxyUrl), (line, kill) => {
        if (JSON.parse(line).to === 1) kill()
      })
      expect(killed.signal).toBe('SIGKILL')
    } finally {
      proxy.closeAllConnections()
      proxy.close()
    }
    const partial = (await readManifest(fsStore(dir), DEV))!.datasets.blocks.coverage
    // Units built in worker threads publish as they finish, so what landed may start past block 0 (a gap the rerun fills).
    expect(partial.length).toBeGreaterThan(0)
    expect(partial.at(-1)![1]).toBeLessThan(3)

    const rerun = await run(args(w.anvil.url))
    expect(rerun.code).toBe(0)
    const reference = fsStore(tempDir())
    await runIngest({ chain: findChain('evm', 'DEVNET')!, rpcUrl: w.anvil.url, from: 0, to: w.head, store: reference, partitionBlocks: 1 })
    expect(await snapshot(fsStore(dir), DEV)).toEqual(await snapshot(reference, DEV))
  })
})

import { existsSync } from 'node:fs'
import { describe, it, expect } from 'vitest'
import { anvilArgs, anvilBinary, anvilPackageSuffix, parseListeningPort, startAnvil } from '../../../scripts/dev/devnet/anvil.ts'

async function rpc(url: string, method: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
  })
  return ((await res.json()) as { result: unknown }).result
}

describe('anvil binary', () => {
  it('maps Node platforms to foundry npm package suffixes', () => {
    expect(anvilPackageSuffix('linux', 'x64')).toBe('linux-amd64')
    expect(anvilPackageSuffix('darwin', 'arm64')).toBe('darwin-arm64')
    expect(anvilPackageSuffix('win32', 'x64')).toBe('win32-amd64')
    expect(anvilPackageSuffix('linux', 'ia32')).toBeUndefined()
    expect(anvilPackageSuffix('aix', 'x64')).toBeUndefined()
  })

  it('resolves the installed linux-amd64 package from node_modules', () => {
    const bin = anvilBinary('linux', 'x64')
    expect(bin).toMatch(/node_modules\/@foundry-rs\/anvil-linux-amd64\/bin\/anvil$/)
    expect(existsSync(bin)).toBe(true)
  })

  it('names the package to install when no build is found', () => {
    expect(() => anvilBinary('win32', 'arm64')).toThrow(/@foundry-rs\/anvil-win32-arm64.*foundry/)
  })

  it('reads the port from the listening line', () => {
    expect(parseListeningPort('Genesis Number\n0\n\nListening on 127.0.0.1:36433\n')).toBe(36433)
    expect(parseListeningPort('Listening on')).toBeUndefined()
  })

  it('binds to 127.0.0.1 and only adds --block-time for interval mining', () => {
    const args = anvilArgs({})
    expect(args.slice(args.indexOf('--host'), args.indexOf('--host') + 2)).toEqual(['--host', '127.0.0.1'])
    expect(args).not.toContain('--block-time')
    expect(anvilArgs({ blockTime: 2 })).toContain('--block-time')
  })
})

describe('startAnvil', () => {
  it('serves the chosen chain id on a free port and is gone after stop()', async () => {
    const anvil = await startAnvil({ chainId: 4242 })
    try {
      expect(anvil.port).toBeGreaterThan(0)
      expect(anvil.url).toBe(`http://127.0.0.1:${anvil.port}`)
      expect(await rpc(anvil.url, 'eth_chainId')).toBe('0x1092')
    } finally {
      await anvil.stop()
    }
    await expect(rpc(anvil.url, 'eth_chainId')).rejects.toThrow()
  })

  it('defaults to chain 31337 with automine, and mines on an interval when asked', async () => {
    const [auto, interval] = await Promise.all([startAnvil(), startAnvil({ blockTime: 1 })])
    try {
      expect(await rpc(auto.url, 'eth_chainId')).toBe('0x7a69')
      expect(await rpc(auto.url, 'anvil_getAutomine')).toBe(true)
      expect(await rpc(interval.url, 'anvil_getAutomine')).toBe(false)
      while ((await rpc(interval.url, 'eth_blockNumber')) === '0x0') await new Promise(r => setTimeout(r, 100))
      expect(await rpc(auto.url, 'eth_blockNumber')).toBe('0x0')
    } finally {
      await Promise.all([auto.stop(), interval.stop()])
    }
  })
})

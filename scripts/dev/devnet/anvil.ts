/**
 * Starts and stops a local anvil node from the `@foundry-rs/anvil-<platform>` npm package,
 * so tests, the bundled sample and the live demo need no global foundry install.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, dirname, join } from 'node:path'

/** The well-known anvil/hardhat test mnemonic: its accounts are funded with 10000 ETH each. */
export const DEVNET_MNEMONIC = 'test test test test test test test test test test test junk'

/** Genesis timestamp of the devnet (2025-01-01T00:00:00Z): fixed so a replayed workload gives the same block hashes. */
export const DEVNET_GENESIS_TIMESTAMP = 1_735_689_600

export interface AnvilOptions {
  /** TCP port on 127.0.0.1; 0 lets the OS pick a free one. Default 0. */
  port?: number
  /** Default 31337. */
  chainId?: number
  /** Seconds between blocks (interval mining); undefined mines one block per transaction. */
  blockTime?: number
  /** Default DEVNET_MNEMONIC. */
  mnemonic?: string
  /** Genesis block timestamp in seconds. Default DEVNET_GENESIS_TIMESTAMP. */
  timestamp?: number
  /** Hide anvil's own output. Default true. */
  quiet?: boolean
}

export interface Anvil {
  url: string
  port: number
  /** Kills the node and resolves once it has exited. */
  stop(): Promise<void>
}

/** npm package suffix of the anvil build for a Node platform/arch pair, or undefined when foundry ships none. */
export function anvilPackageSuffix(platform: string, arch: string): string | undefined {
  const cpu = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : undefined
  if (!cpu || !['linux', 'darwin', 'win32'].includes(platform)) return undefined
  return `${platform}-${cpu}`
}

/**
 * Path of the anvil executable: `ANVIL_BIN`, else the matching `@foundry-rs/anvil-<platform>`
 * package, else `anvil` on PATH (a foundry install). Throws with install advice otherwise.
 */
export function anvilBinary(platform: string = process.platform, arch: string = process.arch): string {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN
  const exe = platform === 'win32' ? 'anvil.exe' : 'anvil'
  const suffix = anvilPackageSuffix(platform, arch)
  const pkg = suffix ? `@foundry-rs/anvil-${suffix}` : undefined
  if (pkg) {
    try {
      const manifest = createRequire(import.meta.url).resolve(`${pkg}/package.json`)
      const bin = join(dirname(manifest), 'bin', exe)
      if (existsSync(bin)) return bin
    } catch {
      // not installed: fall through to PATH
    }
  }
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map(d => join(d, exe))
    .find(p => existsSync(p))
  if (onPath) return onPath
  throw new Error(
    `anvil not found for ${platform}/${arch}: install ${pkg ? `the npm package ${pkg} (npm install --no-save ${pkg})` : 'foundry'}` +
      ' or foundry (https://getfoundry.sh), or set ANVIL_BIN to the anvil executable',
  )
}

/** Command-line arguments for anvil; `--port 0` makes anvil pick a port and print it. */
export function anvilArgs(opts: AnvilOptions): string[] {
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    String(opts.port ?? 0),
    '--chain-id',
    String(opts.chainId ?? 31337),
    '--mnemonic',
    opts.mnemonic ?? DEVNET_MNEMONIC,
    '--timestamp',
    String(opts.timestamp ?? DEVNET_GENESIS_TIMESTAMP),
    '--color',
    'never',
  ]
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime))
  return args
}

/** The port in anvil's `Listening on 127.0.0.1:<port>` line, or undefined. */
export function parseListeningPort(output: string): number | undefined {
  const m = /Listening on [^\s:]+:(\d+)/.exec(output)
  return m ? Number(m[1]) : undefined
}

/** Spawns anvil on 127.0.0.1 and resolves once it answers `eth_chainId`. */
export async function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
  const child = spawn(anvilBinary(), anvilArgs(opts), { stdio: ['ignore', 'pipe', 'pipe'] })
  const killOnExit = () => child.kill('SIGKILL')
  process.on('exit', killOnExit)
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const stop = async () => {
    process.off('exit', killOnExit)
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    }
  }
  try {
    const port = await waitForPort(child, opts.quiet ?? true)
    const url = `http://127.0.0.1:${port}`
    await waitForRpc(url, child)
    return { url, port, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

/** Reads anvil's output until the listening line; keeps draining it afterwards so anvil never blocks on a full pipe. */
function waitForPort(child: ChildProcess, quiet: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    let seen = ''
    let found = false
    const onData = (chunk: Buffer) => {
      if (!quiet) process.stderr.write(chunk)
      if (found) return
      seen = (seen + chunk.toString('utf8')).slice(-4096)
      const port = parseListeningPort(seen)
      if (port !== undefined) {
        found = true
        resolve(port)
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('error', reject)
    child.once('exit', code => {
      if (!found) reject(new Error(`anvil exited (code ${code}) before listening: ${seen.trim().slice(-500)}`))
    })
  })
}

async function waitForRpc(url: string, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited (code ${child.exitCode})`)
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      })
      if (res.ok && typeof ((await res.json()) as { result?: unknown }).result === 'string') return
    } catch {
      // not accepting connections yet
    }
    if (Date.now() > deadline) throw new Error(`anvil at ${url} did not answer eth_chainId within ${timeoutMs} ms`)
    await new Promise(r => setTimeout(r, 50))
  }
}

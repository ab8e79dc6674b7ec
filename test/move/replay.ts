/**
 * Starts ../shared/tools/replay-aptos.mjs, a fullnode-style REST server over
 * the recorded transactions and ABIs (or a data directory of the same layout,
 * `--data`), on a free 127.0.0.1 port (or the one given).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { TOOLS, type Network } from './data.ts'

export interface Replay {
  url: string
  stop(): Promise<void>
}

export interface ReplayOptions {
  /** A directory laid out as ../shared/data/move-mainnet: `rest/<network>/{transactions,manifest}.json` and `abis/*.json`. */
  data?: string
  port?: number
  chainId?: number
}

export function startReplay(network: Network, options: ReplayOptions = {}): Promise<Replay> {
  const args = [path.join(TOOLS, 'replay-aptos.mjs'), '--network', network, '--port', String(options.port ?? 0)]
  if (options.data) args.push('--data', options.data)
  if (options.chainId !== undefined) args.push('--chain-id', String(options.chainId))
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    child.stderr?.on('data', d => (err += d))
    child.once('exit', code => reject(new Error(`replay-aptos exited with ${code}: ${err}`)))
    child.stdout?.on('data', d => {
      out += d
      const m = /^listening (http:\/\/127\.0\.0\.1:\d+)/m.exec(out)
      if (!m) return
      child.removeAllListeners('exit')
      resolve({
        url: m[1],
        stop: () =>
          new Promise(done => {
            child.once('exit', () => done())
            child.kill('SIGTERM')
          }),
      })
    })
  })
}

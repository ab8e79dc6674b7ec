/**
 * Starts ../shared/tools/replay-aptos.mjs, a fullnode-style REST server over
 * the recorded transactions and ABIs, on a free 127.0.0.1 port.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { TOOLS, type Network } from './data.ts'

export interface Replay {
  url: string
  stop(): Promise<void>
}

export function startReplay(network: Network): Promise<Replay> {
  const child: ChildProcess = spawn(process.execPath, [path.join(TOOLS, 'replay-aptos.mjs'), '--network', network, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
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

/**
 * The `npm start` demo workload (scripts/dev/live-demo.ts) on a real anvil: it keeps
 * mining its rounds after a reorg drops blocks it mined (the node's nonces, not its own
 * count, decide each round's transactions).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { startLiveDevnet, type LiveDevnet } from '../../scripts/dev/live-demo.ts'

let devnet: LiveDevnet | undefined
afterAll(async () => {
  await devnet?.stop()
})

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { result?: unknown; error?: { message: string } }
  if (body.error) throw new Error(body.error.message)
  return body.result
}

const head = async (url: string) => Number(await rpc(url, 'eth_blockNumber'))

describe('the live demo workload', () => {
  it('keeps mining rounds after a reorg', async () => {
    const lines: string[] = []
    devnet = await startLiveDevnet({ intervalSeconds: 0.2, log: line => lines.push(line) })
    const url = devnet.rpcUrl
    const start = await head(url)
    while ((await head(url)) < start + 6) await new Promise(r => setTimeout(r, 100))
    await rpc(url, 'anvil_reorg', [3, []])
    const failedBefore = lines.filter(l => l.includes('failed')).length
    const after = await head(url)
    while ((await head(url)) < after + 8) await new Promise(r => setTimeout(r, 100))
    expect(lines.filter(l => l.includes('failed')).slice(failedBefore)).toEqual([])
  })
})

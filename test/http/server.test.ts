/**
 * `npm run serve` for real: the script as a child process on a free port, spoken to
 * over HTTP on 127.0.0.1 by fetch and by curl.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logs } from '../../src/datasets/evm.ts'
import { DECODERS } from '../format/decode.ts'

import { buildHttpLake, canonicalRecords, type HttpLake } from './fixture.ts'
import WebSocket from 'ws'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const root = join(import.meta.dirname, '..', '..')
let child: ChildProcess
let base: string
let lake: HttpLake
const lines: string[] = []

beforeAll(async () => {
  const { store, dir } = await tempStore()
  lake = await buildHttpLake(store)
  const env = { ...process.env }
  delete env.API_USERS
  child = spawn(process.execPath, [join(root, 'scripts', 'serve.ts'), '--data', dir, '--port', '0'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const rl = createInterface({ input: child.stdout! })
  rl.on('line', line => lines.push(line))
  await new Promise<void>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`serve exited with ${code}`)))
    // The last line of the banner names the users.
    rl.on('line', line => line.startsWith('users:') && resolve())
  })
  base = /^listening (http:\/\/127\.0\.0\.1:\d+)$/.exec(lines[0])?.[1] ?? ''
}, 60_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  await removeTempDirs()
})

const auth = { authorization: basic('dev', 'dev') }

describe('npm run serve', () => {
  it('prints the address first and says the development user is in use', async () => {
    expect(lines[0]).toMatch(/^listening http:\/\/127\.0\.0\.1:\d+$/)
    expect(lines.some(l => l.includes('dev:dev'))).toBe(true)
  })

  it('answers a URL over the limit with 414 naming it, and an address__in that fits', async () => {
    const addresses = (n: number) => Array.from({ length: n }, (_, i) => '0x' + i.toString(16).padStart(40, '0')).join(',')
    const long = await fetch(`${base}/v1/api/logs?chains=ETH&address__in=${addresses(1000)}`, { headers: auth })
    expect(long.status).toBe(414)
    const err = ((await long.json()) as { error: { code: string; message: string } }).error
    expect(err.code).toBe('uri_too_long')
    expect(err.message).toMatch(/16384/)
    expect((await fetch(`${base}/v1/api/logs?chains=ETH&address__in=${addresses(370)}`, { headers: auth })).status).toBe(200)
    const huge = await fetch(`${base}/v1/api/logs?chains=ETH&x=${'a'.repeat(70_000)}`, { headers: auth })
    expect(huge.status).toBe(431)
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe('headers_too_large')
  })

  it('serves queries over HTTP', async () => {
    const fields = logs.fields.filter(f => !f.extra)
    const res = await fetch(`${base}/v1/api/logs?chains=ETH&from_block=0`, { headers: auth })
    expect(res.status).toBe(200)
    expect(DECODERS.json_stream(new Uint8Array(await res.arrayBuffer()), fields)).toEqual(canonicalRecords(lake.rows.logs, fields, 1))
  })

  it('serves WebSocket subscriptions on the same port: a bounded range replays the HTTP records, then ends', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/api/logs?chains=ETH&from_block=100&to_block=249`, { headers: auth })
    const messages: { type: string; rows?: unknown[] }[] = []
    await new Promise<void>((done, fail) => {
      ws.on('message', data => {
        const m = JSON.parse(data.toString())
        messages.push(m)
        if (m.type === 'end' || m.type === 'error') done()
      })
      ws.on('error', fail)
    })
    ws.close()
    expect(messages[0].type).toBe('subscribed')
    expect(messages.at(-1)?.type).toBe('end')
    const rows = messages.filter(m => m.type === 'rows').flatMap(m => m.rows)
    const http = await (await fetch(`${base}/v1/api/logs?chains=ETH&from_block=100&to_block=249`, { headers: auth })).text()
    expect(rows).toEqual(
      http
        .trim()
        .split('\n')
        .map(line => JSON.parse(line)),
    )
    expect(rows).toHaveLength(lake.rows.logs.length)
  })

  it('routes Move hosts by the Host header', async () => {
    const port = new URL(base).port
    const { stdout } = await promisify(execFile)('curl', [
      '-s',
      '-u',
      'dev:dev',
      '-H',
      `Host: movement-testnet.localhost:${port}`,
      `${base}/v1/api/status`,
    ])
    expect(JSON.parse(stdout)).toEqual([expect.objectContaining({ chain_code: 'MOVEMENT_TESTNET', chain: 250 })])
  })

  it('gives curl --compressed a gzip stream it reads back to the plain body', async () => {
    const url = `${base}/v1/api/logs?chains=ETH&from_block=0&format=csv`
    const run = (args: string[]) =>
      promisify(execFile)('curl', ['-s', '-S', '-f', '-u', 'dev:dev', ...args, url], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })
    const plain = await run([])
    const compressed = await run(['--compressed', '-D', '-'])
    const text = compressed.stdout.toString('latin1')
    const split = text.indexOf('\r\n\r\n')
    expect(text.slice(0, split)).toMatch(/content-encoding: gzip/i)
    expect(compressed.stdout.subarray(split + 4).equals(plain.stdout)).toBe(true)
    expect(plain.stdout.length).toBeGreaterThan(1000)
  })

  it('refuses to serve beyond loopback with the development user', async () => {
    const env = { ...process.env }
    delete env.API_USERS
    const run = promisify(execFile)(process.execPath, [join(root, 'scripts', 'serve.ts'), '--data', '/nonexistent', '--host', '0.0.0.0'], {
      cwd: root,
      env,
    })
    const err = (await run.catch(e => e)) as { code: number; stderr: string }
    expect(err.code).toBe(2)
    expect(err.stderr).toMatch(/API_USERS/)
  })

  it('answers 401 without credentials', async () => {
    const res = await fetch(`${base}/v1/api/status`)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/)
  })
})

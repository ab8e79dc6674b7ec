/**
 * `npm start` for real: seeds wrangler dev's local R2 from a lake directory, runs
 * `wrangler dev`, and the Worker answers on the EVM host and on a Move host (the
 * request's host must survive wrangler's proxy), with API_USERS from the environment.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { request } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { blocks } from '../../src/datasets/evm.ts'
import { hashPassword } from '../../src/api/auth.ts'
import { DECODERS } from '../format/decode.ts'

import { buildHttpLake, canonicalRecords, inBlocks, type HttpLake } from './fixture.ts'
import { basic } from '../support/basic.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const root = join(import.meta.dirname, '..', '..')
let child: ChildProcess
let persist: string
let base: string
let lake: HttpLake
let output = ''
let objects = 0

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

beforeAll(async () => {
  const { store, dir } = await tempStore()
  lake = await buildHttpLake(store)
  objects = (await store.list('')).length
  persist = await mkdtemp(join(tmpdir(), 'wrangler-state-'))
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  const env = {
    ...process.env,
    PORT: String(port),
    API_USERS: `ops:${await hashPassword('hunter2', 1000)}`,
    WRANGLER_SEND_METRICS: 'false',
    CI: 'true',
  }
  child = spawn(process.execPath, [join(root, 'scripts', 'start.ts'), '--data', dir, '--persist-to', persist], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.on('data', d => (output += d))
  child.stderr!.on('data', d => (output += d))
  await new Promise<void>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`npm start exited with ${code}:\n${output}`)))
    const check = () => (/Ready on/.test(output) ? resolve() : setTimeout(check, 100))
    check()
  })
}, 120_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  await rm(persist, { recursive: true, force: true })
  await removeTempDirs()
})

const auth = { authorization: basic('ops', 'hunter2') }

describe('npm start', () => {
  it('says it seeded the local R2 bucket and uses API_USERS', () => {
    expect(objects).toBeGreaterThan(5)
    expect(output).toMatch(new RegExp(`seeded local R2 from .*: ${objects} objects`))
    expect(output).toMatch(/users: from API_USERS/)
  })

  it('serves the seeded lake through wrangler dev, with the users of API_USERS', async () => {
    expect((await fetch(`${base}/v1/api/status`, { headers: { authorization: basic('dev', 'dev') } })).status).toBe(401)
    const fields = blocks.fields.filter(f => !f.extra)
    const res = await fetch(`${base}/v1/api/blocks?chains=ETH&from_block=140&to_block=210&format=csv`, { headers: auth })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-blocks-served')).toBe('140-149,200-210')
    expect(DECODERS.csv(new Uint8Array(await res.arrayBuffer()), fields)).toEqual(
      canonicalRecords(inBlocks(lake.rows.blocks, 140, 210), fields, 1),
    )
  })

  it('keeps the request host, so Move hosts route to their chain', async () => {
    // fetch() does not send a Host header of our choosing; node:http does.
    const body = await new Promise<string>((resolve, reject) => {
      request(`${base}/v1/api/status`, { headers: { ...auth, host: `aptos.localhost:${new URL(base).port}` } }, res => {
        let text = ''
        res.on('data', d => (text += d))
        res.on('end', () => resolve(text))
      })
        .on('error', reject)
        .end()
    })
    expect((JSON.parse(body) as { chain_code: string }[]).map(r => r.chain_code)).toEqual(['APTOS'])
  })

  it('serves the explorer page as static assets, without credentials, on every host', async () => {
    const explorer = join(root, 'src', 'explorer')
    for (const host of ['127.0.0.1', 'aptos.localhost']) {
      for (const [path, file] of [
        ['/', 'index.html'],
        ['/explorer.js', 'explorer.js'],
      ]) {
        const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
          request(`${base}${path}`, { headers: { host: `${host}:${new URL(base).port}` } }, res => {
            let text = ''
            res.on('data', d => (text += d))
            res.on('end', () => resolve({ status: res.statusCode!, text }))
          })
            .on('error', reject)
            .end()
        })
        expect(body).toEqual({ status: 200, text: readFileSync(join(explorer, file), 'utf8') })
      }
    }
    expect((await fetch(`${base}/README.md`)).status).toBe(401)
  })
})

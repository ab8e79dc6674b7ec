/**
 * The explorer's static files: within their size budget, self-contained, and served by
 * the Node server on every host exactly as the folder holds them (the folder wrangler.toml
 * names as the Worker's static assets), the files of `.assetsignore` never.
 */
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assetNames, EXPLORER_DIR } from '../../src/node/assets.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'

const ROOT = resolve(import.meta.dirname, '..', '..')
/** The page's budget (src/explorer/README.md): every served file together, uncompressed. */
const BUDGET_BYTES = 24 * 1024

let server: NodeServer

/** GET or HEAD through node:http, which sends the Host header it is given. */
function get(path: string, host?: string, method = 'GET'): Promise<{ status: number; type: string; body: Buffer }> {
  const url = new URL(server.url)
  return new Promise((done, fail) => {
    const req = request({ host: url.hostname, port: url.port, path, method, headers: host ? { host } : {} }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => done({ status: res.statusCode!, type: String(res.headers['content-type']), body: Buffer.concat(chunks) }))
    })
    req.on('error', fail)
    req.end()
  })
}

beforeAll(async () => {
  server = await startNodeServer({ store: (await tempStore()).store, users: await parseUsers('u:p') })
})
afterAll(async () => {
  await server?.close()
  await removeTempDirs()
})

describe('the explorer files', () => {
  const names = assetNames()

  it('are the page, its script and its stylesheet, within the budget', () => {
    expect(names.sort()).toEqual(['explorer.css', 'explorer.js', 'index.html'])
    const total = names.reduce((n, name) => n + readFileSync(join(EXPLORER_DIR, name)).length, 0)
    expect(total).toBeLessThanOrEqual(BUDGET_BYTES)
  })

  it('load nothing from another origin', () => {
    const html = readFileSync(join(EXPLORER_DIR, 'index.html'), 'utf8')
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1])
    expect(refs.sort()).toEqual(['/explorer.css', '/explorer.js'])
    expect(html).toMatch(/Content-Security-Policy" content="default-src 'self'/)
    const js = readFileSync(join(EXPLORER_DIR, 'explorer.js'), 'utf8')
    expect(js.match(/\bhttps?:\/\//g)).toBeNull()
  })

  it('are the folder wrangler.toml serves as the Worker static assets', () => {
    const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8')
    const dir = /\[assets\]\s*\ndirectory\s*=\s*"([^"]+)"/.exec(toml)?.[1]
    expect(dir && resolve(ROOT, dir)).toBe(EXPLORER_DIR)
  })

  it('are served by the Node server on every host without credentials, / as index.html', async () => {
    for (const host of [undefined, 'aptos.localhost', 'movement-testnet.localhost']) {
      const index = await get('/', host)
      expect([index.status, index.type]).toEqual([200, 'text/html; charset=utf-8'])
      expect(index.body.equals(readFileSync(join(EXPLORER_DIR, 'index.html')))).toBe(true)
      for (const name of names) {
        const file = await get(`/${name}`, host)
        expect(file.status).toBe(200)
        expect(file.body.equals(readFileSync(join(EXPLORER_DIR, name)))).toBe(true)
      }
    }
    expect((await get('/explorer.js')).type).toBe('text/javascript; charset=utf-8')
    const head = await get('/', undefined, 'HEAD')
    expect([head.status, head.body.length]).toEqual([200, 0])
  })

  it('never serves what .assetsignore lists, and leaves every other path to the API', async () => {
    const readme = await get('/README.md')
    expect(readme.status).toBe(401)
    expect(JSON.parse(readme.body.toString()).error.code).toBe('unauthorized')
    expect((await get('/v1/api/status')).status).toBe(401)
  })
})

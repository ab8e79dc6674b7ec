/**
 * A real client over a real socket: `npm run serve` (scripts/serve.ts) as a child
 * process on 127.0.0.1 over the recorded mainnet lake (`--data file://…`, users from
 * API_USERS with a PBKDF2 hash), and curl reading the json_stream of logs gzipped
 * (`--compressed`) and plain: the same bytes, Content-Encoding gzip on the wire,
 * and records equal to the reference.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashPassword } from '../../src/api/auth.ts'
import { differences } from './cases.ts'
import { fromJsonLines } from './decode.ts'
import { FROM, ingestRecorded, PASSWORD, SERVED, TO, USER, type RecordedLake } from './lake.ts'
import { defaultFields, project, referenceRecords } from './reference.ts'

const root = join(import.meta.dirname, '..', '..')
let lake: RecordedLake
let child: ChildProcess
let base: string

beforeAll(async () => {
  lake = await ingestRecorded()
  const env = { ...process.env, API_USERS: `${USER}:${await hashPassword(PASSWORD)}` }
  child = spawn(process.execPath, [join(root, 'scripts', 'serve.ts'), '--data', pathToFileURL(lake.dir).href, '--port', '0'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })
  const first = await new Promise<string>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`serve exited with ${code}`)))
    lines.once('line', resolve)
  })
  base = /^listening (http:\/\/127\.0\.0\.1:\d+)$/.exec(first)?.[1] ?? ''
  expect(base, first).not.toBe('')
}, 120_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  await lake?.remove()
})

const curl = (args: string[]) =>
  promisify(execFile)('curl', ['-s', '-S', '-f', '-u', `${USER}:${PASSWORD}`, ...args], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })

/** Splits `curl -D -` output into the (last) header block and the body. */
function headersAndBody(out: Buffer): { headers: string; body: Buffer } {
  const split = out.indexOf('\r\n\r\n')
  return { headers: out.subarray(0, split).toString('latin1'), body: out.subarray(split + 4) }
}

describe('curl against npm run serve on the recorded lake', () => {
  it('reads the gzip json_stream with --compressed, equal to the plain response and to the reference', async () => {
    const url = `${base}/v1/api/logs?chains=ETH&from_block=${FROM}&to_block=${TO}&format=json_stream`
    const plain = headersAndBody((await curl(['-D', '-', url])).stdout)
    const compressed = headersAndBody((await curl(['--compressed', '-D', '-', url])).stdout)
    expect(plain.headers).not.toMatch(/^content-encoding:/im)
    expect(compressed.headers).toMatch(/^content-encoding: gzip\r?$/im)
    expect(compressed.headers).toMatch(new RegExp(`^x-blocks-served: ${SERVED}\\r?$`, 'im'))
    expect(compressed.body.equals(plain.body)).toBe(true)

    const fields = defaultFields('logs')
    const want = referenceRecords().logs.map(r => project(r, fields))
    expect(differences('curl --compressed logs', fromJsonLines(compressed.body, fields), want)).toEqual([])
  })

  it('sends gzip bytes on the wire (no --compressed: curl leaves them as they came)', async () => {
    const url = `${base}/v1/api/transactions?chains=ETH&from_block=${FROM}&to_block=${TO}&format=json_stream`
    const plain = (await curl([url])).stdout
    const raw = (await curl(['-H', 'Accept-Encoding: gzip', url])).stdout
    expect([...raw.subarray(0, 2)]).toEqual([0x1f, 0x8b])
    expect(raw.length).toBeLessThan(plain.length)
    expect(gunzipSync(raw).equals(plain)).toBe(true)
  })

  it('refuses curl with a wrong password (401)', async () => {
    const res = await promisify(execFile)('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-u',
      `${USER}:wrong`,
      `${base}/v1/api/status`,
    ])
    expect(res.stdout).toBe('401')
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { openStore } from '../../src/store/open.ts'
import { s3Store } from '../../src/store/s3.ts'
import { startS3Server, type TestS3Server } from './s3-server.ts'

let dir: string
let server: TestS3Server
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'open-store-'))
  server = await startS3Server()
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
  await server?.close()
})

describe('openStore', () => {
  it('opens file:// URLs, absolute and relative paths as the same directory', async () => {
    const body = new Uint8Array([1, 2, 3])
    await openStore(pathToFileURL(dir).href).put('a/b.bin', body)
    expect(new Uint8Array(await readFile(join(dir, 'a', 'b.bin')))).toEqual(body)
    expect((await openStore(dir).get('a/b.bin'))!.body).toEqual(body)
    expect((await openStore(relative(process.cwd(), dir)).list('a/')).map(o => o.key)).toEqual(['a/b.bin'])
  })

  it('opens s3:// URLs with the prefix applied to every key, settings from the AWS variables', async () => {
    const env = {
      AWS_ENDPOINT_URL_S3: server.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey,
    }
    const store = openStore(`s3://${server.bucket}/lake/main/`, env)
    await store.put('x.bin', new Uint8Array([9]))
    expect((await store.list('')).map(o => o.key)).toEqual(['x.bin'])
    const whole = s3Store({ bucket: server.bucket }, env)
    expect(await whole.head('lake/main/x.bin')).toMatchObject({ size: 1 })
    expect((await openStore(`s3://${server.bucket}/lake/main`, env).get('x.bin'))!.body).toEqual(new Uint8Array([9]))
    expect((await openStore(`s3://${server.bucket}`, env).list('lake/')).map(o => o.key)).toEqual(['lake/main/x.bin'])
  })

  it('refuses unknown schemes and bucketless S3 URLs with a clear message', () => {
    expect(() => openStore('gs://bucket/x')).toThrow(/unknown store URL scheme "gs:"/)
    expect(() => openStore('s3:///prefix')).toThrow(/names no bucket/)
  })
})

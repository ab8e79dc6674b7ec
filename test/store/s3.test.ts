import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3'
import { s3Store, isConditionFailure, placeBody, rangeHeader, resolveS3Options, type S3StoreOptions } from '../../src/store/s3.ts'
import { StorageError } from '../../src/store/types.ts'
import { objectStoreContract } from './contract.ts'
import { startS3Server, type TestS3Server } from './s3-server.ts'

let server: TestS3Server
beforeAll(async () => {
  server = await startS3Server()
})
afterAll(() => server?.close())

const options = (extra: Partial<S3StoreOptions> = {}): S3StoreOptions => ({
  bucket: server.bucket,
  endpoint: server.endpoint,
  region: 'us-east-1',
  credentials: server.credentials,
  pageSize: 7,
  ...extra,
})

objectStoreContract('S3 (s3rver)', () => s3Store(options()))
objectStoreContract('S3 (s3rver) under a key prefix', () => s3Store(options({ prefix: 'lake/v1/' })))

describe('s3Store', () => {
  it('keeps a prefixed store inside its prefix', async () => {
    const whole = s3Store(options())
    const lake = s3Store(options({ prefix: 'scoped/' }))
    await lake.put('a/b.bin', new Uint8Array([1, 2, 3]))
    expect(await whole.head('scoped/a/b.bin')).toMatchObject({ size: 3 })
    expect((await lake.list('a/')).map(o => o.key)).toEqual(['a/b.bin'])
    expect(await lake.head('scoped/a/b.bin')).toBeNull()
  })

  it('talks to a server that really refuses failed conditions (the test extension is in the path)', async () => {
    const client = new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true, credentials: server.credentials })
    const send = (IfNoneMatch?: string, IfMatch?: string) =>
      client.send(new PutObjectCommand({ Bucket: server.bucket, Key: 'raw/x', Body: 'x', IfNoneMatch, IfMatch }))
    await send()
    await expect(send('*')).rejects.toMatchObject({ $metadata: { httpStatusCode: 412 } })
    await expect(send(undefined, '"0123"')).rejects.toMatchObject({ $metadata: { httpStatusCode: 412 } })
    client.destroy()
  })

  it('reports an unreachable server as StorageError', async () => {
    const closed = await listen(createServer())
    const port = (closed.address() as { port: number }).port
    await new Promise(resolve => closed.close(resolve))
    const store = s3Store(options({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 }))
    await expect(store.get('k')).rejects.toThrow(StorageError)
    await expect(store.put('k', new Uint8Array(1), { ifNoneMatch: '*' })).rejects.toThrow(StorageError)
  })

  it('reports 5xx answers and a server that never answers as StorageError', async () => {
    const failing = await listen(createServer((_, res) => res.writeHead(503).end()))
    const silent = await listen(createServer(() => {}))
    const at = (s: Server) => `http://127.0.0.1:${(s.address() as { port: number }).port}`
    try {
      await expect(s3Store(options({ endpoint: at(failing), maxAttempts: 1 })).head('k')).rejects.toThrow(StorageError)
      await expect(s3Store(options({ endpoint: at(failing), maxAttempts: 1 })).list('')).rejects.toThrow(StorageError)
      await expect(s3Store(options({ endpoint: at(silent), maxAttempts: 1, requestTimeoutMs: 200 })).get('k')).rejects.toThrow(StorageError)
    } finally {
      for (const s of [failing, silent]) {
        s.closeAllConnections()
        await new Promise(resolve => s.close(resolve))
      }
    }
  })
})

describe('rangeHeader', () => {
  it('writes slices, open ranges and suffixes as HTTP byte ranges', () => {
    expect(rangeHeader(undefined)).toBeUndefined()
    expect(rangeHeader({ offset: 10, length: 5 })).toBe('bytes=10-14')
    expect(rangeHeader({ offset: 7 })).toBe('bytes=7-')
    expect(rangeHeader({ suffix: 8 })).toBe('bytes=-8')
  })
})

describe('placeBody', () => {
  const whole = Uint8Array.from({ length: 20 }, (_, i) => i)
  it('slices a whole-object answer from a server that ignored Range', () => {
    expect(placeBody({ offset: 5, length: 3 }, undefined, whole)).toEqual({ offset: 5, size: 20, body: whole.slice(5, 8) })
    expect(placeBody({ suffix: 4 }, undefined, whole)).toEqual({ offset: 16, size: 20, body: whole.slice(16) })
  })
  it('trims a wider answer and refuses one that misses asked-for bytes', () => {
    expect(placeBody({ offset: 2, length: 1 }, 'bytes 0-19/20', whole)).toEqual({ offset: 2, size: 20, body: whole.slice(2, 3) })
    expect(() => placeBody({ suffix: 8 }, 'bytes 0-8/20', whole.slice(0, 9))).toThrow(StorageError)
  })
})

describe('isConditionFailure', () => {
  const answer = (httpStatusCode: number) => ({ $metadata: { httpStatusCode } })
  it('reads 412, 409 and 404-for-If-Match as a failed condition, and nothing on unconditional puts', () => {
    expect(isConditionFailure(answer(412), { ifNoneMatch: '*' })).toBe(true)
    expect(isConditionFailure(answer(409), { ifMatch: '"e"' })).toBe(true)
    expect(isConditionFailure(answer(404), { ifMatch: '"e"' })).toBe(true)
    expect(isConditionFailure(answer(404), { ifNoneMatch: '*' })).toBe(false)
    expect(isConditionFailure(answer(412), {})).toBe(false)
    expect(isConditionFailure(answer(503), { ifMatch: '"e"' })).toBe(false)
    expect(isConditionFailure(new Error('socket hang up'), { ifMatch: '"e"' })).toBe(false)
  })
})

describe('resolveS3Options', () => {
  it('takes the endpoint from the standard AWS variables and then uses path-style URLs', () => {
    const env = { AWS_ENDPOINT_URL: 'http://general:1', AWS_ENDPOINT_URL_S3: 'http://s3-only:2', AWS_REGION: 'eu-west-1' }
    expect(resolveS3Options({ bucket: 'b' }, env)).toMatchObject({
      endpoint: 'http://s3-only:2',
      region: 'eu-west-1',
      forcePathStyle: true,
    })
    expect(resolveS3Options({ bucket: 'b' }, { AWS_ENDPOINT_URL: 'http://general:1' })).toMatchObject({
      endpoint: 'http://general:1',
      region: 'auto',
    })
    expect(resolveS3Options({ bucket: 'b', forcePathStyle: false }, env).forcePathStyle).toBe(false)
    expect(resolveS3Options({ bucket: 'b' }, {})).toMatchObject({
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
      prefix: '',
    })
  })

  it('takes credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or leaves them to the SDK', () => {
    const env = { AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token' }
    expect(resolveS3Options({ bucket: 'b' }, env).credentials).toEqual({
      accessKeyId: 'id',
      secretAccessKey: 'secret',
      sessionToken: 'token',
    })
    expect(resolveS3Options({ bucket: 'b' }, { AWS_ACCESS_KEY_ID: 'id' }).credentials).toBeUndefined()
  })
})

function listen(s: Server): Promise<Server> {
  return new Promise(resolve => s.listen(0, '127.0.0.1', () => resolve(s)))
}

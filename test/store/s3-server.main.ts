/**
 * Child-process entry of the test S3 server (started by `s3-server.ts`):
 * `node --openssl-legacy-provider s3-server.main.ts <directory> <bucket>` runs s3rver
 * 3.7.1 on 127.0.0.1 (free port), prints `{"port":N}` on one line, and exits when its
 * standard input closes. It runs in its own process because s3rver encrypts list
 * continuation tokens with DES, which Node 17+ only offers with the legacy OpenSSL
 * provider: without it every truncated ListObjectsV2 page is a 500.
 *
 * s3rver lacks three S3 behaviours the S3 store depends on. A small Koa middleware put
 * in front of s3rver's own adds each of them as the S3 API reference specifies, and
 * nothing else (storage, ETags, ranged reads, listing and pagination stay s3rver's):
 * - Conditional PutObject. `If-None-Match: *` on an existing key → 412
 *   PreconditionFailed; `If-Match: <etag>` → 404 NoSuchKey on a missing key, 412 when
 *   the etag differs. Writes and deletes of one key are serialized, so check-and-write
 *   is atomic as on S3. (s3rver ignores both headers and overwrites.)
 * - Suffix ranges. `Range: bytes=-N` becomes the equivalent absolute range for the
 *   object's size. (s3rver reads it as `bytes=0-N`.)
 * - Ranges on an empty object → 416 InvalidRange, as S3 answers. (s3rver sends
 *   `Content-Length: 1` and no body.)
 */
import { createRequire } from 'node:module'

interface KoaContext {
  method: string
  path: string
  req: { headers: Record<string, string | string[] | undefined> }
  get(header: string): string
  store: { getMetadata(bucket: string, key: string): Promise<Record<string, string>> }
}
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>
interface S3rverInstance {
  middleware: Middleware[]
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

const require = createRequire(import.meta.url)
const S3rver = require('s3rver') as new (options: object) => S3rverInstance
const S3Error = require('s3rver/lib/models/error.js') as new (code: string, message: string, detail?: object) => Error

const [directory, bucket] = process.argv.slice(2)
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] })
server.middleware.unshift(s3Semantics())
const { port } = await server.run()
process.stdout.write(`${JSON.stringify({ port })}\n`)
process.stdin.on('end', () => process.exit(0))
process.stdin.resume()

function s3Semantics(): Middleware {
  const tails = new Map<string, Promise<void>>()

  async function serialized(id: string, fn: () => Promise<void>): Promise<void> {
    const before = tails.get(id) ?? Promise.resolve()
    let release!: () => void
    const tail = before.then(() => new Promise<void>(resolve => (release = resolve)))
    tails.set(id, tail)
    await before
    try {
      await fn()
    } finally {
      release()
      if (tails.get(id) === tail) tails.delete(id)
    }
  }

  return async (ctx, next) => {
    const m = /^\/([^/]+)\/(.+)$/.exec(ctx.path)
    if (!m) return next()
    const [bucket, key] = [m[1], decodeURIComponent(m[2])]
    const metadata = () => ctx.store.getMetadata(bucket, key).catch(() => null)

    if (ctx.method === 'GET' || ctx.method === 'HEAD') {
      const range = ctx.get('range')
      const meta = range ? await metadata() : null
      if (meta) {
        const size = Number(meta['content-length'])
        if (size === 0)
          throw new S3Error('InvalidRange', 'The requested range is not satisfiable', { RangeRequested: range, ActualObjectSize: 0 })
        const suffix = /^bytes=-(\d+)$/.exec(range)
        if (suffix) ctx.req.headers.range = `bytes=${Math.max(0, size - Number(suffix[1]))}-${size - 1}`
      }
      return next()
    }
    if (ctx.method !== 'PUT' && ctx.method !== 'DELETE') return next()

    await serialized(`${bucket}/${key}`, async () => {
      const ifMatch = ctx.get('if-match')
      const ifNoneMatch = ctx.get('if-none-match')
      if (ctx.method === 'PUT' && (ifMatch || ifNoneMatch)) {
        const current = await metadata()
        if (ifNoneMatch === '*' && current) throw preconditionFailed('If-None-Match')
        if (ifMatch && !current) throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: key })
        if (ifMatch && current && unquote(ifMatch) !== unquote(current.etag)) throw preconditionFailed('If-Match')
      }
      await next()
    })
  }
}

function preconditionFailed(condition: string): Error {
  return new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: condition })
}

function unquote(etag: string): string {
  return etag.replace(/^(W\/)?"(.*)"$/, '$2')
}

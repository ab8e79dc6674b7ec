/**
 * `ObjectStore` over any S3-compatible service (AWS S3, R2's S3 API, MinIO, …) with
 * `@aws-sdk/client-s3`. Reads are ranged GETs (`bytes=a-b`, `bytes=-N` for Parquet
 * footers); conditional writes use PutObject `If-Match` / `If-None-Match`, which S3
 * answers with 412 (or 409 on a concurrent conditional write, or 404 for `If-Match`
 * on a missing key): all of those mean "condition failed", so `put` returns null.
 * Missing keys are null; every other failure (network, timeout, 5xx, refused) is a
 * `StorageError`.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { checkRange, emptySlice, isEmptyRange, sliceOf } from './range.ts'
import { StorageError } from './types.ts'
import type { ByteRange, GetResult, ObjectInfo, ObjectStore, PutOptions } from './types.ts'

/** Where and how `s3Store` connects; unset fields come from the AWS variables (see `resolveS3Options`). */
export interface S3StoreOptions {
  bucket: string
  /** Prepended to every key and stripped from listed keys, e.g. `'lake/'` (default `''`). */
  prefix?: string
  /** Endpoint of an S3-compatible service (default: `AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, else AWS). */
  endpoint?: string
  /** Default: `AWS_REGION`, then `AWS_DEFAULT_REGION`, else `'auto'` with an endpoint and `'us-east-1'` without. */
  region?: string
  /** Default: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (/ `AWS_SESSION_TOKEN`), else the SDK's provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  /** `host/bucket/key` URLs instead of `bucket.host/key` (default: true when an endpoint is set). */
  forcePathStyle?: boolean
  /** Keys per ListObjectsV2 page (default 1000, the S3 maximum). */
  pageSize?: number
  /** Time to establish a connection (default 5,000 ms). */
  connectTimeoutMs?: number
  /** Time for one whole request and response (default 30,000 ms). */
  requestTimeoutMs?: number
  /** Attempts per request, retries included, for throttling, 5xx and network errors (default 3). */
  maxAttempts?: number
}

type Env = Record<string, string | undefined>

/** Options with every default filled in from `env` (the process environment by default). */
export function resolveS3Options(
  options: S3StoreOptions,
  env: Env = process.env,
): Required<Omit<S3StoreOptions, 'endpoint' | 'credentials'>> & Pick<S3StoreOptions, 'endpoint' | 'credentials'> {
  const endpoint = options.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL
  return {
    bucket: options.bucket,
    prefix: options.prefix ?? '',
    endpoint,
    region: options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (endpoint ? 'auto' : 'us-east-1'),
    credentials:
      options.credentials ??
      (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN }
        : undefined),
    forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
    pageSize: options.pageSize ?? 1000,
    connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    maxAttempts: options.maxAttempts ?? 3,
  }
}

/** An `ObjectStore` over one bucket (optionally under a key prefix) of an S3-compatible service; defaults come from `env`. */
export function s3Store(options: S3StoreOptions, env: Env = process.env): ObjectStore {
  const o = resolveS3Options(options, env)
  const client = new S3Client({
    region: o.region,
    endpoint: o.endpoint,
    forcePathStyle: o.forcePathStyle,
    credentials: o.credentials,
    maxAttempts: o.maxAttempts,
    requestHandler: { connectionTimeout: o.connectTimeoutMs, requestTimeout: o.requestTimeoutMs, throwOnRequestTimeout: true },
    // Many S3-compatible services mishandle the SDK's default flexible checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  const Bucket = o.bucket
  const full = (key: string) => o.prefix + key

  async function head(key: string): Promise<ObjectInfo | null> {
    try {
      const res = await client.send(new HeadObjectCommand({ Bucket, Key: full(key) }))
      return { key, size: res.ContentLength ?? 0, etag: res.ETag ?? '' }
    } catch (e) {
      if (statusOf(e) === 404) return null
      throw failure('head', key, e)
    }
  }

  const emptyRead = async (key: string, range: ByteRange | undefined, refusal?: unknown): Promise<GetResult | null> =>
    emptySlice(await head(key), range, () => failure('get', key, refusal))

  return {
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      checkRange(range)
      if (isEmptyRange(range)) return emptyRead(key, range)
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: full(key), Range: rangeHeader(range) }))
        const placed = placeBody(range, res.ContentRange, await res.Body!.transformToByteArray())
        return { key, etag: res.ETag ?? '', ...placed }
      } catch (e) {
        const status = statusOf(e)
        if (status === 404) return null
        if (status === 416) return emptyRead(key, range, e)
        throw failure('get', key, e)
      }
    },

    head,

    async put(key: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo | null> {
      try {
        const res = await client.send(
          new PutObjectCommand({
            Bucket,
            Key: full(key),
            Body: body,
            ContentLength: body.length,
            ContentType: options.contentType,
            IfMatch: options.ifMatch,
            IfNoneMatch: options.ifNoneMatch,
          }),
        )
        return { key, size: body.length, etag: res.ETag ?? '' }
      } catch (e) {
        if (isConditionFailure(e, options)) return null
        throw failure('put', key, e)
      }
    },

    async list(prefix: string): Promise<ObjectInfo[]> {
      const out: ObjectInfo[] = []
      let token: string | undefined
      try {
        do {
          const res = await client.send(
            new ListObjectsV2Command({
              Bucket,
              Prefix: full(prefix),
              MaxKeys: o.pageSize,
              ContinuationToken: token,
            }),
          )
          for (const c of res.Contents ?? []) {
            out.push({ key: c.Key!.slice(o.prefix.length), size: c.Size ?? 0, etag: c.ETag ?? '' })
          }
          token = res.IsTruncated ? res.NextContinuationToken : undefined
        } while (token)
      } catch (e) {
        throw failure('list', prefix, e)
      }
      // S3 lists in byte order, but not every S3-compatible server does (s3rver does not).
      return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    },

    async delete(key: string): Promise<void> {
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: full(key) }))
      } catch (e) {
        if (statusOf(e) !== 404) throw failure('delete', key, e)
      }
    },
  }
}

/** The HTTP `Range` header for a non-empty `range` (undefined: the whole object). */
export function rangeHeader(range: ByteRange | undefined): string | undefined {
  if (!range) return undefined
  if ('suffix' in range) return `bytes=-${range.suffix}`
  return range.length === undefined ? `bytes=${range.offset}-` : `bytes=${range.offset}-${range.offset + range.length - 1}`
}

/**
 * Cuts the asked-for slice out of a response body. `contentRange` (`bytes a-b/size`)
 * says where the body sits; without it the body is the whole object (a server may
 * ignore `Range`). A body wider than asked is trimmed; one missing asked-for bytes is
 * a `StorageError`.
 */
export function placeBody(
  range: ByteRange | undefined,
  contentRange: string | undefined,
  body: Uint8Array,
): { offset: number; size: number; body: Uint8Array } {
  let start = 0
  let size = body.length
  if (contentRange) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(contentRange)
    if (!m) throw new StorageError(`unexpected Content-Range ${JSON.stringify(contentRange)}`)
    start = Number(m[1])
    size = Number(m[3])
  }
  const want = sliceOf(range, size)
  const from = want.offset - start
  if (from < 0 || from + want.length > body.length) {
    throw new StorageError(`server sent bytes ${start}-${start + body.length - 1} of ${size}, not ${want.offset}+${want.length}`)
  }
  const slice = from === 0 && want.length === body.length ? body : body.subarray(from, from + want.length)
  return { offset: want.offset, size, body: slice }
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode
}

/** True when a PutObject error means "your condition did not hold" rather than trouble. */
export function isConditionFailure(e: unknown, options: PutOptions): boolean {
  const status = statusOf(e)
  const conditional = options.ifMatch !== undefined || options.ifNoneMatch !== undefined
  // 409 ConditionalRequestConflict: a concurrent conditional write won; 404: If-Match on a missing key.
  return conditional && (status === 412 || status === 409 || (status === 404 && options.ifMatch !== undefined))
}

function failure(op: string, key: string, e: unknown): StorageError {
  if (e instanceof StorageError) return e
  const err = e as { name?: string; message?: string }
  const status = statusOf(e)
  return new StorageError(
    `s3 store: ${op} ${JSON.stringify(key)} failed: ${err.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${err.message ?? String(e)}`,
    { cause: e },
  )
}

/**
 * `ObjectStore` over a Cloudflare R2 bucket binding, for the Worker. Ranged reads use
 * R2's `{ offset, length }` / `{ suffix }`; conditional writes use `onlyIf`, and R2
 * answers a failed condition with null, which `put` passes on. Binding failures
 * (R2 unavailable, internal errors) become `StorageError`.
 */
import { checkRange, emptySlice, isEmptyRange, sliceOf } from './range.ts'
import { StorageError } from './types.ts'
import type { ByteRange, GetResult, ObjectInfo, ObjectStore, PutOptions } from './types.ts'

/** Tuning of `r2Store`. */
export interface R2StoreOptions {
  /** Keys per `list` page (default 1000, the R2 maximum). */
  pageSize?: number
}

/** An `ObjectStore` over the R2 binding `bucket` (e.g. `env.LAKE`). */
export function r2Store(bucket: R2Bucket, options: R2StoreOptions = {}): ObjectStore {
  const pageSize = options.pageSize ?? 1000

  async function head(key: string): Promise<ObjectInfo | null> {
    const obj = await call('head', key, () => bucket.head(key))
    return obj && infoOf(obj)
  }

  const emptyRead = async (key: string, range: ByteRange | undefined, refusal?: unknown): Promise<GetResult | null> =>
    emptySlice(await head(key), range, () => failure('get', key, refusal))

  return {
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      checkRange(range)
      if (isEmptyRange(range)) return emptyRead(key, range)
      try {
        const obj = await bucket.get(key, range ? { range: r2Range(range) } : {})
        if (!obj) return null
        const body = new Uint8Array(await obj.arrayBuffer())
        const slice = sliceOf(range, obj.size)
        if (body.length < slice.length) throw new Error(`R2 returned ${body.length} bytes, not ${slice.length}`)
        return { ...infoOf(obj), body: body.subarray(0, slice.length), offset: slice.offset }
      } catch (e) {
        if (!range) throw failure('get', key, e)
        return emptyRead(key, range, e)
      }
    },

    head,

    async put(key: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo | null> {
      const put: R2PutOptions = { httpMetadata: options.contentType ? { contentType: options.contentType } : undefined }
      if (options.ifMatch !== undefined) put.onlyIf = { etagMatches: options.ifMatch }
      // Header form: it carries the `*` wildcard on every runtime version.
      else if (options.ifNoneMatch === '*') put.onlyIf = new Headers({ 'If-None-Match': '*' })
      const obj = await call('put', key, () => bucket.put(key, body, put))
      return obj && infoOf(obj)
    },

    async list(prefix: string): Promise<ObjectInfo[]> {
      const out: ObjectInfo[] = []
      let cursor: string | undefined
      do {
        const page = await call('list', prefix, () => bucket.list({ prefix, cursor, limit: pageSize }))
        for (const obj of page.objects) out.push(infoOf(obj))
        cursor = page.truncated ? page.cursor : undefined
      } while (cursor)
      return out
    },

    async delete(key: string): Promise<void> {
      await call('delete', key, () => bucket.delete(key))
    },
  }
}

/** R2's form of a non-empty range. */
function r2Range(range: ByteRange): R2Range {
  return 'suffix' in range ? { suffix: range.suffix } : { offset: range.offset, length: range.length }
}

function infoOf(obj: R2Object): ObjectInfo {
  return { key: obj.key, size: obj.size, etag: obj.etag }
}

async function call<T>(op: string, key: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    throw failure(op, key, e)
  }
}

function failure(op: string, key: string, e: unknown): StorageError {
  if (e instanceof StorageError) return e
  return new StorageError(`r2 store: ${op} ${JSON.stringify(key)} failed: ${(e as Error).message}`, { cause: e })
}

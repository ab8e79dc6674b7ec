/**
 * The one interface to object storage. Implementations: R2 binding (Worker),
 * S3-compatible (`@aws-sdk/client-s3`), local file system. Keys use `/` separators.
 */

/**
 * A byte range: `{ offset, length }` reads a slice, `{ suffix }` reads the last `suffix` bytes.
 * `into`: memory the caller lends for the slice (at least `length` bytes), which a store may
 * read it into and return a view of instead of allocating (the local file store does). The
 * caller reuses it once done with the body, so a store must never keep it.
 */
export type ByteRange = { offset: number; length?: number; into?: Uint8Array } | { suffix: number }

export interface ObjectInfo {
  key: string
  /** Total size of the object, whatever range was read. */
  size: number
  /** Opaque version tag for conditional writes. */
  etag: string
}

export interface GetResult extends ObjectInfo {
  body: Uint8Array
  /** Offset of `body` inside the object (non-zero for ranged and suffix reads). */
  offset: number
}

export interface PutOptions {
  /** Write only if the current object has this etag (compare-and-swap). */
  ifMatch?: string
  /** Write only if no object exists under the key. */
  ifNoneMatch?: '*'
  contentType?: string
}

export interface ObjectStore {
  /** Null when the key does not exist. */
  get(key: string, range?: ByteRange): Promise<GetResult | null>
  head(key: string): Promise<ObjectInfo | null>
  /** Null when a condition in `options` failed; the object is then unchanged. */
  put(key: string, body: Uint8Array, options?: PutOptions): Promise<ObjectInfo | null>
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<ObjectInfo[]>
  delete(key: string): Promise<void>
}

/**
 * Storage trouble (unreachable, timed out, refused): the HTTP layer answers 503 with
 * Retry-After instead of 500, because retrying later may work.
 */
/**
 * A stored object that must exist is missing, or its bytes are not what was written: a
 * permanent fault of the deployment (retrying will not help), reported to the operator.
 */
export class CorruptObjectError extends Error {
  readonly key: string
  constructor(key: string, why: string, options?: { cause?: unknown }) {
    super(`${key}: ${why}`, options)
    this.name = 'CorruptObjectError'
    this.key = key
  }
}

export class StorageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StorageError'
  }
}

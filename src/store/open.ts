/**
 * Opens the object store a URL names, for the Node server, the ingester and scripts
 * (the Worker uses its R2 binding instead):
 * - `file:///abs/path`, or a plain absolute or relative path → the file-system store;
 * - `s3://bucket` or `s3://bucket/some/prefix` → the S3 store, every key under the
 *   prefix; endpoint, region and credentials from the standard AWS variables.
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fsStore } from './fs.ts'
import { s3Store } from './s3.ts'
import type { ObjectStore } from './types.ts'

/** The store at `url`; throws on a scheme it does not know. `env` supplies the AWS settings. */
export function openStore(url: string, env: Record<string, string | undefined> = process.env): ObjectStore {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1].toLowerCase()
  if (scheme === undefined) return fsStore(resolve(url))
  if (scheme === 'file') return fsStore(fileURLToPath(url))
  if (scheme === 's3') {
    const [, bucket, path] = /^s3:\/\/([^/]*)\/?(.*)$/i.exec(url)!
    if (!bucket) throw new Error(`store URL ${JSON.stringify(url)} names no bucket`)
    const prefix = path.replace(/^\/+|\/+$/g, '')
    return s3Store({ bucket, prefix: prefix ? `${prefix}/` : '' }, env)
  }
  throw new Error(`unknown store URL scheme "${scheme}:" in ${JSON.stringify(url)}: use file://, s3:// or a path`)
}

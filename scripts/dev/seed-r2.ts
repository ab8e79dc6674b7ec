/**
 * Copies a lake into an R2 bucket seen through Miniflare, so `npm start` (wrangler
 * dev's local R2) and the bundle tests serve the same objects as the source store.
 * Keys in the bucket that the source does not have are deleted, so a rebuilt
 * sample never mixes with an old one.
 */
import type { ObjectStore } from '../../src/store/types.ts'

/** The part of an R2 bucket binding (or Miniflare's proxy of one) the copy needs. */
export interface SeedableBucket {
  put(key: string, value: Uint8Array): Promise<unknown>
  delete(keys: string | string[]): Promise<void>
  list(options?: { cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>
}

/** Copies every object of `source` into `bucket`; returns the counts. */
export async function seedBucket(
  bucket: SeedableBucket,
  source: ObjectStore,
): Promise<{ objects: number; bytes: number; deleted: number }> {
  const infos = await source.list('')
  const keep = new Set(infos.map(i => i.key))
  let bytes = 0
  for (const info of infos) {
    const got = await source.get(info.key)
    if (!got) continue
    await bucket.put(info.key, got.body)
    bytes += got.body.length
  }
  const stale: string[] = []
  let cursor: string | undefined
  do {
    const page = await bucket.list({ limit: 1000, ...(cursor ? { cursor } : {}) })
    for (const o of page.objects) if (!keep.has(o.key)) stale.push(o.key)
    cursor = page.truncated ? page.cursor : undefined
  } while (cursor)
  for (let i = 0; i < stale.length; i += 1000) await bucket.delete(stale.slice(i, i + 1000))
  return { objects: infos.length, bytes, deleted: stale.length }
}

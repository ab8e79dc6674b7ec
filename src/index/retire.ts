/**
 * Deleting the objects of retired segments (`RetiredSegment` in the manifest root): segments
 * merged away or dropped stay listed as retired until a grace period has passed, because a
 * reader that loaded an older root may still read them; then a writer's index step deletes
 * their objects, a bounded number per publication so a big merge never stalls one. Deleting
 * is best effort: a failure keeps the entry for the next publication, never fails this one.
 */
import type { RetiredSegment } from '../manifest/types.ts'
import type { ObjectStore } from '../store/types.ts'
import { segmentKeys } from './tiers.ts'

/** A day: far longer than any query holds a root (roots are reloaded every few seconds). */
export const RETIRE_GRACE_MS = 24 * 60 * 60 * 1000

/** Objects deleted per publication at most: a merged top segment has thousands of buckets. */
export const DELETES_PER_PUBLICATION = 2_000

export interface SweepOptions {
  now?: number
  graceMs?: number
  budget?: number
}

/** Deletes what is due of `retired` (oldest first) and returns what stays listed, with its progress. */
export async function sweepRetired(
  store: ObjectStore,
  prefix: string,
  retired: readonly RetiredSegment[],
  { now = Date.now(), graceMs = RETIRE_GRACE_MS, budget = DELETES_PER_PUBLICATION }: SweepOptions = {},
): Promise<RetiredSegment[]> {
  const kept: RetiredSegment[] = []
  for (const r of retired) {
    if (budget <= 0 || now - Date.parse(r.since) < graceMs) {
      kept.push(r)
      continue
    }
    const done = r.deleted ?? 0
    const keys = segmentKeys(prefix, r.segment).slice(done)
    const batch = keys.slice(0, budget)
    try {
      await deleteAll(store, batch)
    } catch {
      kept.push(r)
      budget = 0
      continue
    }
    budget -= batch.length
    if (batch.length < keys.length) kept.push({ ...r, deleted: done + batch.length })
  }
  return kept
}

/** Deletes `keys` with up to `concurrency` requests in flight; rejects if any delete failed. */
async function deleteAll(store: ObjectStore, keys: readonly string[], concurrency = 16): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < keys.length) await store.delete(keys[next++])
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker))
}

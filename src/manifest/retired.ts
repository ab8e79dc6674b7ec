/**
 * The retired segments of a dataset's index (`RetiredSegment`) are listed in an object of
 * their own that the root names, not in the root: every query reads the root, and a backfill
 * that publishes every few seconds retires segments much faster than their one-day grace
 * ends (the history bench's 2,500 publications left 1.77 MB of list in a 1.79 MB root). Only
 * writers read the list. Each change writes it under a fresh key; the object a root stops
 * naming is deleted once that root is replaced, so a writer that finds it gone lost a race
 * to a newer root and starts over (`RetiredListGone`).
 */
import { chainKey } from '../chains/registry.ts'
import { crc32 } from '../store/crc32.ts'
import { CorruptObjectError, type ObjectStore } from '../store/types.ts'
import { MANIFEST_FORMAT, type ChainRef, type RetiredList, type RetiredRef, type RetiredSegment, type SegmentDescriptor } from './types.ts'

/** The retired list a root names is no longer stored: a newer root replaced it, so reload the root. */
export class RetiredListGone extends Error {}

/** A fresh key for a dataset's retired list written at `generation` (random: two writers of one generation never collide). */
export const retiredKey = (chain: ChainRef, dataset: string, generation: number): string =>
  `${chainKey(chain)}/manifest/${dataset}/retired/g${generation}-${crypto.randomUUID().slice(0, 8)}.json`

/** The retired segments `list` names ([] when none). */
export async function loadRetired(store: ObjectStore, list: RetiredList | undefined): Promise<RetiredSegment[]> {
  if (list === undefined) return []
  if (Array.isArray(list)) return list
  const got = await store.get(list.key)
  if (!got) throw new RetiredListGone(`the retired list ${list.key} is gone: a newer root replaced it`)
  if (crc32(got.body) !== list.crc) throw new CorruptObjectError(list.key, 'the retired list fails the checksum its root records')
  let parsed: { format?: unknown; retired?: unknown }
  try {
    parsed = JSON.parse(new TextDecoder().decode(got.body))
  } catch (err) {
    throw new CorruptObjectError(list.key, `not a readable retired list (${(err as Error).message})`, { cause: err })
  }
  if (parsed.format !== MANIFEST_FORMAT || !Array.isArray(parsed.retired) || parsed.retired.length !== list.segments)
    throw new CorruptObjectError(list.key, 'not the retired list its root names')
  return parsed.retired as RetiredSegment[]
}

/** Stores `retired` under a fresh key and returns what the root lists for it. */
export async function storeRetired(
  store: ObjectStore,
  chain: ChainRef,
  dataset: string,
  generation: number,
  retired: readonly RetiredSegment[],
): Promise<RetiredRef> {
  const key = retiredKey(chain, dataset, generation)
  const bytes = new TextEncoder().encode(JSON.stringify({ format: MANIFEST_FORMAT, chain, dataset, retired }))
  await store.put(key, bytes, { contentType: 'application/json' })
  return { key, crc: crc32(bytes), segments: retired.length }
}

/** The keys of the retired-list objects the roots' datasets name. */
export function retiredObjects(datasets: Record<string, { index?: { retired?: RetiredList } }>): Set<string> {
  const keys = new Set<string>()
  for (const d of Object.values(datasets)) {
    const list = d.index?.retired
    if (list && !Array.isArray(list)) keys.add(list.key)
  }
  return keys
}

/**
 * The retired list after a root moves from `before` to `segments`: the segments it no longer
 * lists join `retired` (with `now`), and any listed again leaves it, so no segment is
 * forgotten before its objects are deleted (src/index/retire.ts).
 */
export function nextRetired(
  before: readonly SegmentDescriptor[],
  retired: readonly RetiredSegment[],
  segments: readonly SegmentDescriptor[],
  now: string,
): RetiredSegment[] {
  const live = new Set(segments.map(segmentId))
  const out = retired.filter(r => !live.has(segmentId(r.segment)))
  const listed = new Set(out.map(r => segmentId(r.segment)))
  for (const segment of before) if (!live.has(segmentId(segment)) && !listed.has(segmentId(segment))) out.push({ since: now, segment })
  return out
}

/** A segment's identity: its blocks and the content ids of its objects. */
export const segmentId = (s: SegmentDescriptor): string =>
  [s.from, s.to, s.table ?? '', ...Object.entries(s.columns).map(([c, { id }]) => `${c}:${id}`)].join('/')

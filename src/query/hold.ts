/**
 * Holding fetched bytes: a unit's filter-column chunks, a whole row group the range
 * cuts, or a lookup copy's row groups are fetched in one round and kept in memory
 * (the partition's `Resident` set, which later reads are served from) until let go.
 */
import type { FileMetaData } from 'hyparquet'
import { chunkOf, type OpenPartition, type Unit } from './unit.ts'

/** Byte span of a row group: its column chunks are contiguous. */
export function groupSpan(metadata: FileMetaData, group: number): [number, number] {
  let start = Infinity
  let end = 0
  for (const c of metadata.row_groups[group].columns) {
    const m = c.meta_data!
    const at = Number(m.dictionary_page_offset ?? m.data_page_offset)
    start = Math.min(start, at)
    end = Math.max(end, at + Number(m.total_compressed_size))
  }
  return [start, end]
}

/** Fetches bytes `[start, end)` of the partition and keeps them in memory until they are let go (`resident.remove`). */
export async function hold(part: OpenPartition, [start, end]: [number, number]): Promise<Uint8Array> {
  const bytes = await part.queue.read(part.plan.key, start, end)
  part.resident.add(start, bytes)
  return bytes
}

/** Lets go of what `hold` fetched. */
export const letGo = (part: OpenPartition, held: readonly Uint8Array[]) => () => held.forEach(b => part.resident.remove(b))

/**
 * Fetches the unit's column chunks of `columns` in one round and keeps them in memory
 * while phase one decodes them; returns the function that lets them go.
 */
export async function prefetch(u: Unit, columns: readonly string[]): Promise<() => void> {
  const held = await Promise.all(
    columns
      .filter(c => !u.part.absent.has(c))
      .map(column => {
        const m = chunkOf(u, column)
        const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
        return hold(u.part, [start, start + Number(m.total_compressed_size)])
      }),
  )
  return letGo(u.part, held)
}

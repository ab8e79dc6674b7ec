/**
 * Byte-range arithmetic shared by every `ObjectStore`: what slice of an object of
 * a given size a `ByteRange` asks for. One definition, so all stores clamp the same way.
 */
import type { ByteRange, GetResult, ObjectInfo } from './types.ts'

/** A resolved slice `[offset, offset + length)` inside an object. */
export interface Slice {
  offset: number
  length: number
}

/**
 * The slice of an object of `size` bytes that `range` selects, clamped to the object:
 * a range starting past the end is empty at `offset = size`, a suffix longer than the
 * object is the whole object. No range means the whole object.
 */
export function sliceOf(range: ByteRange | undefined, size: number): Slice {
  if (!range) return { offset: 0, length: size }
  if ('suffix' in range) {
    const offset = Math.max(0, size - range.suffix)
    return { offset, length: size - offset }
  }
  const offset = Math.min(range.offset, size)
  const end = range.length === undefined ? size : Math.min(size, range.offset + range.length)
  return { offset, length: Math.max(0, end - offset) }
}

/** Throws on a range no store can serve (negative or fractional numbers): a caller bug, not storage trouble. */
export function checkRange(range: ByteRange | undefined): void {
  if (!range) return
  const values = 'suffix' in range ? [range.suffix] : [range.offset, ...(range.length === undefined ? [] : [range.length])]
  for (const v of values) {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`invalid byte range ${JSON.stringify(range)}`)
  }
}

/** True when `range` can only select zero bytes, whatever the object's size (nothing to fetch). */
export function isEmptyRange(range: ByteRange | undefined): boolean {
  if (!range) return false
  return 'suffix' in range ? range.suffix === 0 : range.length === 0
}

/**
 * What a range selecting no bytes reads: nothing, at the clamped offset. Also the answer
 * when a service refused a range (R2 and S3 refuse ranges starting at or past the end, and
 * any range of an empty object), unless the object does hold bytes in that range: then
 * the refusal stands (`refused`).
 */
export function emptySlice(info: ObjectInfo | null, range: ByteRange | undefined, refused: () => Error): GetResult | null {
  if (!info) return null
  const slice = sliceOf(range, info.size)
  if (slice.length > 0) throw refused()
  return { ...info, body: new Uint8Array(0), offset: slice.offset }
}

/**
 * The packed columns of a RowBatch: the layout Parquet pages decode into and Arrow
 * buffers are made of. A value is never an object of its own (a Uint8Array view per
 * address cost half the CPU of an export in garbage collection), so the scanner
 * fills flat buffers, the Arrow encoder hands them out as they are, and the text
 * encoders write hex straight from them.
 *
 * Per kind: u64 kinds → `u64` (BigUint64Array, with the same memory as 32-bit words
 * so small values are read without a BigInt); fixed-width binary kinds → `fixed`
 * (`width` bytes per row, back to back); bytes, string and json → `binary` (Arrow's
 * offsets + data; string and json as UTF-8); bool → `bool` (a byte per row).
 * `valid` has a byte per row, 1 where a value is present; it is null when no row is
 * null. A null row's slot holds zeros (u64, fixed, bool) or no bytes (binary).
 * Words are little-endian, as on every platform this runs on.
 */
import { concatBytes, NativeBuffer } from '../schema/hex.ts'
import { KINDS, type Kind, type StoredValue } from '../schema/kinds.ts'

interface VectorBase {
  length: number
  valid: Uint8Array | null
}

export interface U64Vector extends VectorBase {
  type: 'u64'
  values: BigUint64Array
  /** `values` as 32-bit words: `[2i]` low, `[2i + 1]` high. */
  words: Uint32Array
}

export interface FixedVector extends VectorBase {
  type: 'fixed'
  width: number
  bytes: Uint8Array
  /**
   * `bytes` as 32-bit words when the width is a multiple of 4 and `bytes` starts 4-byte
   * aligned, else null: text encoders read hashes and addresses a word at a time.
   */
  words: Uint32Array | null
}

export interface BinaryVector extends VectorBase {
  type: 'binary'
  /** `length + 1` offsets into `bytes`; row i is `bytes[offsets[i], offsets[i + 1])`. */
  offsets: Int32Array
  bytes: Uint8Array
  /** UTF-8 text (string and json kinds): read back as strings. */
  text: boolean
}

export interface BoolVector extends VectorBase {
  type: 'bool'
  values: Uint8Array
}

export type Vector = U64Vector | FixedVector | BinaryVector | BoolVector

/** The vector layout of a kind. */
export type VectorShape = { type: 'u64' } | { type: 'fixed'; width: number } | { type: 'binary'; text: boolean } | { type: 'bool' }

/** Every kind's vector layout: a new kind does not compile until it has one. */
const SHAPES: Record<Kind, VectorShape> = {
  u64hex: { type: 'u64' },
  u64int: { type: 'u64' },
  u256hex: { type: 'fixed', width: KINDS.u256hex.width! },
  u256pad: { type: 'fixed', width: KINDS.u256pad.width! },
  int: { type: 'fixed', width: KINDS.int.width! },
  hash: { type: 'fixed', width: KINDS.hash.width! },
  address: { type: 'fixed', width: KINDS.address.width! },
  address32: { type: 'fixed', width: KINDS.address32.width! },
  bytes: { type: 'binary', text: false },
  bool: { type: 'bool' },
  string: { type: 'binary', text: true },
  json: { type: 'binary', text: true },
}

export const shapeOf = (kind: Kind): VectorShape => SHAPES[kind]

/** A fixed vector of `length` rows of `width` bytes, with its words where they line up. */
export function fixedVector(width: number, bytes: Uint8Array, valid: Uint8Array | null, length = bytes.length / width): FixedVector {
  const words = width % 4 === 0 && bytes.byteOffset % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, (length * width) / 4) : null
  return { type: 'fixed', length, width, bytes, words, valid }
}

export function u64Vector(values: BigUint64Array, valid: Uint8Array | null = null): U64Vector {
  return { type: 'u64', length: values.length, values, words: new Uint32Array(values.buffer, values.byteOffset, values.length * 2), valid }
}

export function isNull(v: Vector, i: number): boolean {
  return v.valid !== null && v.valid[i] === 0
}

const utf8Encoder = new TextEncoder()
const U64_MAX = 2n ** 64n - 1n
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true })

/** Where row `i`'s bytes start in a fixed-width or binary vector (`rowEnd`: where they end): its value where it lies. */
export const rowStart = (v: FixedVector | BinaryVector, i: number): number => (v.type === 'fixed' ? i * v.width : v.offsets[i])
export const rowEnd = (v: FixedVector | BinaryVector, i: number): number => (v.type === 'fixed' ? (i + 1) * v.width : v.offsets[i + 1])

/** The value of row `i` (null for a null row). Fixed and binary values are views into the vector. */
export function valueAt(v: Vector, i: number): StoredValue | null {
  if (v.valid !== null && v.valid[i] === 0) return null
  switch (v.type) {
    case 'u64':
      return v.values[i]
    case 'bool':
      return v.values[i] === 1
    case 'fixed':
      return v.bytes.subarray(i * v.width, (i + 1) * v.width)
    case 'binary': {
      const bytes = v.bytes.subarray(v.offsets[i], v.offsets[i + 1])
      return v.text ? utf8Decoder.decode(bytes) : bytes
    }
  }
}

/** Every value of a vector, nulls as null: `valueAt` of each row, one loop per layout (the ingester's writers cut a row group's at a time). */
export function valuesOf(v: Vector): (StoredValue | null)[] {
  const n = v.length
  const out = new Array<StoredValue | null>(n)
  if (v.type === 'fixed' && !(v.valid !== null && v.valid.includes(0))) {
    const { bytes, width } = v
    for (let i = 0; i < n; i++) out[i] = bytes.subarray(i * width, (i + 1) * width)
  } else if (v.type === 'binary' && !v.text && !(v.valid !== null && v.valid.includes(0))) {
    const { bytes, offsets } = v
    for (let i = 0; i < n; i++) out[i] = bytes.subarray(offsets[i], offsets[i + 1])
  } else if (v.type === 'u64' && v.valid === null) {
    const { values } = v
    for (let i = 0; i < n; i++) out[i] = values[i]
  } else for (let i = 0; i < n; i++) out[i] = valueAt(v, i)
  return out
}

/** Validity bytes of `values`, or null when none is null. */
function validityOf(values: readonly (StoredValue | null | undefined)[]): Uint8Array | null {
  const n = values.length
  let i = 0
  while (i < n && values[i] !== null && values[i] !== undefined) i++
  if (i === n) return null
  // a loop, not Uint8Array.from: that walks an iterator, an object a value
  const valid = new Uint8Array(n).fill(1, 0, i)
  for (; i < n; i++) valid[i] = values[i] === null || values[i] === undefined ? 0 : 1
  return valid
}

/** A vector of a kind from values (`undefined` is null too); throws on a value of the wrong shape. */
export function vectorOf(kind: Kind, values: readonly (StoredValue | null | undefined)[]): Vector {
  const shape = shapeOf(kind)
  const n = values.length
  const valid = validityOf(values)
  switch (shape.type) {
    case 'u64': {
      const out = new BigUint64Array(n)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === null || x === undefined) continue
        if (typeof x !== 'bigint') throw new TypeError(`expected a bigint for a ${kind} value, got ${typeof x}`)
        // a BigUint64Array would keep a larger value's low 64 bits: refused, as the Parquet writer refuses it
        if (x < 0n || x > U64_MAX) throw new RangeError(`${kind} value out of the u64 range: ${x}`)
        out[i] = x
      }
      return u64Vector(out, valid)
    }
    case 'bool': {
      const out = new Uint8Array(n)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === null || x === undefined) continue
        if (typeof x !== 'boolean') throw new TypeError(`expected a boolean for a ${kind} value, got ${typeof x}`)
        out[i] = x ? 1 : 0
      }
      return { type: 'bool', length: n, values: out, valid }
    }
    case 'fixed': {
      const w = shape.width
      const out = new Uint8Array(n * w)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === null || x === undefined) continue
        if (!(x instanceof Uint8Array) || x.length !== w) throw new TypeError(`expected ${w} bytes for a ${kind} value`)
        out.set(x, i * w)
      }
      return fixedVector(w, out, valid, n)
    }
    case 'binary': {
      if (shape.text && NativeBuffer) return textFrom(kind, values, valid, NativeBuffer)
      const parts = values.map(x => {
        if (x === null || x === undefined) return EMPTY
        if (shape.text) {
          if (typeof x !== 'string') throw new TypeError(`expected a string for a ${kind} value, got ${typeof x}`)
          return utf8Encoder.encode(x)
        }
        if (!(x instanceof Uint8Array)) throw new TypeError(`expected bytes for a ${kind} value`)
        return x
      })
      return binaryFrom(parts, valid, shape.text)
    }
  }
}

const EMPTY = new Uint8Array(0)

/**
 * A text vector written by Buffer: each string's UTF-8 length, then every string into one buffer
 * (lone surrogates as U+FFFD, as TextEncoder writes them). An array of its own a string was most
 * of what packing an ingest step's JSON columns cost.
 */
function textFrom(
  kind: Kind,
  values: readonly (StoredValue | null | undefined)[],
  valid: Uint8Array | null,
  buffer: NonNullable<typeof NativeBuffer>,
): BinaryVector {
  const n = values.length
  const offsets = new Int32Array(n + 1)
  let total = 0
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (x !== null && x !== undefined) {
      if (typeof x !== 'string') throw new TypeError(`expected a string for a ${kind} value, got ${typeof x}`)
      total += buffer.byteLength(x, 'utf8')
    }
    offsets[i + 1] = total
  }
  const bytes = new Uint8Array(total)
  const out = buffer.from(bytes.buffer, 0, total)
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (typeof x === 'string') out.write(x, offsets[i], 'utf8')
  }
  return { type: 'binary', length: n, offsets, bytes, valid, text: true }
}

function binaryFrom(parts: readonly Uint8Array[], valid: Uint8Array | null, text: boolean): BinaryVector {
  const offsets = new Int32Array(parts.length + 1)
  let total = 0
  parts.forEach((p, i) => {
    total += p.length
    offsets[i + 1] = total
  })
  const bytes = new Uint8Array(total)
  parts.forEach((p, i) => bytes.set(p, offsets[i]))
  return { type: 'binary', length: parts.length, offsets, bytes, valid, text }
}

/** `n` rows of one value (null included): every batch's virtual columns, so no array of `n` values is built. */
export function constantVector(kind: Kind, value: StoredValue | null, n: number): Vector {
  return takeVector(vectorOf(kind, [value]), new Int32Array(n))
}

/** Rows `[start, end)`, sharing memory with `v` where the layout allows. */
export function sliceVector(v: Vector, start: number, end: number): Vector {
  const valid = v.valid === null ? null : v.valid.subarray(start, end)
  const length = end - start
  switch (v.type) {
    case 'u64':
      return { type: 'u64', length, values: v.values.subarray(start, end), words: v.words.subarray(2 * start, 2 * end), valid }
    case 'bool':
      return { type: 'bool', length, values: v.values.subarray(start, end), valid }
    case 'fixed':
      return fixedVector(v.width, v.bytes.subarray(start * v.width, end * v.width), valid, length)
    case 'binary': {
      const base = v.offsets[start]
      const offsets = v.offsets.slice(start, end + 1)
      if (base !== 0) for (let i = 0; i < offsets.length; i++) offsets[i] -= base
      return { type: 'binary', length, offsets, bytes: v.bytes.subarray(base, v.offsets[end]), valid, text: v.text }
    }
  }
}

/**
 * Memory vectors may be built in instead of fresh buffers (the Node server's pool,
 * src/query/column-buffers.ts): `take` lends a buffer of at least `length` bytes (stale
 * contents, starting at a multiple of 8 bytes) or declines; `owns` tells which vector now
 * holds the buffers lent for it, so they can come back once that vector is consumed.
 */
export interface VectorMemory {
  take(length: number): Uint8Array | undefined
  owns(vector: Vector, buffers: Uint8Array[]): void
}

/** The buffers of one vector being built: from `memory` when it lends them, else fresh (zeroed) ones. */
export class VectorBuffers {
  /** What `memory` lent so far (a buffer replaced by a larger one included: nothing else holds it). */
  readonly lent: Uint8Array[] = []
  private readonly memory: VectorMemory | undefined

  constructor(memory?: VectorMemory) {
    this.memory = memory
  }

  alloc(bytes: number): Uint8Array {
    const buffer = bytes > 0 ? this.memory?.take(bytes) : undefined
    if (!buffer) return new Uint8Array(bytes)
    this.lent.push(buffer)
    return buffer.subarray(0, bytes)
  }

  /** `vector`, made the owner of what was lent for it. */
  built<T extends Vector>(vector: T): T {
    if (this.lent.length > 0) this.memory!.owns(vector, this.lent)
    return vector
  }
}

/** The rows of `v` at `rows` (minus `base`), in that order; its values in `memory` when given. */
export function takeVector(v: Vector, rows: ArrayLike<number>, base = 0, memory?: VectorMemory): Vector {
  const buffers = new VectorBuffers(memory)
  return buffers.built(takeInto(v, rows, base, bytes => buffers.alloc(bytes)))
}

/**
 * `n` 32-bit words from `src[from]` to `dst[to]`; a hash's eight and an address's five
 * unrolled, which halves the time of the loop the page decoder and takeVector run per
 * value (a native copy per value costs more than either).
 */
export function copyWords(dst: Uint32Array, to: number, src: Uint32Array, from: number, n: number): void {
  if (n === 8) {
    dst[to] = src[from]
    dst[to + 1] = src[from + 1]
    dst[to + 2] = src[from + 2]
    dst[to + 3] = src[from + 3]
    dst[to + 4] = src[from + 4]
    dst[to + 5] = src[from + 5]
    dst[to + 6] = src[from + 6]
    dst[to + 7] = src[from + 7]
  } else if (n === 5) {
    dst[to] = src[from]
    dst[to + 1] = src[from + 1]
    dst[to + 2] = src[from + 2]
    dst[to + 3] = src[from + 3]
    dst[to + 4] = src[from + 4]
  } else for (let j = 0; j < n; j++) dst[to + j] = src[from + j]
}

/** takeVector, its values' memory from `alloc` (every byte of it is written). */
function takeInto(v: Vector, rows: ArrayLike<number>, base: number, alloc: (bytes: number) => Uint8Array): Vector {
  const n = rows.length
  let valid: Uint8Array | null = null
  if (v.valid !== null) {
    valid = new Uint8Array(n)
    for (let i = 0; i < n; i++) valid[i] = v.valid[rows[i] - base]
  }
  switch (v.type) {
    case 'u64': {
      const memory = alloc(8 * n)
      const values = new BigUint64Array(memory.buffer, memory.byteOffset, n)
      const words = new Uint32Array(memory.buffer, memory.byteOffset, 2 * n)
      for (let i = 0; i < n; i++) {
        const r = 2 * (rows[i] - base)
        words[2 * i] = v.words[r]
        words[2 * i + 1] = v.words[r + 1]
      }
      return { type: 'u64', length: n, values, words, valid }
    }
    case 'bool': {
      const values = alloc(n)
      for (let i = 0; i < n; i++) values[i] = v.values[rows[i] - base]
      return { type: 'bool', length: n, values, valid }
    }
    case 'fixed': {
      const w = v.width
      const bytes = alloc(n * w)
      const src = v.bytes
      if (w % 4 === 0 && src.byteOffset % 4 === 0 && bytes.byteOffset % 4 === 0) {
        // hashes and words a 32-bit word at a time: a quarter of the copies
        const words = w / 4
        const from32 = new Uint32Array(src.buffer, src.byteOffset, src.length / 4)
        const to32 = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)
        for (let i = 0; i < n; i++) {
          const from = (rows[i] - base) * words
          const to = i * words
          copyWords(to32, to, from32, from, words)
        }
      } else {
        for (let i = 0; i < n; i++) {
          const from = (rows[i] - base) * w
          const to = i * w
          for (let k = 0; k < w; k++) bytes[to + k] = src[from + k]
        }
      }
      return fixedVector(w, bytes, valid, n)
    }
    case 'binary': {
      const offsets = new Int32Array(n + 1)
      let total = 0
      for (let i = 0; i < n; i++) {
        const r = rows[i] - base
        total += v.offsets[r + 1] - v.offsets[r]
        offsets[i + 1] = total
      }
      const bytes = alloc(total)
      const src = v.bytes
      for (let i = 0; i < n; i++) {
        const r = rows[i] - base
        const from = v.offsets[r]
        const to = v.offsets[r + 1]
        const at = offsets[i]
        // a short value byte by byte: a view of each would be an object a row
        if (to - from > 64) bytes.set(src.subarray(from, to), at)
        else for (let k = from; k < to; k++) bytes[at + k - from] = src[k]
      }
      return { type: 'binary', length: n, offsets, bytes, valid, text: v.text }
    }
  }
}

/** The vectors one after another; all must have the same layout. */
export function concatVectors(vs: readonly Vector[]): Vector {
  if (vs.length === 1) return vs[0]
  const first = vs[0]
  const length = vs.reduce((n, v) => n + v.length, 0)
  let valid: Uint8Array | null = null
  if (vs.some(v => v.valid !== null)) {
    valid = new Uint8Array(length).fill(1)
    let at = 0
    for (const v of vs) {
      if (v.valid !== null) valid.set(v.valid, at)
      at += v.length
    }
  }
  const same = <T extends Vector>(v: Vector): T => {
    if (v.type !== first.type) throw new TypeError(`cannot join a ${v.type} vector to a ${first.type} one`)
    return v as T
  }
  switch (first.type) {
    case 'u64': {
      const values = new BigUint64Array(length)
      let at = 0
      for (const v of vs) {
        values.set(same<U64Vector>(v).values, at)
        at += v.length
      }
      return u64Vector(values, valid)
    }
    case 'bool':
      return { type: 'bool', length, values: concatBytes(vs.map(v => same<BoolVector>(v).values)), valid }
    case 'fixed':
      return fixedVector(first.width, concatBytes(vs.map(v => same<FixedVector>(v).bytes)), valid, length)
    case 'binary': {
      const offsets = new Int32Array(length + 1)
      let row = 0
      let base = 0
      for (const v of vs) {
        const b = same<BinaryVector>(v)
        for (let i = 1; i <= b.length; i++) offsets[row + i] = base + b.offsets[i] - b.offsets[0]
        row += b.length
        base += b.offsets[b.length] - b.offsets[0]
      }
      const bytes = concatBytes(
        vs.map(v => {
          const b = v as BinaryVector
          return b.bytes.subarray(b.offsets[0], b.offsets[b.length])
        }),
      )
      return { type: 'binary', length, offsets, bytes, valid, text: first.text }
    }
  }
}

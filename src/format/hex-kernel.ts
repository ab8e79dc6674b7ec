/**
 * Hex digits in WebAssembly SIMD for the text encoders (hex.wasm, written by
 * scripts/hex-wasm.ts): hex is most of every text response (~500 of a log's ~625 bytes
 * of JSON), and the module writes a column's digits for a block of rows at ~3.8x the
 * speed of text.ts's table (BENCHMARKS.md, "Hex in WebAssembly"). The rows writer
 * (record.ts) then writes a block in the module's memory: the prefixes and endings and
 * the hex columns by the module, the other values by the usual writers, and copies the
 * block out once. The Worker imports the file (workerd compiles WebAssembly only at deploy
 * time); the Node server and its encoding thread compile it (`hexModuleFromFile`).
 *
 * Memory: the digit table at 0; the block's positions (`pos`), record starts,
 * validity bytes, offsets and a text to write at every row (`text`) below `OUT`; the block's records from `OUT`; a column's input copied
 * in after them.
 */
import type { BinaryVector, FixedVector } from '../columns/vector.ts'

interface HexExports {
  memory: WebAssembly.Memory
  fixed(width: number, rows: number, src: number, pos: number, valid: number, quoted: number): void
  binary(rows: number, offsets: number, src: number, pos: number, valid: number, quoted: number): void
  text(rows: number, pos: number, src: number, len: number): void
  compact(rows: number, starts: number, ends: number, to: number): number
}

/** Rows a block holds at most (record.ts's BLOCK). */
export const KERNEL_ROWS = 256
const POS = 1024
const STARTS = POS + 4 * KERNEL_ROWS
const VALID = STARTS + 4 * KERNEL_ROWS
const OFFSETS = VALID + KERNEL_ROWS
/** Where a text written at every row (a prefix, an ending) is copied in. */
const TEXT = OFFSETS + 4 * (KERNEL_ROWS + 1)
/** Longest such text: record.ts checks its texts against it. */
export const KERNEL_TEXT = 256
/** Where a block's records start. */
export const OUT = (TEXT + KERNEL_TEXT + 8 + 63) & ~63
const PAGE = 64 * 1024

/** A column's input goes after the block's records (and the 7 bytes a last word may write past them). */
const inputAt = (recordsEnd: number) => (recordsEnd + 8 + 15) & ~15

/** One instance of the module and views of its memory (new ones whenever it grows). */
export class HexKernel {
  #exports: HexExports
  bytes!: Uint8Array
  view!: DataView
  /** Row r's position in the block: where its next byte goes. */
  pos!: Int32Array
  /** Row r's record start. */
  starts!: Int32Array
  /** A binary column's offsets for the block, copied in. */
  #offsets!: Int32Array

  constructor(module: WebAssembly.Module) {
    this.#exports = new WebAssembly.Instance(module).exports as unknown as HexExports
    this.#views()
  }

  #views(): void {
    const buffer = this.#exports.memory.buffer
    this.bytes = new Uint8Array(buffer)
    this.view = new DataView(buffer)
    this.pos = new Int32Array(buffer, POS, KERNEL_ROWS)
    this.starts = new Int32Array(buffer, STARTS, KERNEL_ROWS)
    this.#offsets = new Int32Array(buffer, OFFSETS, KERNEL_ROWS + 1)
  }

  /** Makes the memory hold `size` bytes; the views are new after it grew. */
  reserve(size: number): void {
    const have = this.#exports.memory.buffer.byteLength
    if (size <= have) return
    this.#exports.memory.grow(Math.ceil((size - have) / PAGE))
    this.#views()
  }

  /** Validity bytes of the rows, copied in (0: every row valid). */
  #valid(valid: Uint8Array | null, from: number, rows: number): number {
    if (valid === null) return 0
    this.bytes.set(valid.subarray(from, from + rows), VALID)
    return VALID
  }

  /** Writes rows [from, from + rows) of a fixed vector of 16 bytes or more a value as `0x…` (`"0x…"` when quoted) at `pos`, records ending before `recordsEnd`. */
  fixed(v: FixedVector, from: number, rows: number, recordsEnd: number, quoted: boolean): void {
    const at = inputAt(recordsEnd)
    const n = rows * v.width
    this.reserve(at + n)
    this.bytes.set(v.bytes.subarray(from * v.width, from * v.width + n), at)
    this.#exports.fixed(v.width, rows, at, POS, this.#valid(v.valid, from, rows), quoted ? 1 : 0)
  }

  /** As `fixed`, for a binary vector (each value's length its own). */
  binary(v: BinaryVector, from: number, rows: number, recordsEnd: number, quoted: boolean): void {
    const at = inputAt(recordsEnd)
    const start = v.offsets[from]
    const n = v.offsets[from + rows] - start
    this.reserve(at + n)
    this.#offsets.set(v.offsets.subarray(from, from + rows + 1))
    this.bytes.set(v.bytes.subarray(start, start + n), at)
    this.#exports.binary(rows, OFFSETS, at, POS, this.#valid(v.valid, from, rows), quoted ? 1 : 0)
  }

  /** Writes `text` (ASCII, at most KERNEL_TEXT bytes) at every row's position of the block's first `rows`, storing up to 7 bytes past it. */
  text(rows: number, text: Uint8Array): void {
    this.bytes.set(text, TEXT)
    this.#exports.text(rows, POS, TEXT, text.length)
  }

  /** Moves the block's records [starts[r], pos[r]) together from OUT; returns where they end. */
  compact(rows: number): number {
    return this.#exports.compact(rows, STARTS, POS, OUT)
  }
}

/** The module compiled from hex.wasm beside this file (Node; a Worker imports the file instead). */
export async function hexModuleFromFile(): Promise<WebAssembly.Module> {
  const { readFile } = await import('node:fs/promises')
  return new WebAssembly.Module(await readFile(new URL('./hex.wasm', import.meta.url)))
}

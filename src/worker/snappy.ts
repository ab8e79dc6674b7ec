/**
 * Snappy decompression in WebAssembly for the Worker: hysnappy's module
 * (scripts/snappy-wasm.ts writes it to snappy.wasm), imported as a file so that
 * wrangler compiles it at deploy time — workerd refuses to compile WebAssembly at run
 * time, which is how hysnappy itself loads it. Pages decompress about twice as fast
 * as with hyparquet's JavaScript snappy.
 */
import type { Compressors } from 'hyparquet'
import snappyModule from './snappy.wasm'

interface SnappyExports {
  memory: WebAssembly.Memory
  uncompress(input: number, inputLength: number, output: number): number
}

/** Where input is copied in the module's memory: past what its C runtime uses (hysnappy's layout). */
const INPUT_START = 68_000
const PAGE = 64 * 1024

const ERRORS: Record<number, string> = { [-1]: 'invalid snappy length header', [-2]: 'missing eof marker', [-3]: 'premature end of input' }

/** A snappy decompressor over one instance of the module. */
export function wasmSnappy(module: WebAssembly.Module = snappyModule): NonNullable<Compressors['SNAPPY']> {
  const { memory, uncompress } = new WebAssembly.Instance(module).exports as unknown as SnappyExports
  return (input, outputLength) => {
    const outputStart = INPUT_START + input.byteLength
    const needed = outputStart + outputLength
    if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / PAGE))
    const bytes = new Uint8Array(memory.buffer)
    bytes.set(input, INPUT_START)
    const result = uncompress(INPUT_START, input.byteLength, outputStart)
    if (result !== 0) throw new Error(ERRORS[result] ?? `snappy: failed to uncompress (${result})`)
    return bytes.slice(outputStart, needed)
  }
}

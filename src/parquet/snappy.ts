/**
 * Snappy decompression in WebAssembly: hysnappy's module with its byte-at-a-time memcpy
 * and memmove made `memory.copy` (scripts/snappy-wasm.ts writes it to snappy.wasm), about
 * twice as fast as hyparquet's JavaScript snappy. The Worker
 * imports the file, so that wrangler compiles it at deploy time (workerd refuses to
 * compile WebAssembly at run time, which is how hysnappy itself loads it); the Node
 * server compiles its bytes (`snappyModuleFromFile`).
 *
 * The page comes back as a view of the module's memory, not a copy: it is valid until
 * the next call. src/parquet/pages.ts decodes every page before it decompresses the next,
 * so a full export skips copying 80 MB out of WebAssembly memory; nothing else may be
 * given this decompressor.
 */
import type { Compressors } from 'hyparquet'

interface SnappyExports {
  memory: WebAssembly.Memory
  uncompress(input: number, inputLength: number, output: number): number
}

/** Where input is copied in the module's memory: past what its C runtime uses (hysnappy's layout). */
const INPUT_START = 68_000
const PAGE = 64 * 1024

const ERRORS: Record<number, string> = { [-1]: 'invalid snappy length header', [-2]: 'missing eof marker', [-3]: 'premature end of input' }

/** A snappy decompressor over one instance of the module; see the contract above. */
export function wasmSnappy(module: WebAssembly.Module): NonNullable<Compressors['SNAPPY']> {
  const { memory, uncompress } = new WebAssembly.Instance(module).exports as unknown as SnappyExports
  return (input, outputLength) => {
    // 8-aligned, so the page decoder can copy fixed-width values by whole words.
    const outputStart = (INPUT_START + input.byteLength + 7) & ~7
    const needed = outputStart + outputLength
    if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / PAGE))
    const bytes = new Uint8Array(memory.buffer)
    bytes.set(input, INPUT_START)
    const result = uncompress(INPUT_START, input.byteLength, outputStart)
    if (result !== 0) throw new Error(ERRORS[result] ?? `snappy: failed to uncompress (${result})`)
    return bytes.subarray(outputStart, needed)
  }
}

/** The module compiled from snappy.wasm beside this file (Node; a Worker imports the file instead). */
export async function snappyModuleFromFile(): Promise<WebAssembly.Module> {
  const { readFile } = await import('node:fs/promises')
  return new WebAssembly.Module(await readFile(new URL('./snappy.wasm', import.meta.url)))
}

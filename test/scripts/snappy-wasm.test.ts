import { readFile } from 'node:fs/promises'
import { snappyCompress } from 'hyparquet-writer/src/snappy.js'
import { describe, expect, it } from 'vitest'
import { mulberry32 } from '../../scripts/dev/random.ts'
import { hysnappyWasm, SNAPPY_WASM, snappyWasm, withBulkCopies } from '../../scripts/snappy-wasm.ts'
import { wasmSnappy } from '../../src/parquet/snappy.ts'

/** Random bytes (all literals), runs of one byte (copies that overlap what they write) and a mix. */
function samples(): Uint8Array[] {
  const r = mulberry32(11)
  return [
    Uint8Array.from({ length: 200_000 }, () => Math.floor(r() * 256)),
    new Uint8Array(70_000).fill(0x5a),
    Uint8Array.from({ length: 500_000 }, (_, i) => (r() < 0.3 ? Math.floor(r() * 256) : (i >> 3) % 11)),
    Uint8Array.of(1, 2, 3),
  ]
}

describe('src/parquet/snappy.wasm', () => {
  it('is hysnappy’s module with bulk copies (rerun scripts/snappy-wasm.ts after upgrading hysnappy)', async () => {
    const committed = new Uint8Array(await readFile(SNAPPY_WASM))
    expect(committed.length).toBeGreaterThan(1000)
    expect(committed).toEqual(await snappyWasm())
  })

  it('decompresses byte for byte as hysnappy’s own module, with memcpy and memmove one memory.copy each', async () => {
    const original = await hysnappyWasm()
    const rewritten = withBulkCopies(original)
    expect(WebAssembly.validate(rewritten)).toBe(true)
    expect(rewritten.length).toBeLessThan(original.length)
    const exportsOf = (bytes: Uint8Array<ArrayBuffer>) => WebAssembly.Module.exports(new WebAssembly.Module(bytes))
    expect(exportsOf(rewritten)).toEqual(exportsOf(original))
    const before = wasmSnappy(new WebAssembly.Module(original))
    const after = wasmSnappy(new WebAssembly.Module(rewritten))
    for (const input of samples()) {
      const packed = snappyCompress(input)
      const expected = before(packed, input.length).slice()
      expect(expected).toEqual(input)
      expect(after(packed, input.length)).toEqual(expected)
    }
  })

  it('refuses a module without an exported memcpy', () => {
    const empty = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0)
    expect(() => withBulkCopies(empty)).toThrow(/section is missing/)
    expect(() => withBulkCopies(OTHER_ONLY)).toThrow(/no exported function memcpy/)
  })
})

/** A module with one function `(i32, i32, i32) -> i32`, exported as `other`. */
const OTHER_ONLY = Uint8Array.of(
  ...[0, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
  ...[1, 8, 1, 0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7f],
  ...[3, 2, 1, 0],
  ...[7, 9, 1, 5, ...new TextEncoder().encode('other'), 0, 0],
  ...[10, 6, 1, 4, 0, 0x20, 0, 0x0b],
)

import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { HEX_WASM, hexWasm } from '../../scripts/hex-wasm.ts'

describe('src/format/hex.wasm', () => {
  it('is the module scripts/hex-wasm.ts assembles (rerun it after changing the text there)', async () => {
    const committed = new Uint8Array(await readFile(HEX_WASM))
    const assembled = await hexWasm()
    expect(WebAssembly.validate(assembled)).toBe(true)
    expect(committed).toEqual(assembled)
    const exported = WebAssembly.Module.exports(new WebAssembly.Module(committed)).map(e => `${e.kind} ${e.name}`)
    expect(exported.sort()).toEqual(['function binary', 'function compact', 'function fixed', 'function text', 'memory memory'])
  })
})

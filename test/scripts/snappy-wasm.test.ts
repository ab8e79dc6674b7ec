import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { hysnappyWasm, SNAPPY_WASM } from '../../scripts/snappy-wasm.ts'

describe('src/parquet/snappy.wasm', () => {
  it('is the module hysnappy embeds (rerun scripts/snappy-wasm.ts after upgrading it)', async () => {
    const committed = new Uint8Array(await readFile(SNAPPY_WASM))
    expect(committed.length).toBeGreaterThan(1000)
    expect(committed).toEqual(await hysnappyWasm())
  })
})

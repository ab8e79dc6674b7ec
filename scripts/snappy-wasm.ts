/**
 * Writes src/parquet/snappy.wasm: hysnappy's snappy decompressor (the one
 * hyparquet-compressors uses), as a file. hysnappy ships it as base64
 * and compiles it at run time, which production workerd refuses; a Worker may only
 * instantiate a module compiled at deploy time, i.e. one imported as a `.wasm` file.
 * Run after upgrading hysnappy: `npx node scripts/snappy-wasm.ts`
 * (test/scripts/snappy-wasm.test.ts fails while the two differ).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { cliArgs } from './args.ts'

/** The wasm bytes hysnappy embeds in its uncompressor. */
export async function hysnappyWasm(): Promise<Uint8Array> {
  const dir = dirname(createRequire(import.meta.url).resolve('hysnappy/package.json'))
  const source = await readFile(join(dir, 'js', 'uncompress.js'), 'utf8')
  const match = /const wasm64 = '([A-Za-z0-9+/=]+)'/.exec(source)
  if (!match) throw new Error('hysnappy/js/uncompress.js no longer embeds its wasm as expected')
  return Uint8Array.from(atob(match[1]), c => c.charCodeAt(0))
}

export const SNAPPY_WASM = new URL('../src/parquet/snappy.wasm', import.meta.url)

if (import.meta.url === `file://${process.argv[1]}`) {
  cliArgs({}, 'usage: npx node scripts/snappy-wasm.ts   (rewrites src/parquet/snappy.wasm from hysnappy)')
  await writeFile(SNAPPY_WASM, await hysnappyWasm())
  console.log(`wrote ${SNAPPY_WASM.pathname}`)
}

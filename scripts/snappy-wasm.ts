/**
 * Writes src/parquet/snappy.wasm: hysnappy's snappy decompressor (the one
 * hyparquet-compressors uses), as a file. hysnappy ships it as base64
 * and compiles it at run time, which production workerd refuses; a Worker may only
 * instantiate a module compiled at deploy time, i.e. one imported as a `.wasm` file.
 *
 * Its C runtime's `memcpy` and `memmove` copy a byte at a time, and literal runs are
 * copied with them: random bytes (hashes) are all literals. The file has their bodies
 * replaced by WebAssembly's `memory.copy` (memmove's meaning, at native speed); nothing
 * else changes.
 *
 * Run after upgrading hysnappy: `npx node scripts/snappy-wasm.ts`
 * (test/scripts/snappy-wasm.test.ts fails while the two differ).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { cliArgs } from './args.ts'

/** The wasm bytes hysnappy embeds in its uncompressor. */
export async function hysnappyWasm(): Promise<Uint8Array<ArrayBuffer>> {
  const dir = dirname(createRequire(import.meta.url).resolve('hysnappy/package.json'))
  const source = await readFile(join(dir, 'js', 'uncompress.js'), 'utf8')
  const match = /const wasm64 = '([A-Za-z0-9+/=]+)'/.exec(source)
  if (!match) throw new Error('hysnappy/js/uncompress.js no longer embeds its wasm as expected')
  return Uint8Array.from(atob(match[1]), c => c.charCodeAt(0))
}

const SECTION = { type: 1, import: 2, function: 3, export: 7, code: 10 }
const I32 = 0x7f
/** `(local.get 0) (local.get 1) (local.get 2) (memory.copy) (local.get 0)`: no locals, returns the destination. */
const BULK_COPY_BODY = Uint8Array.of(0x00, 0x20, 0, 0x20, 1, 0x20, 2, 0xfc, 0x0a, 0, 0, 0x20, 0, 0x0b)

function leb(n: number): number[] {
  const out: number[] = []
  do {
    const byte = n & 0x7f
    n >>>= 7
    out.push(n === 0 ? byte : byte | 0x80)
  } while (n !== 0)
  return out
}

/** A reader of the module's bytes, for the few structures this rewrite looks into. */
class Reader {
  readonly bytes: Uint8Array
  p: number
  constructor(bytes: Uint8Array, p = 0) {
    this.bytes = bytes
    this.p = p
  }
  u32(): number {
    let result = 0
    for (let shift = 0; ; shift += 7) {
      const byte = this.bytes[this.p++]
      if (byte === undefined) throw new Error('snappy wasm: truncated')
      result += (byte & 0x7f) * 2 ** shift
      if (byte < 0x80) return result
    }
  }
  /** A vector of bytes (a name's UTF-8, a function type's value types). */
  bytesVec(): Uint8Array {
    const n = this.u32()
    return this.bytes.subarray(this.p, (this.p += n))
  }
  name(): string {
    return new TextDecoder().decode(this.bytesVec())
  }
}

interface Section {
  id: number
  body: Uint8Array
}

function sectionsOf(wasm: Uint8Array): Section[] {
  const r = new Reader(wasm, 8)
  const out: Section[] = []
  while (r.p < wasm.length) {
    const id = wasm[r.p++]
    const size = r.u32()
    out.push({ id, body: wasm.subarray(r.p, (r.p += size)) })
  }
  return out
}

/** Function indexes of the exported functions `names`. */
function exportedFunctions(exports: Uint8Array, names: readonly string[]): number[] {
  const r = new Reader(exports)
  const found = new Map<string, number>()
  for (let n = r.u32(); n > 0; n--) {
    const name = r.name()
    const kind = exports[r.p++]
    const index = r.u32()
    if (kind === 0) found.set(name, index)
  }
  return names.map(name => {
    const index = found.get(name)
    if (index === undefined) throw new Error(`snappy wasm: no exported function ${name}`)
    return index
  })
}

/** Whether function `index` takes three i32 and returns one, as memcpy and memmove do. */
function isCopySignature(types: Uint8Array, functions: Uint8Array, index: number): boolean {
  const f = new Reader(functions)
  const count = f.u32()
  if (index >= count) return false
  for (let k = 0; k < index; k++) f.u32()
  const typeIndex = f.u32()
  const t = new Reader(types)
  t.u32()
  for (let k = 0; ; k++) {
    if (types[t.p++] !== 0x60) return false
    const params = t.bytesVec()
    const results = t.bytesVec()
    if (k === typeIndex) return params.length === 3 && params.every(b => b === I32) && results.length === 1 && results[0] === I32
  }
}

/** The module with the bodies of its exported `memcpy` and `memmove` made one `memory.copy`. */
export function withBulkCopies(wasm: Uint8Array): Uint8Array<ArrayBuffer> {
  const sections = sectionsOf(wasm)
  const one = (id: number) => sections.find(s => s.id === id)?.body
  // With imported functions, function indexes would not start at the code section's first body.
  if (one(SECTION.import) !== undefined) throw new Error('snappy wasm: the module now imports; update this rewrite')
  const [types, functions, exports, code] = [one(SECTION.type), one(SECTION.function), one(SECTION.export), one(SECTION.code)]
  if (!types || !functions || !exports || !code) throw new Error('snappy wasm: a type, function, export or code section is missing')
  const copies = new Set(exportedFunctions(exports, ['memcpy', 'memmove']))
  for (const index of copies)
    if (!isCopySignature(types, functions, index)) throw new Error('snappy wasm: memcpy or memmove has an unexpected signature')

  const r = new Reader(code)
  const count = r.u32()
  const bodies: number[] = [...leb(count)]
  for (let index = 0; index < count; index++) {
    const size = r.u32()
    const body = code.subarray(r.p, (r.p += size))
    const kept = copies.has(index) ? BULK_COPY_BODY : body
    bodies.push(...leb(kept.length), ...kept)
  }
  const out: number[] = [...wasm.subarray(0, 8)]
  for (const s of sections) {
    const body = s.id === SECTION.code ? bodies : [...s.body]
    out.push(s.id, ...leb(body.length), ...body)
  }
  return Uint8Array.from(out)
}

/** What src/parquet/snappy.wasm holds: hysnappy's module with bulk copies. */
export async function snappyWasm(): Promise<Uint8Array<ArrayBuffer>> {
  return withBulkCopies(await hysnappyWasm())
}

export const SNAPPY_WASM = new URL('../src/parquet/snappy.wasm', import.meta.url)

if (import.meta.url === `file://${process.argv[1]}`) {
  cliArgs({}, 'usage: npx node scripts/snappy-wasm.ts   (rewrites src/parquet/snappy.wasm from hysnappy)')
  await writeFile(SNAPPY_WASM, await snappyWasm())
  console.log(`wrote ${SNAPPY_WASM.pathname}`)
}

/**
 * Writes src/format/hex.wasm: the text encoders' hex digits in WebAssembly SIMD
 * (src/format/hex-kernel.ts says how they use it). The module is written here as text
 * and assembled by wabt, so what it does is read here, not in the binary; a Worker may
 * only instantiate a module compiled at deploy time, so the binary is a file the
 * bundle imports.
 *
 * Sixteen bytes become 32 digits in a few vector instructions: each byte's high and low
 * nibbles pick their digits from a 16-byte table (`i8x16.swizzle`), and two shuffles
 * interleave them. A value of 16 bytes or more ends with the 16 bytes before its end, so
 * the last digits are written once more instead of one at a time (addresses: 20 bytes).
 *
 * Run after changing the text below: `npx node scripts/hex-wasm.ts`
 * (test/scripts/hex-wasm.test.ts fails while the file differs).
 */
import { writeFile } from 'node:fs/promises'
import { cliArgs } from './args.ts'

/** Digits of the 16 bytes at `src` stored at `dst` (32 bytes), through the locals every function below declares. */
const hex16 = (src: string, dst: string) => `
    (local.set $v (v128.load align=1 ${src}))
    (local.set $hi (i8x16.swizzle (local.get $digits) (i8x16.shr_u (local.get $v) (i32.const 4))))
    (local.set $lo (i8x16.swizzle (local.get $digits) (v128.and (local.get $v) (local.get $nibble))))
    (local.set $d ${dst})
    (v128.store align=1 (local.get $d) (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $hi) (local.get $lo)))
    (v128.store offset=16 align=1 (local.get $d) (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $hi) (local.get $lo)))`

/** The SIMD locals and the digit table and nibble mask they start with. */
const VECTORS = `
    (local $v v128) (local $hi v128) (local $lo v128) (local $digits v128) (local $nibble v128) (local $d i32)
    (local.set $digits (v128.load (i32.const 0)))
    (local.set $nibble (i8x16.splat (i32.const 15)))`

/**
 * `0x` (or `"0x` when quoted) at row r's position, then the digits of `$n` bytes from `$s`,
 * then `"` when quoted; the position moves past it. `$p` holds the position.
 */
const VALUE = `
    (local.set $p (i32.load (local.get $pos)))
    (if (local.get $quoted)
      (then (i32.store align=1 (local.get $p) (i32.const 0x783022)) (local.set $p (i32.add (local.get $p) (i32.const 3))))
      (else (i32.store16 align=1 (local.get $p) (i32.const 0x7830)) (local.set $p (i32.add (local.get $p) (i32.const 2)))))
    (local.set $k (i32.const 0))
    (block $whole (loop $chunk
      (br_if $whole (i32.gt_u (i32.add (local.get $k) (i32.const 16)) (local.get $n)))
      ${hex16('(i32.add (local.get $s) (local.get $k))', '(i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 1)))')}
      (local.set $k (i32.add (local.get $k) (i32.const 16)))
      (br $chunk)))
    (if (i32.lt_u (local.get $k) (local.get $n))
      (then
        (if (i32.ge_u (local.get $n) (i32.const 16))
          (then ${hex16(
            '(i32.sub (i32.add (local.get $s) (local.get $n)) (i32.const 16))',
            '(i32.sub (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 1))) (i32.const 32))',
          )})
          (else (loop $byte
            (local.set $b (i32.load8_u (i32.add (local.get $s) (local.get $k))))
            (local.set $d (i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 1))))
            (i32.store8 (local.get $d) (i32.load8_u (i32.shr_u (local.get $b) (i32.const 4))))
            (i32.store8 offset=1 (local.get $d) (i32.load8_u (i32.and (local.get $b) (i32.const 15))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br_if $byte (i32.lt_u (local.get $k) (local.get $n))))))))
    (local.set $p (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 1))))
    (if (local.get $quoted) (then (i32.store8 (local.get $p) (i32.const 34)) (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (i32.store (local.get $pos) (local.get $p))`

/** Loops `body` over rows [0, $rows), skipping a row whose validity byte is 0 (`$valid` 0: every row valid); `step` moves to the next row's value. */
const ROWS = (body: string, step: string) => `
    (local.set $end (i32.add (local.get $pos) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done (loop $row
      (br_if $done (i32.ge_u (local.get $pos) (local.get $end)))
      (if (i32.or (i32.eqz (local.get $valid)) (i32.load8_u (local.get $valid))) (then ${body}))
      ${step}
      (local.set $pos (i32.add (local.get $pos) (i32.const 4)))
      (if (local.get $valid) (then (local.set $valid (i32.add (local.get $valid) (i32.const 1)))))
      (br $row)))`

/** The module's text: memory (the digit table at 0), `fixed`, `binary`, `text` and `compact`. */
export const HEX_WAT = `(module
  (memory (export "memory") 1)
  (data (i32.const 0) "0123456789abcdef")

  ;; Rows of $width bytes from $src, the value of row r written at the i32 position at $pos + 4r.
  (func (export "fixed") (param $width i32) (param $rows i32) (param $src i32) (param $pos i32) (param $valid i32) (param $quoted i32)
    (local $end i32) (local $p i32) (local $k i32) (local $s i32) (local $n i32) (local $b i32) ${VECTORS}
    (local.set $n (local.get $width))
    (local.set $s (local.get $src))
    ${ROWS(VALUE, '(local.set $s (i32.add (local.get $s) (local.get $width)))')})

  ;; Rows of variable length: row r's bytes are [$offsets[r], $offsets[r + 1]) less $offsets[0], from $src.
  (func (export "binary") (param $rows i32) (param $offsets i32) (param $src i32) (param $pos i32) (param $valid i32) (param $quoted i32)
    (local $end i32) (local $p i32) (local $k i32) (local $s i32) (local $n i32) (local $b i32) ${VECTORS}
    (local.set $src (i32.sub (local.get $src) (i32.load (local.get $offsets))))
    ${ROWS(
      `
    (local.set $s (i32.add (local.get $src) (i32.load (local.get $offsets))))
    (local.set $n (i32.sub (i32.load offset=4 (local.get $offsets)) (i32.load (local.get $offsets))))
    ${VALUE}`,
      '(local.set $offsets (i32.add (local.get $offsets) (i32.const 4)))',
    )})

  ;; $len bytes from $src at each of the $rows positions at $pos, 8 at a time (up to 7 bytes past them), each position moved past its text.
  (func (export "text") (param $rows i32) (param $pos i32) (param $src i32) (param $len i32)
    (local $end i32) (local $p i32) (local $k i32)
    (local.set $end (i32.add (local.get $pos) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done (loop $row
      (br_if $done (i32.ge_u (local.get $pos) (local.get $end)))
      (local.set $p (i32.load (local.get $pos)))
      (local.set $k (i32.const 0))
      (block $copied (loop $word
        (br_if $copied (i32.ge_u (local.get $k) (local.get $len)))
        (i64.store align=1 (i32.add (local.get $p) (local.get $k)) (i64.load align=1 (i32.add (local.get $src) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 8)))
        (br $word)))
      (i32.store (local.get $pos) (i32.add (local.get $p) (local.get $len)))
      (local.set $pos (i32.add (local.get $pos) (i32.const 4)))
      (br $row))))

  ;; Moves rows [$starts[r], $ends[r]) together from $to, in order; returns where the last ends.
  (func (export "compact") (param $rows i32) (param $starts i32) (param $ends i32) (param $to i32) (result i32)
    (local $s i32) (local $n i32) (local $end i32)
    (local.set $end (i32.add (local.get $starts) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done (loop $row
      (br_if $done (i32.ge_u (local.get $starts) (local.get $end)))
      (local.set $s (i32.load (local.get $starts)))
      (local.set $n (i32.sub (i32.load (local.get $ends)) (local.get $s)))
      (if (i32.ne (local.get $s) (local.get $to)) (then (memory.copy (local.get $to) (local.get $s) (local.get $n))))
      (local.set $to (i32.add (local.get $to) (local.get $n)))
      (local.set $starts (i32.add (local.get $starts) (i32.const 4)))
      (local.set $ends (i32.add (local.get $ends) (i32.const 4)))
      (br $row)))
    (local.get $to))
)`

/** The module assembled from HEX_WAT. */
export async function hexWasm(): Promise<Uint8Array<ArrayBuffer>> {
  const { default: wabt } = await import('wabt')
  const module = (await wabt()).parseWat('hex.wat', HEX_WAT, { simd: true, bulk_memory: true })
  try {
    module.validate()
    return Uint8Array.from(module.toBinary({}).buffer)
  } finally {
    module.destroy()
  }
}

export const HEX_WASM = new URL('../src/format/hex.wasm', import.meta.url)

if (import.meta.url === `file://${process.argv[1]}`) {
  cliArgs({}, 'usage: npx node scripts/hex-wasm.ts   (writes src/format/hex.wasm from the text in this script)')
  await writeFile(HEX_WASM, await hexWasm())
  console.log(`wrote ${HEX_WASM.pathname}`)
}

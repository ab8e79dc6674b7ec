/**
 * Scanner options of a Worker isolate (the app and the live Durable Object): the wasm
 * snappy module wrangler compiled at deploy time, and a cache of partition tails.
 */
import { wasmSnappy } from '../parquet/snappy.ts'
import snappyModule from '../parquet/snappy.wasm'
import { TailCache } from '../query/io.ts'
import type { ScanOptions } from '../query/scan.ts'

export function workerScan(): ScanOptions {
  return { compressors: { SNAPPY: wasmSnappy(snappyModule) }, tails: new TailCache() }
}

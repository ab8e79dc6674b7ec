/**
 * Cache directories for bench data worth keeping between runs (a 1M-log lake takes
 * ~20 s to write). A directory's name carries a hash of the code that writes the
 * data, so a change to the writer or the lake generator builds a fresh one; the
 * copies made by older code are removed when the fresh one is named.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

/** Files whose content decides the bench lakes' bytes. */
export const LAKE_SOURCES = [
  'src/parquet/write.ts',
  'src/parquet/row-groups.ts',
  'src/parquet/lookup.ts',
  'src/parquet/put.ts',
  'bench/lib/lake.ts',
  'scripts/dev/random.ts',
  'src/datasets/evm.ts',
  'src/schema/kinds.ts',
  'src/manifest/codec.ts',
  'src/index/build.ts',
  'src/index/format.ts',
  'src/index/hash.ts',
  'src/index/merge.ts',
  'src/index/publish.ts',
  'src/index/rows.ts',
  'src/index/tiers.ts',
]

/** A short hash of those of `files` (relative to `root`) that exist. */
export function sourceHash(root: string, files: readonly string[]): string {
  const hash = createHash('sha256')
  for (const f of files) {
    try {
      hash.update(f).update(readFileSync(join(root, f)))
    } catch {
      hash.update(`${f} absent`)
    }
  }
  return hash.digest('hex').slice(0, 10)
}

/** `<cache>/<name>-<hash>`, after removing `<name>-*` directories left by other code. */
export function cacheDir(cache: string, name: string, hash: string): string {
  const keep = `${name}-${hash}`
  for (const e of readdirSync(cache, { withFileTypes: true })) {
    if (e.isDirectory() && e.name !== keep && e.name.startsWith(`${name}-`) && /^[0-9a-f]{10}$/.test(e.name.slice(name.length + 1))) {
      rmSync(join(cache, e.name), { recursive: true, force: true })
    }
  }
  return join(cache, keep)
}

/** The directory of a lake of `logs` logs, for the current writer; `shape` names lakes of another shape, kept apart. */
export function lakeDir(root: string, cache: string, logs: number, shape = ''): string {
  return cacheDir(cache, `lake-${logs}${shape && `-${shape}`}`, sourceHash(root, LAKE_SOURCES))
}

/** File-system stores in fresh temp directories, removed together after a suite. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'

const dirs: string[] = []

/** A file-system store in a fresh temp directory (removed by `removeTempDirs`). */
export async function tempStore(): Promise<{ store: ObjectStore; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'lake-'))
  dirs.push(dir)
  return { store: fsStore(dir), dir }
}

/** Removes every directory `tempStore` made. */
export const removeTempDirs = () => Promise.all(dirs.splice(0).map(d => rm(d, { recursive: true, force: true })))

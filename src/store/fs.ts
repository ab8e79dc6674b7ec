/**
 * Local file-system `ObjectStore` rooted at a directory: key `a/b.parquet` is the file
 * `<root>/a/b.parquet`. For development, tests and single-machine deployments.
 *
 * Writes go to a temp file (fsynced) that is renamed over the key, so readers see the
 * old or the new object, never a torn one. Every write and delete of a key holds an
 * exclusive lock file for that key (`open(..., 'wx')`), so conditional puts are atomic
 * across processes sharing the directory (two ingesters). A lock older than
 * `staleLockMs` is taken to be left by a crashed writer and broken.
 *
 * ETag = file mtime (ns) + size + inode. Under the key's lock each write gives the new
 * file an mtime strictly later than the one it replaces, so an etag never repeats for a
 * key even when two writes land in the same clock tick (Linux file times are only as
 * fine as the kernel tick) with the same size. A content hash would need the whole file
 * read on every `head`/`get` or a sidecar that is not updated atomically with the data;
 * the timestamp costs one `stat`.
 *
 * Temp files and locks live under `<root>/.objectstore/`, a reserved name no key may
 * start with. A key cannot also be a folder of other keys (`a` and `a/b`): putting one
 * when the other exists throws. `contentType` is not stored. Empty folders left by
 * deletes are not removed.
 */
import { link, mkdir, open, readdir, rename, rm, stat, unlink, utimes } from 'node:fs/promises'
import type { BigIntStats } from 'node:fs'
import { createHash, randomUUID } from 'node:crypto'
import { dirname, join } from 'node:path'
import { checkRange, sliceOf } from './range.ts'
import { StorageError } from './types.ts'
import type { ByteRange, GetResult, ObjectInfo, ObjectStore, PutOptions } from './types.ts'

/** Lock timing of `fsStore`. */
export interface FsStoreOptions {
  /** A key's lock older than this was left by a crashed writer and is broken (default 30,000 ms). */
  staleLockMs?: number
  /** Waiting longer than this for a key's lock fails with `StorageError` (default 60,000 ms). */
  lockTimeoutMs?: number
}

/** The reserved top-level folder holding temp files and locks. */
const META = '.objectstore'

/** An `ObjectStore` over the directory `root` (created on first write). */
export function fsStore(root: string, options: FsStoreOptions = {}): ObjectStore {
  const staleLockMs = options.staleLockMs ?? 30_000
  const lockTimeoutMs = options.lockTimeoutMs ?? 60_000
  const path = (key: string) => join(root, ...checkKey(key).split('/'))

  async function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lock = fsLockPath(root, key)
    await mkdir(dirname(lock), { recursive: true })
    const deadline = Date.now() + lockTimeoutMs
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      try {
        const fh = await open(lock, 'wx')
        await fh.writeFile(`${process.pid}\n`)
        await fh.close()
        break
      } catch (e) {
        if (code(e) !== 'EEXIST') throw e
      }
      await breakIfStale(lock, staleLockMs)
      if (Date.now() > deadline) throw new StorageError(`fs store: timed out waiting for the lock on ${key}`)
      await new Promise(resolve => setTimeout(resolve, wait))
    }
    try {
      return await fn()
    } finally {
      await unlink(lock).catch(() => {})
    }
  }

  return {
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      checkRange(range)
      const file = path(key)
      return io('get', key, async () => {
        const fh = await open(file, 'r').catch(e => (isMissing(e) ? null : Promise.reject(e)))
        if (!fh) return null
        try {
          const st = await fh.stat({ bigint: true })
          if (!st.isFile()) return null
          const size = Number(st.size)
          const slice = sliceOf(range, size)
          // Lent memory is reused memory: fresh pages cost more to fill than the read itself (BENCHMARKS.md run O6).
          const into = range && 'into' in range ? range.into : undefined
          const body = into && into.length >= slice.length ? into.subarray(0, slice.length) : new Uint8Array(slice.length)
          for (let done = 0; done < slice.length;) {
            const { bytesRead } = await fh.read(body, done, slice.length - done, slice.offset + done)
            if (bytesRead === 0) throw new Error('file shorter than its size')
            done += bytesRead
          }
          return { key, size, etag: etagOf(st), body, offset: slice.offset }
        } finally {
          await fh.close()
        }
      })
    },

    async head(key: string): Promise<ObjectInfo | null> {
      const file = path(key)
      return io('head', key, async () => {
        const st = await statOrNull(file)
        return st?.isFile() ? infoOf(key, st) : null
      })
    },

    async put(key: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo | null> {
      const file = path(key)
      const tmp = join(root, META, 'tmp', randomUUID())
      let placed = false
      return io('put', key, async () => {
        try {
          await mkdir(dirname(tmp), { recursive: true })
          const fh = await open(tmp, 'wx')
          try {
            await fh.writeFile(body)
            await fh.sync()
          } finally {
            await fh.close()
          }
          return await withLock(key, async () => {
            const found = await statOrNull(file)
            const current = found?.isFile() ? found : null
            if (options.ifNoneMatch === '*' && current) return null
            if (options.ifMatch !== undefined && (!current || etagOf(current) !== options.ifMatch)) return null
            const written = await laterThan(tmp, current)
            await mkdir(dirname(file), { recursive: true }).catch(e => Promise.reject(conflict(key, e)))
            await rename(tmp, file).catch(e => Promise.reject(conflict(key, e)))
            placed = true
            return infoOf(key, written)
          })
        } finally {
          if (!placed) await rm(tmp, { force: true })
        }
      })
    },

    async list(prefix: string): Promise<ObjectInfo[]> {
      checkPrefix(prefix)
      const cut = prefix.lastIndexOf('/')
      const out: ObjectInfo[] = []
      async function walk(dirKey: string, namePrefix: string): Promise<void> {
        const dir = dirKey ? join(root, ...dirKey.split('/')) : root
        const entries = await readdir(dir, { withFileTypes: true }).catch(e => (isMissing(e) ? [] : Promise.reject(e)))
        await Promise.all(
          entries.map(async entry => {
            if (!entry.name.startsWith(namePrefix) || (!dirKey && entry.name === META)) return
            const key = dirKey ? `${dirKey}/${entry.name}` : entry.name
            if (entry.isDirectory()) return walk(key, '')
            const st = await statOrNull(join(dir, entry.name))
            if (st?.isFile()) out.push(infoOf(key, st))
            else if (st?.isDirectory()) await walk(key, '')
          }),
        )
      }
      return io('list', prefix, async () => {
        await walk(cut < 0 ? '' : prefix.slice(0, cut), prefix.slice(cut + 1))
        return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      })
    },

    async delete(key: string): Promise<void> {
      const file = path(key)
      await io('delete', key, () =>
        withLock(key, () =>
          unlink(file).catch(e => {
            if (!isMissing(e) && code(e) !== 'EISDIR' && code(e) !== 'EPERM') throw e
          }),
        ),
      )
    },
  }
}

/**
 * Where the lock for `key` lives: `<root>/.objectstore/locks/<sha-256 of key>.lock`.
 * Exported so an operator (or a test) can find a lock left by a crashed writer.
 */
export function fsLockPath(root: string, key: string): string {
  return join(root, META, 'locks', `${createHash('sha256').update(key).digest('hex')}.lock`)
}

/** Rejects keys that are not plain relative `/`-separated paths (`..`, absolute, empty segments) or use the reserved folder. */
function checkKey(key: string): string {
  const segments = key.split('/')
  const bad = key.includes('\0') || key.includes('\\') || segments[0] === META || segments.some(s => s === '' || s === '.' || s === '..')
  if (bad) throw new TypeError(`invalid object key ${JSON.stringify(key)}`)
  return key
}

/** Like `checkKey` for all but the last segment, which is a partial name (possibly empty). */
function checkPrefix(prefix: string): void {
  const cut = prefix.lastIndexOf('/')
  if (prefix.includes('\0') || prefix.includes('\\') || (cut >= 0 && !isValidFolder(prefix.slice(0, cut)))) {
    throw new TypeError(`invalid key prefix ${JSON.stringify(prefix)}`)
  }
}

function isValidFolder(folder: string): boolean {
  const segments = folder.split('/')
  return segments[0] !== META && segments.every(s => s !== '' && s !== '.' && s !== '..')
}

function etagOf(st: BigIntStats): string {
  return `${st.mtimeNs.toString(36)}-${st.size.toString(36)}-${st.ino.toString(36)}`
}

function infoOf(key: string, st: BigIntStats): ObjectInfo {
  return { key, size: Number(st.size), etag: etagOf(st) }
}

/**
 * Makes `tmp`'s mtime strictly later than `current`'s (the file it will replace), so
 * their etags differ even within one clock tick; returns `tmp`'s final stats.
 */
async function laterThan(tmp: string, current: BigIntStats | null): Promise<BigIntStats> {
  let st = await stat(tmp, { bigint: true })
  for (let stepNs = 1000n; current && st.mtimeNs <= current.mtimeNs; stepNs *= 10n) {
    if (stepNs > 10_000_000_000n) throw new Error('file-system timestamps too coarse for etags')
    const seconds = Number(current.mtimeNs + stepNs) / 1e9
    await utimes(tmp, seconds, seconds)
    st = await stat(tmp, { bigint: true })
  }
  return st
}

/**
 * Breaks a lock whose file is older than `staleMs`. The lock is renamed aside first
 * (only one breaker wins the rename); if what was moved turns out to be a fresh lock
 * taken meanwhile, it is linked back unless yet another lock exists.
 */
async function breakIfStale(lock: string, staleMs: number): Promise<void> {
  const st = await stat(lock).catch(() => null)
  if (!st || Date.now() - st.mtimeMs < staleMs) return
  const grave = `${lock}.stale-${randomUUID()}`
  if (
    !(await rename(lock, grave).then(
      () => true,
      () => false,
    ))
  )
    return
  const moved = await stat(grave)
  if (moved.ino !== st.ino) await link(grave, lock).catch(() => {})
  await unlink(grave).catch(() => {})
}

async function statOrNull(file: string): Promise<BigIntStats | null> {
  return stat(file, { bigint: true }).catch(e => (isMissing(e) ? null : Promise.reject(e)))
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code
}

function isMissing(e: unknown): boolean {
  return code(e) === 'ENOENT' || code(e) === 'ENOTDIR'
}

/** A key that clashes with a folder of other keys (or the reverse): a layout error, not storage trouble. */
class KeyConflict extends Error {}

function conflict(key: string, e: unknown): Error {
  const c = code(e)
  if (c === 'ENOTDIR' || c === 'EISDIR' || c === 'EEXIST' || c === 'ENOTEMPTY') {
    return new KeyConflict(`fs store cannot hold ${JSON.stringify(key)}: it clashes with a folder or file of another key`, { cause: e })
  }
  return e as Error
}

/** Runs one store operation, turning I/O failures into `StorageError`. */
async function io<T>(op: string, key: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof StorageError || e instanceof KeyConflict) throw e
    throw new StorageError(`fs store: ${op} ${JSON.stringify(key)} failed: ${(e as Error).message}`, { cause: e })
  }
}

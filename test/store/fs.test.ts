import { afterAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { mkdtemp, mkdir, readdir, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fsStore, fsLockPath } from '../../src/store/fs.ts'
import { StorageError } from '../../src/store/types.ts'
import { objectStoreContract } from './contract.ts'

const dirs: string[] = []
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fs-store-'))
  dirs.push(dir)
  return dir
}
afterAll(() => Promise.all(dirs.map(d => rm(d, { recursive: true, force: true }))))

objectStoreContract('file system', async () => fsStore(await tempDir()))

describe('fsStore', () => {
  it('reads a slice into memory lent for it, and allocates when it is too short', async () => {
    const store = fsStore(await tempDir())
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 256)
    await store.put('a', bytes)
    const into = new Uint8Array(600).fill(7)
    const got = await store.get('a', { offset: 100, length: 500, into })
    expect(got!.body).toEqual(bytes.slice(100, 600))
    expect(got!.body.buffer).toBe(into.buffer)
    expect(into[500]).toBe(7)
    const short = new Uint8Array(10)
    const other = await store.get('a', { offset: 0, length: 500, into: short })
    expect(other!.body).toEqual(bytes.slice(0, 500))
    expect(other!.body.buffer).not.toBe(short.buffer)
  })

  it('rejects keys that would escape the root or hit its reserved folder', async () => {
    const store = fsStore(await tempDir())
    for (const key of ['', '../x', 'a/../../x', '/etc/passwd', 'a//b', 'a/./b', 'a/', 'a\\b', '.objectstore/locks/x']) {
      await expect(store.put(key, new Uint8Array(1)), key).rejects.toThrow(TypeError)
      await expect(store.get(key), key).rejects.toThrow(TypeError)
    }
    await expect(store.list('../')).rejects.toThrow(TypeError)
    await expect(store.list('a/../')).rejects.toThrow(TypeError)
  })

  it('keeps its temp files and locks out of listings and writes files where keys say', async () => {
    const root = await tempDir()
    const store = fsStore(root)
    await store.put('x/y.bin', new Uint8Array([1, 2]), { ifNoneMatch: '*' })
    expect((await store.list('')).map(o => o.key)).toEqual(['x/y.bin'])
    expect(await readdir(join(root, 'x'))).toEqual(['y.bin'])
    expect(await readdir(join(root, '.objectstore', 'tmp'))).toEqual([])
  })

  it('breaks a lock left by a crashed writer and times out on a live one', async () => {
    const root = await tempDir()
    const lock = fsLockPath(root, 'k')
    await mkdir(join(lock, '..'), { recursive: true })
    await writeFile(lock, '999999\n')
    const hourAgo = Date.now() / 1000 - 3600
    await utimes(lock, hourAgo, hourAgo)
    expect(await fsStore(root).put('k', new Uint8Array([1]))).toMatchObject({ size: 1 })

    await writeFile(lock, `${process.pid}\n`)
    const impatient = fsStore(root, { lockTimeoutMs: 50 })
    await expect(impatient.put('k', new Uint8Array([2]))).rejects.toThrow(StorageError)
    expect((await impatient.get('k'))!.body).toEqual(new Uint8Array([1]))
  })

  it('never repeats an etag across rapid same-size overwrites', async () => {
    // File times tick coarsely and freed inodes are reused at once, so without the
    // store forcing a later mtime, writes within one tick could repeat an old etag.
    const store = fsStore(await tempDir())
    const etags = new Set<string>()
    for (let i = 0; i < 100; i++) etags.add((await store.put('k', new Uint8Array([i % 256, i >> 8])))!.etag)
    expect(etags.size).toBe(100)
  })

  it('refuses a key that clashes with a folder of other keys, without calling it storage trouble', async () => {
    const store = fsStore(await tempDir())
    await store.put('a/b', new Uint8Array([1]))
    const err = await store.put('a', new Uint8Array([2])).catch(e => e)
    expect(err).toBeInstanceOf(Error)
    expect(err).not.toBeInstanceOf(StorageError)
    expect(await store.get('a')).toBeNull()
  })

  it('reports an unusable root as StorageError', async () => {
    const root = join(await tempDir(), 'a-file')
    await writeFile(root, 'not a directory')
    const store = fsStore(root)
    await expect(store.put('k', new Uint8Array([1]))).rejects.toThrow(StorageError)
  })

  it('serializes compare-and-swap updates from several processes on one directory', async () => {
    const root = await tempDir()
    const store = fsStore(root)
    await store.put('counter', new TextEncoder().encode('0'))
    const moduleUrl = new URL('../../src/store/fs.ts', import.meta.url).href
    // Each child says it is ready, then waits for 'go' so that all of them contend at once.
    const script = `
      import { fsStore } from ${JSON.stringify(moduleUrl)}
      import { existsSync, writeFileSync } from 'node:fs'
      const store = fsStore(${JSON.stringify(root)})
      writeFileSync(${JSON.stringify(root)} + '/ready-' + process.pid, '')
      while (!existsSync(${JSON.stringify(root)} + '/go')) await new Promise(r => setTimeout(r, 5))
      for (let done = 0; done < 40;) {
        const cur = await store.get('counter')
        const next = String(Number(new TextDecoder().decode(cur.body)) + 1)
        if (await store.put('counter', new TextEncoder().encode(next), { ifMatch: cur.etag })) done++
      }
    `
    const run = promisify(execFile)
    const children = [1, 2, 3].map(() => run(process.execPath, ['--input-type=module', '-e', script]))
    while ((await readdir(root)).filter(f => f.startsWith('ready-')).length < 3) await new Promise(r => setTimeout(r, 5))
    await writeFile(join(root, 'go'), '')
    await Promise.all(children)
    // Each of the 3 processes committed 40 increments; a lost update would leave fewer.
    expect(new TextDecoder().decode((await store.get('counter'))!.body)).toBe('120')
  })
})

/**
 * docs/examples cannot rot: every `js` block of javascript.md runs with Node and every
 * `sql` block of duckdb.md runs in DuckDB (over the files the page's `sh` block downloads
 * with curl), against the Node server over the bundled sample that `npm start` serves.
 * The blocks are read from the markdown here, never copied. A block fails the test when it
 * throws, writes to stderr, prints nothing, or (SQL) returns no rows.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseUsers } from '../../src/api/auth.ts'
import { startNodeServer, type NodeServer } from '../../src/node/server.ts'
import { fsStore } from '../../src/store/fs.ts'

const ROOT = resolve(import.meta.dirname, '..', '..')
const DOCS = join(ROOT, 'docs', 'examples')
/** Where the examples say the API is (`npm start`). */
const DOCUMENTED = '127.0.0.1:8787'
const run = promisify(execFile)

/** The fenced code blocks of a markdown page in `lang`. */
export async function codeBlocks(page: string, lang: string): Promise<string[]> {
  const text = await readFile(join(DOCS, page), 'utf8')
  return [...text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].filter(m => m[1] === lang).map(m => m[2])
}

let server: NodeServer
let work: string
const here = (code: string) => code.replaceAll(DOCUMENTED, new URL(server.url).host)

beforeAll(async () => {
  const store = fsStore(fileURLToPath(new URL('../../partitions-manifest/sample', import.meta.url)))
  server = await startNodeServer({ store, users: await parseUsers('dev:dev') })
  // Inside node_modules, so the examples' imports (apache-arrow) resolve as in a project of one's own.
  await mkdir(join(ROOT, 'node_modules', '.cache'), { recursive: true })
  work = await mkdtemp(join(ROOT, 'node_modules', '.cache', 'doc-examples-'))
})
afterAll(async () => {
  await server?.close()
  if (work) await rm(work, { recursive: true, force: true })
})

describe('docs/examples/javascript.md', async () => {
  const blocks = await codeBlocks('javascript.md', 'js')
  it('has examples', () => expect(blocks.length).toBeGreaterThanOrEqual(4))
  blocks.forEach((code, i) =>
    it(`block ${i + 1} runs and prints its answer: ${code
      .split('\n')
      .find(l => l.includes('console.log'))
      ?.trim()}`, async () => {
      const file = join(work, `example-${i + 1}.mjs`)
      await writeFile(file, here(code))
      const { stdout, stderr } = await run(process.execPath, [file], { cwd: work, timeout: 30_000 })
      expect(stderr).toBe('')
      expect(stdout.trim()).not.toBe('')
      // Every answer counts something: no example may count nothing.
      expect(stdout).not.toMatch(/^0 /)
    }),
  )
})

describe('docs/examples/duckdb.md', async () => {
  const [download, ...more] = await codeBlocks('duckdb.md', 'sh')
  const queries = await codeBlocks('duckdb.md', 'sql')
  it('has one download block and queries', () => {
    expect(more).toEqual([])
    expect(queries.length).toBeGreaterThanOrEqual(3)
  })
  beforeAll(() => run('sh', ['-e', '-c', here(download)], { cwd: work, timeout: 60_000 }))
  queries.forEach((sql, i) =>
    it(`query ${i + 1} returns rows: ${sql.split('\n')[0]}`, async () => {
      const db = await (await DuckDBInstance.create(':memory:')).connect()
      await db.run(`SET file_search_path = '${work}'`)
      const result = await db.runAndReadAll(sql)
      expect(result.getRows().length).toBeGreaterThan(0)
      expect(
        result
          .getRows()
          .flat()
          .every(v => v !== null),
      ).toBe(true)
    }),
  )
})

it('the curl and Python pages use the documented address and user', async () => {
  for (const [page, lang] of [
    ['curl.md', 'sh'],
    ['python.md', 'python'],
  ]) {
    const blocks = await codeBlocks(page, lang)
    expect(blocks.length).toBeGreaterThan(0)
    expect(blocks.every(b => b.includes(DOCUMENTED.split(':')[1]) && b.includes('dev'))).toBe(true)
  }
})

/**
 * The layer order of src/, bottom to top: a module imports only its own folder and
 * folders below it, so no two folders import each other and no layer reaches one
 * above it. Nothing under src/ imports benchmarks, scripts, tests or the tools only
 * they use (Miniflare, DuckDB). Fails naming every offending import.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importsOf, tsFiles } from './support/imports.ts'

const ROOT = resolve(import.meta.dirname, '..')
const SRC = join(ROOT, 'src')

/** Bottom first. Folders on one line share a level and must not import each other. */
export const LAYERS: readonly (readonly string[])[] = [
  ['schema'],
  ['chains'],
  ['datasets'],
  ['columns'],
  ['store'],
  ['manifest'],
  ['index'],
  ['parquet'],
  ['query'],
  ['format'],
  ['move', 'dex'],
  ['ingest'],
  ['api'],
  ['live'],
  ['http'],
  ['node', 'worker'],
  // Static files (the explorer page): no TypeScript, imports nothing.
  ['explorer'],
]

/** Packages the product never imports: they are for tests, benchmarks and local tools. */
const DEV_ONLY = ['miniflare', '@duckdb/node-api', 'vitest', 'wrangler', '@cloudflare/vitest-plugin', 's3rver']

const level = (folder: string): number => LAYERS.findIndex(l => l.includes(folder))
const folderOf = (path: string): string => relative(SRC, path).split('/')[0]

describe('src/ layers', () => {
  const edges: { from: string; to: string; spec: string }[] = []
  for (const file of tsFiles(SRC)) {
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) edges.push({ from: relative(ROOT, file), to: relative(ROOT, resolve(dirname(file), spec)), spec })
      else edges.push({ from: relative(ROOT, file), to: spec, spec })
    }
  }

  it('puts every folder of src/ in exactly one layer', () => {
    const folders = readdirSync(SRC).filter(n => statSync(join(SRC, n)).isDirectory())
    expect(folders.filter(f => level(f) < 0)).toEqual([])
    expect(LAYERS.flat().filter(f => !folders.includes(f))).toEqual([])
  })

  it('imports only down the layers (or within a folder)', () => {
    const up = edges
      .filter(e => e.to.startsWith('src/'))
      .filter(e => {
        const [a, b] = [folderOf(join(ROOT, e.from)), folderOf(join(ROOT, e.to))]
        return a !== b && level(b) >= level(a)
      })
      .map(e => `${e.from} imports ${e.spec}`)
    expect(up).toEqual([])
  })

  it('imports nothing outside src/ but packages, and no package only tests and tools use', () => {
    const outside = edges.filter(e => e.spec.startsWith('.') && !e.to.startsWith('src/')).map(e => `${e.from} imports ${e.spec}`)
    const devOnly = edges
      .filter(e => DEV_ONLY.some(p => e.spec === p || e.spec.startsWith(p + '/')))
      .map(e => `${e.from} imports ${e.spec}`)
    expect([...outside, ...devOnly]).toEqual([])
  })

  it('finds imports of every form it checks', () => {
    // Assembled, so this file's own text holds no import of these names.
    const text = [
      'import a from',
      "'x'\nimport type { B } from",
      "'../y.ts'\nexport { c } from",
      "'./z.ts'\nconst m = await import(",
      "'w')\nimport",
      "'side'",
    ].join(' ')
    expect(importsOf(text)).toEqual(['x', '../y.ts', './z.ts', 'w', 'side'])
  })
})

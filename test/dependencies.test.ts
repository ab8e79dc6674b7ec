/**
 * package.json matches the imports: every package the product (src/) imports is a
 * dependency and every dependency is imported by the product; every package that
 * scripts, benchmarks and tests import is declared; every dev dependency is used
 * (imported, resolved by name, or one of the tools named below with why).
 */
import { readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importsOf, tsFiles } from './support/imports.ts'

const ROOT = resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
}

/** Dev dependencies no file imports, and what they are for. */
const TOOLS: Record<string, string> = {
  node: 'the Node 22 runtime every script runs on',
  typescript: 'npm run typecheck and the lint',
  prettier: 'the formatter, run by npm run lint',
  wrangler: 'npm start, deploy and the Worker bundle',
  '@cloudflare/workers-types': 'the Workers types (tsconfig.json)',
  '@types/node': 'the Node types (tsconfig.json)',
  '@types/ws': 'the ws types',
  '@foundry-rs/anvil-linux-amd64': 'the anvil binary (Linux x64), resolved by platform in scripts/dev/devnet/anvil.ts',
  wscat: "the command-line client of docs/websocket.md's shell example (`npx wscat`), run as written by test/live",
}

/** The package an import specifier names (`@scope/name/sub` → `@scope/name`); null for relative and built-in ones. */
export function packageOf(spec: string): string | null {
  if (spec.startsWith('.') || spec.startsWith('node:') || spec.startsWith('cloudflare:') || builtinModules.includes(spec)) return null
  const parts = spec.split('/')
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

const packagesIn = (dirs: string[]): Map<string, string> => {
  const found = new Map<string, string>()
  for (const dir of dirs) {
    for (const file of tsFiles(join(ROOT, dir))) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        const name = packageOf(spec)
        if (name !== null && !found.has(name)) found.set(name, file.slice(ROOT.length + 1))
      }
    }
  }
  return found
}

describe('package.json', () => {
  const product = packagesIn(['src'])
  const rest = packagesIn(['scripts', 'bench', 'test'])
  const dependencies = Object.keys(pkg.dependencies)
  const devDependencies = Object.keys(pkg.devDependencies)

  it('declares every package the product imports as a dependency, and nothing else', () => {
    expect([...product].filter(([name]) => !dependencies.includes(name)).map(([name, file]) => `${name} (${file})`)).toEqual([])
    expect(dependencies.filter(name => !product.has(name))).toEqual([])
  })

  it('declares every package scripts, benchmarks and tests import', () => {
    expect(
      [...rest]
        .filter(([name]) => !dependencies.includes(name) && !devDependencies.includes(name))
        .map(([name, file]) => `${name} (${file})`),
    ).toEqual([])
  })

  it('uses every dev dependency', () => {
    const text = ['scripts', 'bench', 'test', 'src']
      .flatMap(dir => [...tsFiles(join(ROOT, dir))].map(f => readFileSync(f, 'utf8')))
      .join('\n')
    const unused = devDependencies.filter(name => !rest.has(name) && !product.has(name) && !(name in TOOLS) && !text.includes(`'${name}`))
    expect(unused).toEqual([])
  })

  it('pins exact versions', () => {
    expect(Object.entries({ ...pkg.dependencies, ...pkg.devDependencies }).filter(([, v]) => !/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(v))).toEqual(
      [],
    )
  })

  it('names packages as npm does', () => {
    expect(
      ['hono', 'hono/utils/mime', '@aws-sdk/client-s3', '@scope/x/y', './a.ts', 'node:fs', 'fs', 'cloudflare:workers'].map(packageOf),
    ).toEqual(['hono', 'hono', '@aws-sdk/client-s3', '@scope/x', null, null, null, null])
  })
})

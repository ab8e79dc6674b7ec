/** The import specifiers of TypeScript source, for the tests that check the layers and package.json. */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** Every static and dynamic import (and re-export) specifier of a TypeScript file. */
export function importsOf(text: string): string[] {
  const found = text.matchAll(
    /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g,
  )
  return [...found].map(m => m[1] ?? m[2] ?? m[3])
}

/** The .ts files under `dir`, node_modules left out. */
export function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (name === 'node_modules') continue
    if (statSync(path).isDirectory()) yield* tsFiles(path)
    else if (path.endsWith('.ts')) yield path
  }
}

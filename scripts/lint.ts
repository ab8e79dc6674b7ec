/**
 * `npm run lint`: the formatter's check (prettier, `.prettierrc.json`: 140 columns; `npm run
 * format` rewrites), the type check, and the house rules neither can see (`.ts` import
 * specifiers, no focused or skipped tests, no machine-specific paths). Exits 1 listing
 * every violation.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { cliArgs } from './args.ts'

cliArgs({}, 'usage: npm run lint   (prettier --check, tsc --noEmit and the house rules; exit 1 listing every violation)')

const root = new URL('..', import.meta.url).pathname
const DIRS = ['src', 'scripts', 'bench', 'test']

interface Rule {
  name: string
  test: (line: string, file: string) => boolean
  only?: (file: string) => boolean
}

const isTest = (file: string) => file.startsWith('test/')

const RULES: Rule[] = [
  { name: 'relative import without .ts extension', test: line => /from '\.\.?\/[^']*(?<!\.ts|\.json|\.mjs|\.js|\.wasm)'/.test(line) },
  { name: 'focused or skipped test', test: line => /\b(it|test|describe)\.(only|skip|todo)\b|\bx(it|describe)\(/.test(line), only: isTest },
  { name: 'machine-specific path', test: line => /['"`]\/work\/(shared|main)/.test(line) },
]

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) yield* files(path)
    else if (path.endsWith('.ts')) yield path
  }
}

const problems: string[] = []
for (const dir of DIRS) {
  for (const path of files(join(root, dir))) {
    const file = relative(root, path)
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const rule of RULES) {
          if ((!rule.only || rule.only(file)) && rule.test(line, file)) problems.push(`${file}:${i + 1}: ${rule.name}\n    ${line.trim()}`)
        }
      })
  }
}

const prettier = spawnSync(
  process.execPath,
  [join(root, 'node_modules/prettier/bin/prettier.cjs'), '--list-different', ...DIRS.map(d => `${d}/**/*.ts`), 'src/explorer/*.{js,css}'],
  { cwd: root, encoding: 'utf8' },
)
if (prettier.status !== 0) problems.push(`not formatted (npm run format):\n${prettier.stdout}${prettier.stderr}`)

const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root], { encoding: 'utf8' })
if (tsc.status !== 0) problems.push(`tsc --noEmit:\n${tsc.stdout}${tsc.stderr}`)

if (problems.length) {
  console.error(problems.join('\n'))
  console.error(`\n${problems.length} problem(s)`)
  process.exit(1)
}
console.log('lint: no problems')

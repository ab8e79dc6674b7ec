/**
 * Every error code the code can send is documented: HTTP codes in the README's error
 * table, WebSocket `error` message codes there or in docs/websocket.md (the table once
 * lacked four codes clients met). Codes are read from the source where they are given:
 * `new ApiError(status, code`, `invalidParameter(…, code)`, a session's `fail(code`,
 * `errorMessage(code`, `code: 'x'`.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..', '..')

async function sources(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) out.push(...(await sources(path)))
    else if (e.name.endsWith('.ts')) out.push(path)
  }
  return out
}

const PATTERNS = [
  /ApiError\(\s*\d{3},\s*'([a-z]+(?:_[a-z]+)+)'/g,
  /invalidParameter\((?:[^()]|\([^()]*\))*?,\s*'([a-z]+(?:_[a-z]+)+)',?\s*\)/g,
  /\b(?:fail|errorMessage)\(\s*'([a-z]+(?:_[a-z]+)*)'/g,
  /\bcode: '([a-z]+(?:_[a-z]+)+)'/g,
]

describe('error codes', () => {
  it('every code the source sends is in the README error table or docs/websocket.md', async () => {
    const codes = new Map<string, string>()
    for (const file of await sources(join(ROOT, 'src'))) {
      const text = await readFile(file, 'utf8')
      for (const re of PATTERNS) for (const m of text.matchAll(re)) codes.set(m[1], file.slice(ROOT.length + 1))
    }
    // The codes found include those of every kind of refusal: a pattern that stopped matching shows here.
    for (const known of ['no_data', 'unknown_parameter', 'unsupported_format', 'too_many_values', 'slow_consumer', 'uri_too_long'])
      expect([...codes.keys()]).toContain(known)
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
    const table = readme.slice(readme.indexOf('### Errors'), readme.indexOf('### Limits'))
    const websocket = await readFile(join(ROOT, 'docs', 'websocket.md'), 'utf8')
    const undocumented = [...codes].filter(([code]) => !table.includes(`\`${code}\``) && !websocket.includes(`\`${code}\``))
    expect(undocumented.map(([code, file]) => `${code} (${file})`)).toEqual([])
  })
})

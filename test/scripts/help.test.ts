/** Every command answers --help with its usage (exit 0) and an unknown option with one clear line and the usage (exit 2). */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '../..')
const COMMANDS = [
  'serve',
  'ingest',
  'reindex',
  'redecode',
  'devnet',
  'hash-password',
  'move-sample',
  'snappy-wasm',
  'hex-wasm',
  'start',
  'lint',
].map(name => `scripts/${name}.ts`)
const run = (script: string, arg: string) =>
  spawnSync(process.execPath, [script, arg], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] })

describe('command-line help', () => {
  it.each([...COMMANDS, 'bench/main.ts'])('%s --help prints its usage and exits 0', script => {
    const r = run(script, '--help')
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^usage: /)
    expect(r.stderr).not.toMatch(/ at /)
  })

  it.each(COMMANDS)('%s refuses an unknown option with exit 2, no stack trace', script => {
    const r = run(script, '--no-such-option=1')
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/^error: .*\nusage: /)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  })
})

import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { serveArgs } from '../../bench/lib/serve-command.ts'

const root = join(import.meta.dirname, '..', '..')

describe('serveArgs', () => {
  it('gives the serve script’s V8 flags before scripts/serve.ts, which Node accepts', () => {
    const args = serveArgs(root)
    expect(args.at(-1)).toBe(join(root, 'scripts', 'serve.ts'))
    expect(args).toContain('--max-semi-space-size=32')
    const help = spawnSync(process.execPath, [...args, '--help'], { encoding: 'utf8' })
    expect(help.status).toBe(0)
    expect(help.stdout).toMatch(/usage: npm run serve/)
  })

  it('refuses a serve script of another shape', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-command-'))
    try {
      await writeFile(join(dir, 'package.json'), JSON.stringify({ scripts: { serve: 'tsx src/main.ts' } }))
      expect(() => serveArgs(dir)).toThrow(/not "node \[flags\] scripts\/serve.ts"/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

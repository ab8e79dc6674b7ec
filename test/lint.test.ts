/** `npm test` enforces what `npm run lint` checks: the type check and the house rules. */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { expect, it } from 'vitest'

it('passes npm run lint (tsc --noEmit and the style rules)', () => {
  const root = join(import.meta.dirname, '..')
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'lint.ts')], { cwd: root, encoding: 'utf8' })
  expect(run.stderr + run.stdout).toMatch(/lint: no problems/)
  expect(run.status).toBe(0)
}, 180_000)

/** `npm run hash-password`: reads the password from standard input and prints an API_USERS entry that authenticates. */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { authenticate, parseUsers } from '../../src/api/auth.ts'
import { basic } from '../support/basic.ts'

const script = join(import.meta.dirname, '..', '..', 'scripts', 'hash-password.ts')

function run(args: string[], stdin: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    const child = execFile(process.execPath, [script, ...args], (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    )
    child.stdin!.end(stdin)
  })
}

describe('hash-password', () => {
  it('prints user:hash that API_USERS accepts for that password only', async () => {
    const { code, stdout } = await run(['--user', 'carol', '--iterations', '2000'], 'p@ss:w,rd\n')
    expect(code).toBe(0)
    const entry = stdout.trim()
    expect(entry).toMatch(/^carol:pbkdf2-sha256\$2000\$/)
    expect(entry).not.toContain('p@ss')
    const users = await parseUsers(entry)
    expect(await authenticate(basic('carol', 'p@ss:w,rd'), users)).toBe('carol')
    expect(await authenticate(basic('carol', 'p@ss:w,rd\n'), users)).toBe(null)
  })

  it('refuses an empty password and a user name that would break API_USERS', async () => {
    expect((await run([], '')).code).not.toBe(0)
    expect((await run(['--user', 'a,b'], 'x')).code).not.toBe(0)
  })
})

/** Helpers of the ingest CLI tests: argument errors, and `scripts/ingest.ts` run as a child process. */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { expect } from 'vitest'
import { parseIngestArgs, UsageError } from '../../src/ingest/cli.ts'

export const ROOT = resolve(import.meta.dirname, '../..')

export interface ScriptRun {
  code: number | null
  signal: string | null
  lines: string[]
  stderr: string
}

/** `onLine` sees each stdout line and can kill the process (SIGKILL) to simulate a crash. */
export function runIngestScript(args: string[], onLine?: (line: string, kill: () => void) => void): Promise<ScriptRun> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts/ingest.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  let stderr = ''
  child.stderr.on('data', c => (stderr += c))
  createInterface({ input: child.stdout }).on('line', line => {
    lines.push(line)
    onLine?.(line, () => child.kill('SIGKILL'))
  })
  return new Promise(done => child.on('close', (code, signal) => done({ code, signal, lines, stderr })))
}

/** The message of the UsageError that `argv` gets; fails the test if the arguments are accepted. */
export function usageError(argv: string[]): string {
  try {
    parseIngestArgs(argv)
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError)
    return (e as Error).message
  }
  throw new Error('accepted')
}

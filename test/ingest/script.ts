/** Runs `scripts/ingest.ts` as a child process, as `npm run ingest` does, line by line. */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'

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

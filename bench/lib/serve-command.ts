/**
 * The Node server's command line as `npm run serve` gives it (package.json's `serve`
 * script): benchmarks start the server with the same V8 flags users get.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Node's arguments for `scripts/serve.ts` under `root`: the serve script's flags, then the script. */
export function serveArgs(root: string): string[] {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  const words = scripts.serve.split(/\s+/)
  const script = words.indexOf('scripts/serve.ts')
  if (words[0] !== 'node' || script < 0)
    throw new Error(`package.json's serve script is not "node [flags] scripts/serve.ts": ${scripts.serve}`)
  return [...words.slice(1, script), join(root, 'scripts', 'serve.ts')]
}

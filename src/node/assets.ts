/**
 * The explorer page's static files (src/explorer) on the Node server, as Workers static
 * assets serve them on Cloudflare: read once at start, every file of the folder but those
 * listed in its `.assetsignore`, `/` answering with index.html, before the API app (so
 * they need no credentials) and on every host.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'

export const EXPLORER_DIR = join(import.meta.dirname, '..', 'explorer')

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** The names served from `dir`: its files less `.assetsignore`'s (as wrangler reads it: one name a line). */
export function assetNames(dir: string = EXPLORER_DIR): string[] {
  const files = readdirSync(dir, { withFileTypes: true }).filter(f => f.isFile())
  const ignoreFile = files.some(f => f.name === '.assetsignore') ? readFileSync(join(dir, '.assetsignore'), 'utf8') : ''
  const ignored = new Set(ignoreFile.split('\n').map(l => l.trim()))
  return files.map(f => f.name).filter(name => !ignored.has(name))
}

/** A handler answering GET and HEAD of the folder's files; null for every other request. */
export function staticAssets(dir: string = EXPLORER_DIR): (request: Request) => Response | null {
  const files = new Map(
    assetNames(dir).map(name => [
      `/${name}`,
      { body: readFileSync(join(dir, name)), type: TYPES[extname(name)] ?? 'application/octet-stream' },
    ]),
  )
  const index = files.get('/index.html')
  if (index) files.set('/', index)
  return request => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return null
    const file = files.get(new URL(request.url).pathname)
    if (!file) return null
    const headers = {
      'content-type': file.type,
      'content-length': String(file.body.length),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    }
    return new Response(request.method === 'HEAD' ? null : file.body, { headers })
  }
}

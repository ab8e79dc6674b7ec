/**
 * The production Worker bundle, built as `wrangler deploy` builds it and run by Miniflare the
 * way production workerd runs it (no eval, no `new Function`), with the bindings that
 * wrangler.toml declares. Used by the bundle test and the HTTP benchmark.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'

/** `wrangler deploy --dry-run` into a temporary directory. */
export async function buildBundle(root: string): Promise<{ outdir: string; script: string; bytes: number }> {
  const outdir = await mkdtemp(join(tmpdir(), 'worker-bundle-'))
  const wrangler = join(dirname(createRequire(import.meta.url).resolve('wrangler/package.json')), 'bin', 'wrangler.js')
  await promisify(execFile)(process.execPath, [wrangler, 'deploy', '--dry-run', '--outdir', outdir], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  })
  const script = join(outdir, 'index.js')
  return { outdir, script, bytes: (await stat(script)).size }
}

/** Durable Object bindings declared in wrangler.toml (`[[durable_objects.bindings]]` name → class_name). */
export function durableObjectsOf(toml: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const block of toml.split(/^\[\[durable_objects\.bindings\]\]\s*$/m).slice(1)) {
    const body = block.split(/^\[/m)[0]
    const name = /^name\s*=\s*"([^"]+)"/m.exec(body)?.[1]
    const className = /^class_name\s*=\s*"([^"]+)"/m.exec(body)?.[1]
    if (name && className) out[name] = className
  }
  return out
}

/** Miniflare running a built bundle with wrangler.toml's compatibility settings, the LAKE bucket and its Durable Objects. */
export async function bundleMiniflare(root: string, outdir: string, bindings: Record<string, string>): Promise<Miniflare> {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'
  const toml = await readFile(join(root, 'wrangler.toml'), 'utf8')
  const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)![1]
  const compatibilityFlags = JSON.parse(/^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(toml)![1]) as string[]
  return new Miniflare(
    convertV4MiniflareOptions({
      // The bundle and the wasm files wrangler wrote beside it (src/parquet/snappy.wasm), which it imports.
      modules: [
        { type: 'ESModule', path: join(outdir, 'index.js') },
        ...(await readdir(outdir)).filter(f => f.endsWith('.wasm')).map(f => ({ type: 'CompiledWasm' as const, path: join(outdir, f) })),
      ],
      modulesRoot: outdir,
      compatibilityDate,
      compatibilityFlags,
      r2Buckets: ['LAKE'],
      durableObjects: durableObjectsOf(toml),
      bindings,
    }),
  )
}

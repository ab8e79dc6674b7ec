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

/** One rate-limiting binding as wrangler.toml declares it. */
export interface RateLimitConfig {
  namespace_id: string
  simple: { limit: number; period: 10 | 60 }
}

/** Rate-limiting bindings declared in wrangler.toml (`[[ratelimits]]` name → simple), as Miniflare takes them. */
export function rateLimitsOf(toml: string): Record<string, RateLimitConfig> {
  const out: Record<string, RateLimitConfig> = {}
  for (const block of toml.split(/^\[\[ratelimits\]\]\s*$/m).slice(1)) {
    const body = block.split(/^\[/m)[0]
    const name = /^name\s*=\s*"([^"]+)"/m.exec(body)?.[1]
    const simple = /^simple\s*=\s*\{\s*limit\s*=\s*(\d+)\s*,\s*period\s*=\s*(\d+)\s*\}/m.exec(body)
    const namespace = /^namespace_id\s*=\s*"([^"]+)"/m.exec(body)?.[1]
    if (name && simple && namespace)
      out[name] = { namespace_id: namespace, simple: { limit: Number(simple[1]), period: Number(simple[2]) as 10 | 60 } }
  }
  return out
}

/** The `[vars]` of wrangler.toml (string values). */
export function varsOf(toml: string): Record<string, string> {
  const body = toml.split(/^\[vars\]\s*$/m)[1]?.split(/^\[/m)[0] ?? ''
  return Object.fromEntries([...body.matchAll(/^(\w+)\s*=\s*"([^"]*)"/gm)].map(m => [m[1], m[2]]))
}

export interface BundleOverrides {
  /** Rate-limiting bindings instead of wrangler.toml's (e.g. a benchmark's higher limit). */
  ratelimits?: Record<string, RateLimitConfig>
  /** Drop what the Worker prints (its access log), e.g. when stdout carries a benchmark's figures. */
  quiet?: boolean
}

/**
 * Miniflare running a built bundle with wrangler.toml's compatibility settings, vars, the
 * LAKE bucket, its Durable Objects and its rate limits; `bindings` are added to the vars.
 */
export async function bundleMiniflare(
  root: string,
  outdir: string,
  bindings: Record<string, string>,
  overrides: BundleOverrides = {},
): Promise<Miniflare> {
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
      ratelimits: overrides.ratelimits ?? rateLimitsOf(toml),
      bindings: { ...varsOf(toml), ...bindings },
      ...(overrides.quiet ? { handleStructuredLogs: () => {} } : {}),
    }),
  )
}

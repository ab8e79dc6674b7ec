/**
 * Content negotiation: the `format` parameter wins over `Accept`, and
 * `Accept-Encoding` decides gzip. Pure functions over header text.
 */
import { contentTypeOf, FORMATS, type Format } from '../format/encode.ts'
import { ApiError, invalidParameter, quote } from '../api/errors.ts'

/** The order a wildcard Accept prefers formats in, after the endpoint's default. */
const PREFERENCE: readonly Format[] = ['json_stream', 'json', 'csv', 'arrow']

/** Other media types clients commonly send for JSON lines. */
const ALIASES: Record<string, Format> = {
  'application/x-ndjson': 'json_stream',
  'application/ndjson': 'json_stream',
  'application/jsonl': 'json_stream',
}

/** Default format of the data endpoints: streams any range, one record per line. */
export const DEFAULT_DATA_FORMAT: Format = 'json_stream'
/** Default format of the status endpoint: a small JSON array. */
export const DEFAULT_STATUS_FORMAT: Format = 'json'

interface MediaRange {
  type: string
  subtype: string
  q: number
  position: number
}

/** Parses an Accept header; entries that are not media ranges are ignored. */
export function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = []
  header.split(',').forEach((part, position) => {
    const [range, ...params] = part.split(';').map(s => s.trim().toLowerCase())
    const m = /^([a-z0-9!#$&^_.+*-]+)\/([a-z0-9!#$&^_.+*-]+)$/.exec(range ?? '')
    if (!m || (m[1] === '*' && m[2] !== '*')) return
    let q = 1
    for (const p of params) {
      const qm = /^q\s*=\s*([0-9.]+)$/.exec(p)
      if (qm) q = Math.min(1, Math.max(0, Number(qm[1]) || 0))
    }
    out.push({ type: m[1], subtype: m[2], q, position })
  })
  return out
}

function specificity(range: MediaRange, media: string): number {
  const [type, subtype] = media.split('/')
  if (range.type === type && range.subtype === subtype) return 3
  if (range.type === type && range.subtype === '*') return 2
  if (range.type === '*') return 1
  return 0
}

/** The format an Accept header asks for, `fallback` when it allows anything, null when it allows none. */
export function formatFromAccept(header: string, fallback: Format): Format | null {
  const ranges = parseAccept(header)
  if (ranges.length === 0) return fallback
  const candidates: { format: Format; q: number; spec: number; position: number; order: number }[] = []
  const order = [fallback, ...PREFERENCE.filter(f => f !== fallback)]
  order.forEach((format, i) => {
    const medias = [contentTypeOf(format).split(';')[0].trim().toLowerCase(), ...Object.keys(ALIASES).filter(a => ALIASES[a] === format)]
    // The most specific range matching the format decides its quality (RFC 9110 §12.5.1).
    let match: { q: number; spec: number; position: number } | null = null
    for (const media of medias) {
      for (const r of ranges) {
        const spec = specificity(r, media)
        if (spec > 0 && (!match || spec > match.spec)) match = { q: r.q, spec, position: r.position }
      }
    }
    if (match && match.q > 0) candidates.push({ format, ...match, order: i })
  })
  // Highest quality, then a type named outright, then the first named, then our preference.
  candidates.sort((a, b) => b.q - a.q || b.spec - a.spec || (a.spec === 3 ? a.position - b.position : 0) || a.order - b.order)
  return candidates[0]?.format ?? null
}

/**
 * The response format: the `format` parameter (400 when unknown), else `Accept`
 * (406 when it allows none of ours), else `fallback`.
 */
export function negotiateFormat(formatParam: string | null, accept: string | null, fallback: Format): Format {
  if (formatParam !== null) {
    const f = formatParam.trim().toLowerCase() as Format
    if (!FORMATS.includes(f)) {
      throw invalidParameter('format', `unsupported format ${quote(formatParam)}; use one of ${FORMATS.join(', ')}`, 'unsupported_format')
    }
    return f
  }
  if (accept === null || accept.trim() === '') return fallback
  const f = formatFromAccept(accept, fallback)
  if (f === null) {
    throw new ApiError(
      406,
      'not_acceptable',
      `none of the Accept header's media types is served; use one of ${FORMATS.map(contentTypeOf).join(', ')} or the format parameter`,
    )
  }
  return f
}

/** True when `Accept-Encoding` allows gzip (`gzip`, `x-gzip` or `*` with a non-zero quality). */
export function acceptsGzip(header: string | null | undefined): boolean {
  if (!header) return false
  let gzip: number | null = null
  let star: number | null = null
  for (const part of header.split(',')) {
    const [coding, ...params] = part.split(';').map(s => s.trim().toLowerCase())
    let q = 1
    for (const p of params) {
      const qm = /^q\s*=\s*([0-9.]+)$/.exec(p)
      if (qm) q = Number(qm[1]) || 0
    }
    if (coding === 'gzip' || coding === 'x-gzip') gzip = Math.max(gzip ?? 0, q)
    else if (coding === '*') star = q
  }
  return (gzip ?? star ?? 0) > 0
}

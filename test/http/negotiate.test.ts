import { describe, expect, it } from 'vitest'
import { ApiError } from '../../src/api/errors.ts'
import { acceptsGzip, negotiateFormat } from '../../src/http/negotiate.ts'

const status = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    return (err as ApiError).status
  }
  return 200
}

describe('negotiateFormat', () => {
  it('maps the spec Accept values to formats', () => {
    expect(negotiateFormat(null, 'application/json', 'json_stream')).toBe('json')
    expect(negotiateFormat(null, 'application/jsonstream', 'json')).toBe('json_stream')
    expect(negotiateFormat(null, 'text/csv', 'json')).toBe('csv')
    expect(negotiateFormat(null, 'application/vnd.apache.arrow.stream', 'json')).toBe('arrow')
  })

  it('takes every common JSON lines media type as json_stream', () => {
    for (const accept of ['application/ndjson', 'application/x-ndjson', 'application/jsonl', 'application/jsonstream'])
      expect(negotiateFormat(null, accept, 'json')).toBe('json_stream')
    expect(() => negotiateFormat(null, 'application/x-yaml', 'json')).toThrow(ApiError)
  })

  it('lets the format parameter win over Accept', () => {
    expect(negotiateFormat('csv', 'application/json', 'json')).toBe('csv')
    expect(negotiateFormat('ARROW', 'text/html', 'json')).toBe('arrow')
  })

  it('uses the default with no Accept, */* or a browser Accept', () => {
    expect(negotiateFormat(null, null, 'json_stream')).toBe('json_stream')
    expect(negotiateFormat(null, '*/*', 'json_stream')).toBe('json_stream')
    expect(negotiateFormat(null, 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'json_stream')).toBe('json_stream')
  })

  it('honours quality values and q=0 exclusions', () => {
    expect(negotiateFormat(null, 'application/json;q=0.5, text/csv', 'json')).toBe('csv')
    expect(negotiateFormat(null, 'text/csv, application/json', 'json_stream')).toBe('csv')
    expect(negotiateFormat(null, 'application/jsonstream;q=0, */*', 'json_stream')).not.toBe('json_stream')
    expect(negotiateFormat(null, 'text/*', 'json_stream')).toBe('csv')
  })

  it('answers 400 for an unknown format parameter and 406 for an Accept it cannot serve', () => {
    expect(status(() => negotiateFormat('xml', null, 'json'))).toBe(400)
    expect(status(() => negotiateFormat(null, 'text/html', 'json'))).toBe(406)
    expect(status(() => negotiateFormat(null, 'application/json;q=0', 'json'))).toBe(406)
  })
})

describe('acceptsGzip', () => {
  it('reads codings and qualities', () => {
    expect(acceptsGzip('gzip')).toBe(true)
    expect(acceptsGzip('br, gzip;q=0.5')).toBe(true)
    expect(acceptsGzip('deflate, br')).toBe(false)
    expect(acceptsGzip('gzip;q=0')).toBe(false)
    expect(acceptsGzip('*')).toBe(true)
    expect(acceptsGzip('*, gzip;q=0')).toBe(false)
    expect(acceptsGzip('')).toBe(false)
    expect(acceptsGzip(null)).toBe(false)
  })
})

/**
 * Gzip of a response body as a stream (`CompressionStream`, the same in workerd and
 * Node). In workerd a body that is already compressed must be sent with
 * `encodeBody: 'manual'`, or the runtime compresses it a second time because of the
 * Content-Encoding header.
 */

/** The body piped through gzip; an error in `body` errors the compressed stream too. */
export const gzipStream = (body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> =>
  body.pipeThrough(new CompressionStream('gzip') as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)

/**
 * A Response whose body is gzipped here: Content-Encoding set, Content-Length dropped,
 * and workerd told not to encode it again. Node ignores `encodeBody`.
 */
export function gzipResponse(body: ReadableStream<Uint8Array>, init: { status: number; headers: Headers }): Response {
  const headers = new Headers(init.headers)
  headers.set('Content-Encoding', 'gzip')
  headers.delete('Content-Length')
  return new Response(gzipStream(body), { status: init.status, headers, encodeBody: 'manual' } as ResponseInit)
}

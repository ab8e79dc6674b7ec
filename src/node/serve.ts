/**
 * Serves a fetch handler (the Hono app) over node:http, so the Node server runs the
 * same code path as the Worker. Request and response bodies stream: the response is
 * written chunk by chunk, waiting for 'drain' when the socket is full, and a client
 * that goes away cancels the body (and with it the scan). A body that fails part-way
 * destroys the connection, so a broken response never ends like a complete one.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { CLIENT_ADDRESS_HEADER } from '../api/throttle.ts'
import type { AddressInfo } from 'node:net'

export type FetchHandler = (request: Request) => Response | Promise<Response>

export interface ServeOptions {
  fetch: FetchHandler
  /** 0 picks a free port (default 0). */
  port?: number
  /** Interface to bind (default 127.0.0.1). */
  host?: string
  /** Where unexpected adapter errors go (default console.error). */
  log?: (message: string, error?: unknown) => void
  /** Told of each body chunk once the socket has taken it (ThreadEncoders.written). */
  written?: (chunk: Uint8Array) => void
}

export interface RunningServer {
  server: Server
  port: number
  /** `http://<host>:<port>` */
  url: string
  close(): Promise<void>
}

const BAD_REQUEST = JSON.stringify({ error: { status: 400, code: 'bad_request', message: 'malformed request' } })
/** Request line and headers together, at most. */
const MAX_HEADER_BYTES = 64 * 1024
const HEADERS_TOO_LARGE = JSON.stringify({
  error: { status: 431, code: 'headers_too_large', message: `the request line and headers exceed ${MAX_HEADER_BYTES} bytes` },
})

/** A fetch Request for a Node request; the URL's authority is the Host header when it parses. */
export function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers()
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1])
  // The client's address as Cloudflare gives it, from the socket: never what the client claims.
  headers.set(CLIENT_ADDRESS_HEADER, req.socket.remoteAddress ?? '')
  const path = req.url ?? '/'
  let url: URL
  try {
    url = new URL(path.startsWith('/') ? `http://${req.headers.host ?? 'localhost'}${path}` : path)
  } catch {
    url = new URL(path.startsWith('/') ? path : '/', 'http://localhost')
  }
  const method = req.method ?? 'GET'
  const hasBody = method !== 'GET' && method !== 'HEAD'
  return new Request(url, {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit)
}

/** Waits until the socket can take more, or reports that the client went away. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise(resolve => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain)
      res.off('close', onClose)
      resolve(ok)
    }
    const onDrain = () => done(true)
    const onClose = () => done(false)
    res.on('drain', onDrain)
    res.on('close', onClose)
  })
}

/**
 * Writes a fetch Response to a Node response with backpressure; errors destroy the socket.
 * `written` hears of each chunk once the socket has taken it.
 */
export async function writeResponse(response: Response, res: ServerResponse, written?: (chunk: Uint8Array) => void): Promise<void> {
  // The client went away before the answer was ready: its body is dropped, never read into a closed socket.
  if (res.destroyed) {
    await response.body?.cancel().catch(() => {})
    return
  }
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    headers[name] = name === 'set-cookie' ? response.headers.getSetCookie() : value
  })
  res.writeHead(response.status, headers)
  if (!response.body) {
    res.end()
    return
  }
  const reader = response.body.getReader()
  const onClose = () => {
    if (!res.writableFinished) reader.cancel().catch(() => {})
  }
  res.on('close', onClose)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (!res.write(value, written && (() => written(value))) && !(await drained(res))) return
    }
    res.end()
  } catch (err) {
    res.destroy(err instanceof Error ? err : new Error(String(err)))
  } finally {
    res.off('close', onClose)
  }
}

/** Starts an HTTP server for `fetch`; resolves once it listens. */
export function serve(options: ServeOptions): Promise<RunningServer> {
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error))
  // Room for a URL at the API's limit (MAX_URL_BYTES) and ordinary headers, so the app answers a long URL with its 414.
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, async (req, res) => {
    const controller = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) controller.abort()
    })
    let request: Request
    try {
      request = toRequest(req, controller.signal)
    } catch {
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' }).end(BAD_REQUEST)
      return
    }
    try {
      await writeResponse(await options.fetch(request), res, options.written)
    } catch (err) {
      log('node adapter: unhandled error', err)
      if (!res.headersSent)
        res
          .writeHead(500, { 'content-type': 'application/json; charset=utf-8' })
          .end(JSON.stringify({ error: { status: 500, code: 'internal_error', message: 'internal error' } }))
      else res.destroy()
    }
  })
  // A request Node cannot parse still gets the API's JSON error envelope.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const [status, body] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, HEADERS_TOO_LARGE] : [400, BAD_REQUEST]
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  })
  const host = options.host ?? '127.0.0.1'
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject)
      const { port } = server.address() as AddressInfo
      const shown = host.includes(':') ? `[${host}]` : host
      resolve({
        server,
        port,
        url: `http://${shown}:${port}`,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close(err => (err ? fail(err) : done()))
            server.closeAllConnections()
          }),
      })
    })
  })
}

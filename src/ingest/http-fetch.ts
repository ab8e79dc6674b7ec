/**
 * The JSON-RPC client's transport for the Node ingester: a POST over node:http(s) with
 * keep-alive connections, the body's chunks kept as they arrive and decoded once at the end
 * (decoding each chunk and concatenating the text cost ~3 % more of a pooled ingester's rate). Node's fetch reads a
 * mainnet block's 0.7 MB through web streams into one buffer, then decodes it: about
 * twice the CPU of the JSON.parse that follows (measured on the recorded blocks, see
 * BENCHMARKS.md "Ingest at history scale, continued"). Node only; the Worker's live
 * follower keeps fetch. No compression is asked for, as from a node on the same network.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { isAscii } from 'node:buffer'
import type { RpcFetch, RpcResponse } from './rpc.ts'

/**
 * The body as text. A node's JSON is all ASCII (hex and field names), which latin1 decodes byte
 * for byte as UTF-8 would, at a third of the cost (0.4 against 1.1 ms for 1.8 MB; the check is
 * 0.02 ms); anything else is decoded as UTF-8.
 */
export const decodeBody = (body: Buffer): string => (isAscii(body) ? body.toString('latin1') : body.toString('utf8'))

/** A transport with its own keep-alive connections (one per request in flight, reused). */
export function nodeHttpFetch(): RpcFetch {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) }
  return (url, init) =>
    new Promise<RpcResponse>((resolve, reject) => {
      const fail = (e: Error) => reject(init.signal.aborted ? init.signal.reason : e)
      const target = new URL(url)
      const secure = target.protocol === 'https:'
      const send = secure ? httpsRequest : httpRequest
      const req = send(
        target,
        {
          method: init.method,
          agent: secure ? agents.https : agents.http,
          headers: { ...init.headers, 'content-length': Buffer.byteLength(init.body) },
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('error', fail)
          res.on('end', () => {
            const status = res.statusCode ?? 0
            const header = (name: string) => {
              const value = res.headers[name.toLowerCase()]
              return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
            }
            resolve({
              ok: status >= 200 && status < 300,
              status,
              statusText: res.statusMessage ?? '',
              headers: { get: header },
              text: async () => decodeBody(Buffer.concat(chunks)),
            })
          })
        },
      )
      const abort = () => req.destroy(init.signal.reason as Error)
      if (init.signal.aborted) return abort()
      init.signal.addEventListener('abort', abort, { once: true })
      req.on('close', () => init.signal.removeEventListener('abort', abort))
      req.on('error', fail)
      req.end(init.body)
    })
}

/**
 * What a WebSocket upgrade carries besides the HTTP API's query: the subprotocol the
 * server speaks and the credentials a browser, which cannot set an Authorization
 * header on a WebSocket, offers as a subprotocol (never echoed back).
 */

/** The subprotocol the server speaks; a browser offers it next to its credentials (see `credentialProtocol`). */
export const PROTOCOL = 'edge-chain-data.v1'

/** Prefix of the subprotocol that carries `base64url(user:password)` from a browser. */
export const CREDENTIAL_PROTOCOL_PREFIX = 'basic.'

/** The subprotocol a browser offers to carry its credentials: `basic.` + unpadded base64url of `user:password`. */
export function credentialProtocol(user: string, password: string): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`)
  return (
    CREDENTIAL_PROTOCOL_PREFIX +
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '')
  )
}

/** The offered subprotocols of a `Sec-WebSocket-Protocol` header. */
export function offeredProtocols(header: string | null | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map(p => p.trim())
    .filter(p => p !== '')
}

/**
 * Credentials carried in a subprotocol, as the value of an equivalent Basic
 * Authorization header; undefined when none is offered, null when one is malformed.
 */
export function basicFromProtocols(offered: readonly string[]): string | null | undefined {
  const carrier = offered.find(p => p.startsWith(CREDENTIAL_PROTOCOL_PREFIX))
  if (carrier === undefined) return undefined
  const b64 = carrier.slice(CREDENTIAL_PROTOCOL_PREFIX.length).replace(/-/g, '+').replace(/_/g, '/')
  if (!/^[A-Za-z0-9+/]+$/.test(b64)) return null
  return `Basic ${b64}${'='.repeat((4 - (b64.length % 4)) % 4)}`
}

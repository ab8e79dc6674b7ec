/**
 * HTTP Basic authentication against API_USERS (`user:secret,user:secret`). A secret is
 * a PBKDF2-SHA256 hash made by `npm run hash-password`
 * (`pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>`) or, for local use, the
 * password in plain text. Web Crypto only, so the same code runs in workerd and Node.
 *
 * Comparisons are constant-time over fixed-length digests; an unknown user costs the
 * same PBKDF2 work as a wrong password, so timing tells nothing about who exists.
 * Successful checks are remembered by a SHA-256 of the credentials and the secret
 * (never the password itself), because PBKDF2 is deliberately slow and a client
 * sends the same header on every request. Credentials are never logged.
 */
import { ApiError } from './errors.ts'

/** PBKDF2 iterations of new hashes: the most workerd's Web Crypto accepts. */
/** The Basic-auth realm every 401 names. */
export const REALM = 'edge-chain-data'

export const PBKDF2_ITERATIONS = 100_000
const MAX_ITERATIONS = 100_000
const SCHEME = 'pbkdf2-sha256'
const HASH_BYTES = 32
const SALT_BYTES = 16
/** Verified credentials remembered per process or isolate. */
const CACHE_SIZE = 1_000

/** A PBKDF2 hash: plaintext secrets are hashed when loaded, so every check costs the same, known user or not. */
type Secret = { iterations: number; salt: Uint8Array; hash: Uint8Array }

/** The configured users: name → parsed secret. */
export type Users = ReadonlyMap<string, Secret>

/** API_USERS is malformed: a deployment error, reported without the secrets. */
export class UsersConfigError extends Error {}

const encoder = new TextEncoder()

const toB64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes))

function fromB64(text: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(text), c => c.charCodeAt(0))
  } catch {
    return null
  }
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>))
}

async function pbkdf2(password: string, salt: Uint8Array, iterations: number, bytes: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(password), 'PBKDF2', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    bytes * 8,
  )
  return new Uint8Array(bits)
}

/** Compares two byte strings in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0)
  return diff === 0
}

/** A PBKDF2 hash string for API_USERS (what `npm run hash-password` prints). */
export async function hashPassword(password: string, iterations = PBKDF2_ITERATIONS): Promise<string> {
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > MAX_ITERATIONS)
    throw new RangeError(`iterations must be 1..${MAX_ITERATIONS}`)
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES))
  const hash = await pbkdf2(password, salt, iterations, HASH_BYTES)
  return `${SCHEME}$${iterations}$${toB64(salt)}$${toB64(hash)}`
}

async function parseSecret(user: string, text: string): Promise<Secret> {
  if (!text.startsWith(SCHEME + '$')) {
    const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES))
    return { iterations: PBKDF2_ITERATIONS, salt, hash: await pbkdf2(text, salt, PBKDF2_ITERATIONS, HASH_BYTES) }
  }
  const [, iter, salt, hash] = text.split('$')
  const iterations = Number(iter)
  const saltBytes = fromB64(salt ?? '')
  const hashBytes = fromB64(hash ?? '')
  if (!/^[0-9]+$/.test(iter ?? '') || iterations < 1 || iterations > MAX_ITERATIONS || !saltBytes || !hashBytes || hashBytes.length === 0) {
    throw new UsersConfigError(
      `API_USERS: the hash of user "${user}" is malformed (expected ${SCHEME}$<iterations up to ${MAX_ITERATIONS}>$<salt>$<hash>)`,
    )
  }
  return { iterations, salt: saltBytes, hash: hashBytes }
}

/** Parses API_USERS; throws UsersConfigError naming the bad entry (never its secret). */
export async function parseUsers(text: string): Promise<Users> {
  const users = new Map<string, Secret>()
  for (const entry of text.split(',')) {
    const t = entry.trim()
    if (t === '') continue
    const colon = t.indexOf(':')
    if (colon <= 0 || colon === t.length - 1) throw new UsersConfigError('API_USERS: every entry must be user:secret')
    const user = t.slice(0, colon)
    if (users.has(user)) throw new UsersConfigError(`API_USERS: user "${user}" appears twice`)
    users.set(user, await parseSecret(user, t.slice(colon + 1)))
  }
  if (users.size === 0) throw new UsersConfigError('API_USERS has no users')
  return users
}

/** User and password of a Basic Authorization header, or null when it is not one. */
export function parseBasic(header: string | null | undefined): { user: string; password: string } | null {
  const m = /^basic[ \t]+([A-Za-z0-9+/]+=*)[ \t]*$/i.exec(header ?? '')
  if (!m) return null
  const bytes = fromB64(m[1])
  if (!bytes) return null
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return null
  }
  const colon = text.indexOf(':')
  return colon < 0 ? null : { user: text.slice(0, colon), password: text.slice(colon + 1) }
}

/** Stands in for an unknown user so that a miss costs as much as a wrong password. */
const DECOY: Secret = { iterations: PBKDF2_ITERATIONS, salt: new Uint8Array(SALT_BYTES), hash: new Uint8Array(HASH_BYTES) }

async function matches(password: string, secret: Secret): Promise<boolean> {
  return constantTimeEqual(await pbkdf2(password, secret.salt, secret.iterations, secret.hash.length), secret.hash)
}

const verified = new Map<string, true>()

async function cacheKey(user: string, password: string, secret: Secret): Promise<string> {
  const digest = await sha256(encoder.encode(`${user}\u0000${password}\u0000${toB64(secret.hash)}`))
  return toB64(digest)
}

/** A header's credentials, their user's secret (none for an unknown user) and their key in the verified cache. */
async function credentialsOf(
  header: string | null | undefined,
  users: Users,
): Promise<{ user: string; password: string; secret?: Secret; key?: string } | null> {
  const creds = parseBasic(header)
  if (!creds) return null
  const secret = users.get(creds.user)
  return secret ? { ...creds, secret, key: await cacheKey(creds.user, creds.password, secret) } : creds
}

/** The user a request authenticates as, or null. */
export async function authenticate(header: string | null | undefined, users: Users): Promise<string | null> {
  const creds = await credentialsOf(header, users)
  if (!creds) return null
  if (!creds.secret || !creds.key) {
    await matches(creds.password, DECOY)
    return null
  }
  if (verified.has(creds.key)) return creds.user
  if (!(await matches(creds.password, creds.secret))) return null
  if (verified.size >= CACHE_SIZE) verified.delete(verified.keys().next().value as string)
  verified.set(creds.key, true)
  return creds.user
}

/**
 * The user of credentials already verified in this process or isolate, without a PBKDF2
 * (a SHA-256 and a lookup); null otherwise. Lets a throttled address still serve a user
 * who signed in before, while new guesses from it cost nothing.
 */
export async function knownCredentials(header: string | null | undefined, users: Users): Promise<string | null> {
  const creds = await credentialsOf(header, users)
  return creds?.key !== undefined && verified.has(creds.key) ? creds.user : null
}

/** The 401 every unauthenticated request gets. */
export const unauthorized = (): ApiError =>
  new ApiError(401, 'unauthorized', 'missing or invalid credentials: send Authorization: Basic base64(user:password)', {
    headers: { 'WWW-Authenticate': `Basic realm="${REALM}", charset="UTF-8"` },
  })

/** The 503 of a deployment without API_USERS: it serves nothing rather than everything. */
export const notConfigured = (): ApiError =>
  new ApiError(503, 'not_configured', 'no API users are configured on this deployment (set the API_USERS secret)')

/**
 * The development user of the local sample (user `dev`, password `dev`). Only
 * `npm start` and `npm run serve` use it, and only when API_USERS is not set;
 * they print so. A deployed Worker never falls back to it.
 */
export const DEV_API_USERS = 'dev:dev'

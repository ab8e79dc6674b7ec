/**
 * A small client for the Aptos-style fullnode REST API: the extract half of the
 * Move ingester. Retries what a busy node answers (429, 5xx, timeouts, dropped
 * connections) with exponential backoff, honouring `Retry-After`; every error
 * names the URL and the status.
 */
import type { AbiModule } from './abi-cache.ts'
import type { RestLedgerInfo, RestModule, RestTransaction } from './rest-types.ts'

export interface FullnodeOptions {
  /** Node base URL, with or without the `/v1` suffix. */
  url: string
  /** Attempts after the first one (default 5). */
  retries?: number
  /** First backoff in ms, doubled per attempt up to 10 s (default 250). */
  backoffMs?: number
  /** Per-request timeout in ms (default 30 000). */
  timeoutMs?: number
  /** Extra request headers (an API key, for instance). */
  headers?: Record<string, string>
  fetch?: typeof fetch
  /** Told before each wait to retry, so a node that hangs or fails is never silent for minutes. */
  onRetry?: (retry: FullnodeRetry) => void
}

/** A request about to be retried: where, which attempt comes next of how many, after how long, and why. */
export interface FullnodeRetry {
  url: string
  attempt: number
  attempts: number
  waitMs: number
  reason: string
}

/** A request that failed for good; `status` is 0 when no response came back. */
export class FullnodeError extends Error {
  readonly url: string
  readonly status: number
  readonly code: string | null
  constructor(url: string, status: number, code: string | null, message: string) {
    super(`${url}: ${status === 0 ? 'no response' : `HTTP ${status}`}${code ? ` ${code}` : ''}: ${message}`)
    this.url = url
    this.status = status
    this.code = code
  }
}

/** Largest page `GET /v1/transactions` returns. */
export const MAX_PAGE = 100

const MAX_BACKOFF_MS = 10_000

const retryable = (status: number) => status === 429 || status >= 500

/** Backoff before attempt `attempt` (1-based): `Retry-After` when the node sent one. */
function delayMs(attempt: number, base: number, retryAfter: string | null): number {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : NaN
  if (!Number.isNaN(seconds)) return Math.min(seconds * 1000, MAX_BACKOFF_MS)
  return Math.min(base * 2 ** (attempt - 1), MAX_BACKOFF_MS)
}

const sleep = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms))

export interface FullnodeClient {
  /** `GET /v1`: chain id, ledger version and oldest retained version. */
  ledgerInfo(): Promise<RestLedgerInfo>
  /** `GET /v1/transactions?start&limit`: up to `limit` (1…100) committed transactions from `start`. */
  transactions(start: bigint | number, limit: number): Promise<RestTransaction[]>
  /** `GET /v1/transactions/by_version/{v}`. */
  transactionByVersion(version: bigint | number): Promise<RestTransaction>
  /** `GET /v1/blocks/by_version/{v}`: the block holding a version (its `block_hash` is the block id). */
  blockByVersion(
    version: bigint | number,
  ): Promise<{ block_height: string; block_hash: string; first_version: string; last_version: string }>
  /** `GET /v1/accounts/{address}/module/{name}`: the module's ABI, or null when it does not exist. */
  moduleAbi(address: string, name: string, ledgerVersion?: bigint | number): Promise<AbiModule | null>
}

/** Creates a client for one node. */
export function fullnodeClient(options: FullnodeOptions): FullnodeClient {
  const base = options.url.replace(/\/+$/, '').replace(/\/v1$/, '') + '/v1'
  const retries = options.retries ?? 5
  const backoff = options.backoffMs ?? 250
  const timeout = options.timeoutMs ?? 30_000
  const doFetch = options.fetch ?? fetch

  function retry(url: string, attempt: number, waitMs: number, reason: string): Promise<void> {
    options.onRetry?.({ url, attempt: attempt + 2, attempts: retries + 1, waitMs, reason })
    return sleep(waitMs)
  }

  async function get<T>(path: string, notFound?: (code: string | null) => boolean): Promise<T | null> {
    const url = base + path
    for (let attempt = 0; ; attempt++) {
      let res: Response
      try {
        res = await doFetch(url, { headers: { accept: 'application/json', ...options.headers }, signal: AbortSignal.timeout(timeout) })
      } catch (e) {
        const why =
          e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError') ? `timed out after ${timeout} ms` : String(e)
        if (attempt < retries) {
          await retry(url, attempt, delayMs(attempt + 1, backoff, null), why)
          continue
        }
        throw new FullnodeError(url, 0, null, `${why} (${attempt + 1} attempts)`)
      }
      if (res.ok) return (await res.json()) as T
      const text = await res.text()
      let code: string | null = null
      let message = text.slice(0, 300)
      try {
        const body = JSON.parse(text) as { error_code?: string; message?: string }
        code = body.error_code ?? null
        message = body.message ?? message
      } catch {
        // not the node's JSON error shape: keep the text
      }
      if (res.status === 404 && notFound?.(code)) return null
      if (retryable(res.status) && attempt < retries) {
        await retry(url, attempt, delayMs(attempt + 1, backoff, res.headers.get('retry-after')), `HTTP ${res.status}: ${message}`)
        continue
      }
      throw new FullnodeError(url, res.status, code, `${message}${retryable(res.status) ? ` (${attempt + 1} attempts)` : ''}`)
    }
  }
  const must = async <T>(path: string): Promise<T> => (await get<T>(path)) as T

  return {
    ledgerInfo: () => must<RestLedgerInfo>(''),
    async transactions(start, limit) {
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new RangeError(`limit must be 1…${MAX_PAGE}, got ${limit}`)
      const page = await must<unknown>(`/transactions?start=${BigInt(start)}&limit=${limit}`)
      if (!Array.isArray(page))
        throw new FullnodeError(`${base}/transactions?start=${start}&limit=${limit}`, 200, null, 'expected a JSON array')
      return page as RestTransaction[]
    },
    transactionByVersion: version => must<RestTransaction>(`/transactions/by_version/${BigInt(version)}`),
    blockByVersion: version => must(`/blocks/by_version/${BigInt(version)}`),
    async moduleAbi(address, name, ledgerVersion) {
      const q = ledgerVersion === undefined ? '' : `?ledger_version=${BigInt(ledgerVersion)}`
      const m = await get<RestModule>(
        `/accounts/${address}/module/${encodeURIComponent(name)}${q}`,
        code => code === 'module_not_found' || code === 'account_not_found',
      )
      return m?.abi ?? null
    },
  }
}

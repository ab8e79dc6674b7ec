/**
 * What a node's failure means, as small pure functions: one branch per known
 * provider behaviour, anything unknown is fatal so it is never silently retried
 * or skipped.
 */

export interface JsonRpcErrorObject {
  code?: number
  message?: string
  data?: unknown
}

/** retry: transient (rate limit, overload); unsupported: the node lacks the method; fatal: anything else. */
export type ErrorClass = 'retry' | 'unsupported' | 'fatal'

/** HTTP statuses worth retrying: timeouts, rate limits and server errors. */
export const isRetryableStatus = (status: number): boolean => status === 408 || status === 425 || status === 429 || status >= 500

/** Classifies a JSON-RPC error object returned for one call. */
export function classifyRpcError(error: JsonRpcErrorObject): ErrorClass {
  const message = (error.message ?? '').toLowerCase()
  if (
    error.code === -32601 ||
    /method .*(not found|does not exist|is not available|not supported)|unsupported method|not implemented/.test(message)
  ) {
    return 'unsupported'
  }
  // -32005: "limit exceeded" (Infura, Alchemy); 429 in the body (some gateways); geth's busy/timeout messages.
  if (error.code === -32005 || error.code === 429 || error.code === -32097) return 'retry'
  if (/rate limit|too many requests|exceeded|throttl|timeout|timed out|try again|temporarily|busy|header not found/.test(message))
    return 'retry'
  return 'fatal'
}

/** A batch answered with one error object instead of an array: the node refuses batches (or this size). */
export const isBatchRejected = (body: unknown, sentBatch: boolean): boolean =>
  sentBatch && typeof body === 'object' && body !== null && !Array.isArray(body) && 'error' in body

/** Seconds from a Retry-After header (numeric form only), as milliseconds; undefined when absent or unusable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header || !/^\d+(\.\d+)?$/.test(header.trim())) return undefined
  return Number(header.trim()) * 1000
}

/** Full-jitter exponential backoff: a random wait below min(cap, base · 2^attempt). */
export function backoffMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(Math.min(capMs, baseMs * 2 ** attempt) * random())
}

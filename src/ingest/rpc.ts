/**
 * A minimal JSON-RPC client over fetch: calls grouped into JSON-RPC batch arrays,
 * a bounded number of HTTP requests in flight, per-request timeouts, and retries with
 * jittered exponential backoff on 429, 5xx, timeouts, network errors, malformed
 * bodies and rate-limit errors. A call that keeps failing ends in an RpcError naming
 * the method and its parameters.
 */
import {
  backoffMs,
  classifyRpcError,
  isBatchRejected,
  isRetryableStatus,
  retryAfterMs,
  type ErrorClass,
  type JsonRpcErrorObject,
} from './quirks.ts'

export interface RpcOptions {
  /** Calls per HTTP request (default 20); halved automatically when a node refuses a batch. */
  batchSize?: number
  /** HTTP requests in flight (default 4). */
  concurrency?: number
  /** Retries of a failing call before giving up (default 6). */
  retries?: number
  /** Timeout of one HTTP request, body included, in ms (default 30,000). */
  timeoutMs?: number
  /** First backoff in ms (default 250); doubles per attempt, full jitter. */
  backoffMs?: number
  /** Longest backoff in ms (default 10,000). */
  maxBackoffMs?: number
  headers?: Record<string, string>
  /** Default: the global fetch (the Node ingester's threads pass http-fetch.ts). */
  fetch?: RpcFetch
  /** Told before each wait to retry, so a node that hangs or fails is never silent for minutes. */
  onRetry?: (retry: RpcRetry) => void
}

/** What the client uses of fetch: a POST and its answer as text. */
export type RpcFetch = (
  url: string,
  init: { method: 'POST'; headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<RpcResponse>

export interface RpcResponse {
  ok: boolean
  status: number
  statusText: string
  headers: { get(name: string): string | null }
  text(): Promise<string>
}

/** Calls about to be retried: how many, the first one's method, the attempt coming, and why. */
export interface RpcRetry {
  calls: number
  method: string
  attempt: number
  attempts: number
  waitMs: number
  reason: string
}

export interface RpcCall {
  method: string
  params: unknown[]
}

/** A call failed for good: names the method and parameters, and says why. */
export class RpcError extends Error {
  readonly method: string
  readonly params: unknown[]
  readonly code: number | undefined
  readonly kind: ErrorClass
  constructor(call: RpcCall, reason: string, options: { code?: number; kind?: ErrorClass; cause?: unknown } = {}) {
    super(`${describeCall(call)} failed: ${reason}`, { cause: options.cause })
    this.name = 'RpcError'
    this.method = call.method
    this.params = call.params
    this.code = options.code
    this.kind = options.kind ?? 'fatal'
  }
}

export type Settled<T> = { ok: true; result: T } | { ok: false; error: RpcError }

export interface RpcStats {
  /** HTTP requests sent, retries included. */
  requests: number
  /** JSON-RPC calls answered. */
  calls: number
  /** Calls sent again after a transient failure. */
  retries: number
  /** Response body bytes received. */
  bytes: number
}

export interface RpcClient {
  readonly url: string
  readonly stats: RpcStats
  request<T>(method: string, params?: unknown[]): Promise<T>
  /** Results in call order; throws the first call's RpcError that failed for good. */
  batch<T>(calls: readonly RpcCall[]): Promise<T[]>
  /** Results in call order, each a result or an error, so a caller can fall back per call. */
  batchSettled<T>(calls: readonly RpcCall[]): Promise<Settled<T>[]>
}

/** `eth_getBlockByNumber(0x10, true)`: how errors name a call. */
export function describeCall({ method, params }: RpcCall): string {
  return `${method}(${params.map(p => (typeof p === 'string' ? p : JSON.stringify(p))).join(', ')})`
}

interface Pending {
  call: RpcCall
  index: number
  attempt: number
}

type Outcome = { kind: 'ok'; result: unknown } | { kind: 'split' } | { kind: ErrorClass; reason: string; code?: number; waitMs?: number }

/** Creates a client for one node URL. */
export function createRpcClient(url: string, options: RpcOptions = {}): RpcClient {
  const batchSize = Math.max(1, options.batchSize ?? 20)
  const retries = options.retries ?? 6
  const timeoutMs = options.timeoutMs ?? 30_000
  const baseMs = options.backoffMs ?? 250
  const capMs = options.maxBackoffMs ?? 10_000
  const doFetch = options.fetch ?? fetch
  const limit = semaphore(options.concurrency ?? 4)
  const stats: RpcStats = { requests: 0, calls: 0, retries: 0, bytes: 0 }
  let nextId = 1
  let maxBatch = batchSize

  /** One HTTP request for a group of calls; every call gets an outcome, nothing throws. */
  async function send(group: Pending[]): Promise<Outcome[]> {
    const ids = group.map(() => nextId++)
    const payload = group.map((p, i) => ({ jsonrpc: '2.0', id: ids[i], method: p.call.method, params: p.call.params }))
    const asBatch = group.length > 1
    const all = (o: Outcome) => group.map(() => o)
    let text: string
    let response: RpcResponse
    stats.requests++
    try {
      response = await doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...options.headers },
        body: JSON.stringify(asBatch ? payload : payload[0]),
        signal: AbortSignal.timeout(timeoutMs),
      })
      text = await response.text()
    } catch (e) {
      const err = e as Error
      const reason =
        err.name === 'TimeoutError' || err.name === 'AbortError'
          ? `timed out after ${timeoutMs} ms`
          : `network error: ${err.message}${err.cause ? ` (${(err.cause as Error).message ?? err.cause})` : ''}`
      return all({ kind: 'retry', reason })
    }
    stats.bytes += text.length
    if (!response.ok) {
      const reason = `HTTP ${response.status} ${response.statusText}`.trim() + snippet(text)
      return all({
        kind: isRetryableStatus(response.status) ? 'retry' : 'fatal',
        reason,
        waitMs: retryAfterMs(response.headers.get('retry-after')),
      })
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch (e) {
      return all({ kind: 'retry', reason: `malformed JSON from the node (${(e as Error).message})${snippet(text)}` })
    }
    if (isBatchRejected(body, asBatch)) return all({ kind: 'split' })
    const items = Array.isArray(body) ? body : [body]
    const byId = new Map<unknown, Record<string, unknown>>()
    for (const item of items) if (item && typeof item === 'object') byId.set((item as { id?: unknown }).id, item as Record<string, unknown>)
    return ids.map(id => {
      const item = byId.get(id) ?? (items.length === 1 && !asBatch ? (items[0] as Record<string, unknown>) : undefined)
      if (!item) return { kind: 'retry', reason: 'the node left this call out of its batch response' }
      if (item.error) {
        const error = item.error as JsonRpcErrorObject
        return {
          kind: classifyRpcError(error),
          reason: `JSON-RPC error ${error.code ?? '?'}: ${error.message ?? JSON.stringify(error)}`,
          code: error.code,
        }
      }
      if (!('result' in item)) return { kind: 'retry', reason: `malformed JSON-RPC response${snippet(JSON.stringify(item))}` }
      return { kind: 'ok', result: item.result }
    })
  }

  async function runGroup(group: Pending[], settled: Settled<unknown>[]): Promise<void> {
    const outcomes = await limit(() => send(group))
    if (outcomes[0]?.kind === 'split') {
      // The node refused the batch: send halves (single calls at the end), without counting an attempt.
      maxBatch = Math.max(1, Math.floor(group.length / 2))
      const half = Math.ceil(group.length / 2)
      await Promise.all([runGroup(group.slice(0, half), settled), runGroup(group.slice(half), settled)])
      return
    }
    const again: Pending[] = []
    let waitMs = 0
    let why: string | undefined
    outcomes.forEach((o, i) => {
      const p = group[i]
      stats.calls++
      if (o.kind === 'split') return
      if (o.kind === 'ok') settled[p.index] = { ok: true, result: o.result }
      else if (o.kind === 'retry' && p.attempt < retries) {
        again.push({ ...p, attempt: p.attempt + 1 })
        waitMs = Math.max(waitMs, o.waitMs ?? backoffMs(p.attempt, baseMs, capMs))
        why ??= o.reason
      } else {
        const reason = o.kind === 'retry' ? `${o.reason} (gave up after ${p.attempt + 1} attempts)` : o.reason
        settled[p.index] = { ok: false, error: new RpcError(p.call, reason, { code: o.code, kind: o.kind }) }
      }
    })
    if (!again.length) return
    stats.retries += again.length
    const wait = Math.min(waitMs, capMs)
    options.onRetry?.({
      calls: again.length,
      method: again[0].call.method,
      attempt: again[0].attempt + 1,
      attempts: retries + 1,
      waitMs: wait,
      reason: why ?? 'retry',
    })
    await new Promise(r => setTimeout(r, wait))
    await Promise.all(chunk(again, maxBatch).map(g => runGroup(g, settled)))
  }

  async function batchSettled<T>(calls: readonly RpcCall[]): Promise<Settled<T>[]> {
    const settled: Settled<unknown>[] = new Array(calls.length)
    const pending = calls.map((call, index) => ({ call, index, attempt: 0 }))
    await Promise.all(chunk(pending, maxBatch).map(g => runGroup(g, settled)))
    return settled as Settled<T>[]
  }

  async function batch<T>(calls: readonly RpcCall[]): Promise<T[]> {
    const settled = await batchSettled<T>(calls)
    return settled.map(s => {
      if (!s.ok) throw s.error
      return s.result
    })
  }

  return {
    url,
    stats,
    batchSettled,
    batch,
    request: async <T>(method: string, params: unknown[] = []) => (await batch<T>([{ method, params }]))[0],
  }
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

const snippet = (text: string): string => (text.trim() ? `: ${text.trim().slice(0, 200)}` : '')

/** Runs at most `n` tasks at once, in arrival order. */
export function semaphore(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0
  const waiting: (() => void)[] = []
  return async task => {
    if (active >= n) await new Promise<void>(r => waiting.push(r))
    active++
    try {
      return await task()
    } finally {
      active--
      waiting.shift()?.()
    }
  }
}

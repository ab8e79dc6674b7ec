import { describe, expect, it } from 'vitest'
import { backoffMs, classifyRpcError, isBatchRejected, isRetryableStatus, retryAfterMs } from '../../src/ingest/quirks.ts'

describe('provider quirks', () => {
  it('classifies JSON-RPC errors', () => {
    expect(classifyRpcError({ code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' })).toBe(
      'unsupported',
    )
    expect(classifyRpcError({ code: -32600, message: 'Unsupported method: eth_getBlockReceipts' })).toBe('unsupported')
    expect(classifyRpcError({ code: -32005, message: 'limit exceeded' })).toBe('retry')
    expect(classifyRpcError({ code: 429, message: 'Too Many Requests' })).toBe('retry')
    expect(classifyRpcError({ code: -32000, message: 'request timed out' })).toBe('retry')
    expect(classifyRpcError({ code: -32000, message: 'header not found' })).toBe('retry')
    expect(classifyRpcError({ code: -32602, message: 'invalid argument 0: hex string without 0x prefix' })).toBe('fatal')
    expect(classifyRpcError({ code: -32000, message: 'boom' })).toBe('fatal')
  })

  it('retries timeouts, rate limits and server errors only', () => {
    expect([408, 425, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true)
    expect([400, 401, 403, 404, 405, 413].some(isRetryableStatus)).toBe(false)
  })

  it('spots a batch answered by one error object', () => {
    expect(isBatchRejected({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } }, true)).toBe(true)
    expect(isBatchRejected([{ id: 1, result: 1 }], true)).toBe(false)
    expect(isBatchRejected({ id: 1, error: {} }, false)).toBe(false)
  })

  it('reads numeric Retry-After headers', () => {
    expect(retryAfterMs('2')).toBe(2000)
    expect(retryAfterMs('0.5')).toBe(500)
    expect(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT')).toBeUndefined()
    expect(retryAfterMs(null)).toBeUndefined()
  })

  it('backs off exponentially under a cap, with full jitter', () => {
    expect(backoffMs(0, 100, 5000, () => 1)).toBe(100)
    expect(backoffMs(3, 100, 5000, () => 1)).toBe(800)
    expect(backoffMs(10, 100, 5000, () => 1)).toBe(5000)
    expect(backoffMs(3, 100, 5000, () => 0)).toBe(0)
    expect(backoffMs(3, 100, 5000, () => 0.5)).toBe(400)
  })
})

/**
 * One error envelope for every failure the API reports:
 * `{"error": {"status", "code", "message", "parameter"?, ...details}}`.
 * Routes and parsers throw `ApiError`; `errorResponse` also maps the errors of
 * the layers below (storage, engine, filter parsing) and hides everything else
 * behind a 500 without internals.
 */
import { InvalidValueError } from '../schema/kinds.ts'
import { CorruptObjectError, StorageError } from '../store/types.ts'
import { InvalidRangeError, NoDataError } from '../query/errors.ts'

/** Seconds a client is asked to wait after a 503. */
export const RETRY_AFTER_SECONDS = 5

export interface ApiErrorExtra {
  /** The query parameter at fault, when there is one. */
  parameter?: string
  /** More members of the envelope (e.g. the coverage of a dataset). */
  details?: Record<string, unknown>
  /** Response headers that go with this error (Allow, WWW-Authenticate, Retry-After). */
  headers?: Record<string, string>
}

/** An error the client must see as it is: status, stable code and message. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly parameter?: string
  readonly details?: Record<string, unknown>
  readonly headers: Record<string, string>

  constructor(status: number, code: string, message: string, extra: ApiErrorExtra = {}) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.parameter = extra.parameter
    this.details = extra.details
    this.headers = extra.headers ?? {}
  }
}

/** A client's text inside a message, cut short so an error never echoes a whole URL. */
export const quote = (value: string): string => JSON.stringify(value.length > 80 ? value.slice(0, 80) + '…' : value)

/** 400 naming the parameter at fault. */
export const invalidParameter = (parameter: string, message: string, code = 'invalid_parameter'): ApiError =>
  new ApiError(400, code, message, { parameter })

/** The JSON body of an error response. */
export function errorBody(err: ApiError): string {
  return JSON.stringify({
    error: {
      status: err.status,
      code: err.code,
      message: err.message,
      ...(err.parameter === undefined ? {} : { parameter: err.parameter }),
      ...err.details,
    },
  })
}

/**
 * Maps any thrown value to the ApiError the client sees. Storage trouble becomes a
 * 503 with Retry-After; a range outside the stored blocks a 404 with the coverage;
 * anything unexpected a bare 500 (the caller logs the original).
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  if (err instanceof CorruptObjectError) {
    return new ApiError(
      503,
      'storage_corrupt',
      'a stored object is missing or damaged; the operator has been told (retrying will not help)',
    )
  }
  if (err instanceof StorageError) {
    return new ApiError(503, 'storage_unavailable', 'object storage is unavailable or timed out; retry later', {
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    })
  }
  if (err instanceof NoDataError) {
    return new ApiError(404, 'no_data', err.message, { details: { coverage: err.coverage, ...(err.range ? { range: err.range } : {}) } })
  }
  if (err instanceof InvalidRangeError)
    return new ApiError(400, 'invalid_range', err.message, { parameter: 'from_block', details: { range: err.range } })
  if (err instanceof InvalidValueError) return new ApiError(400, 'invalid_parameter', err.message)
  return new ApiError(500, 'internal_error', 'internal error')
}

/** True when the error is not one the API expects (it is logged, the client sees a 500). */
export const isUnexpected = (err: unknown): boolean => toApiError(err).status === 500

/** Errors the operator must hear of: the unexpected ones, and damaged or missing stored objects. */
export const needsOperator = (err: unknown): boolean => isUnexpected(err) || err instanceof CorruptObjectError

/** A JSON error response; `extraHeaders` (CORS) are added to the error's own. */
export function errorResponse(err: unknown, extraHeaders: Record<string, string> = {}): Response {
  const api = toApiError(err)
  return new Response(errorBody(api), {
    status: api.status,
    headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...extraHeaders, ...api.headers },
  })
}

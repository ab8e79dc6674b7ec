/**
 * Engine errors the HTTP layer maps to statuses: a query the data cannot answer
 * is not a server fault, and its body should tell the user what is there.
 */
import type { BlockRange } from '../manifest/types.ts'

/** Nothing is stored in the requested range (HTTP 404); `coverage` is what the dataset has. */
export class NoDataError extends Error {
  readonly coverage: BlockRange[]
  readonly range: BlockRange | null
  constructor(message: string, coverage: BlockRange[], range: BlockRange | null = null) {
    super(message)
    this.name = 'NoDataError'
    this.coverage = coverage
    this.range = range
  }
}

/** The range is reversed once `latest` is resolved, e.g. from_block past the newest block (HTTP 400). */
export class InvalidRangeError extends Error {
  readonly range: BlockRange
  constructor(message: string, range: BlockRange) {
    super(message)
    this.name = 'InvalidRangeError'
    this.range = range
  }
}

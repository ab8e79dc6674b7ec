/**
 * Where `shared/` is: beside the project root (`../shared`), wherever the clone lives.
 * SHARED_DIR overrides it.
 */
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

export const SHARED = process.env.SHARED_DIR ?? fileURLToPath(new URL('../../../shared/', import.meta.url))

export const sharedPath = (...parts: string[]): string => join(SHARED, ...parts)

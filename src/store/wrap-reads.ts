/**
 * An `ObjectStore` whose reads (get, head, list) each go through one step, writes straight
 * through: how a request's store renews its stream lease or waits for its fair share after
 * each storage answer (src/api), without repeating the store's shape in each.
 */
import type { ObjectStore } from './types.ts'

/** `store` with each read's promise passed through `after`. */
export function wrapReads(store: ObjectStore, after: <T>(read: Promise<T>) => Promise<T>): ObjectStore {
  return {
    get: (key, range) => after(store.get(key, range)),
    head: key => after(store.head(key)),
    list: prefix => after(store.list(prefix)),
    put: (key, body, options) => store.put(key, body, options),
    delete: key => store.delete(key),
  }
}

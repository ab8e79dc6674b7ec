/**
 * A fault-injecting ObjectStore for the chaos suite: wraps a real store and, by a seeded
 * random draw per read, adds latency, fails like a throttling or timing-out service
 * (StorageError, as the real stores report both), returns short bodies, flips one bit of
 * chosen objects, or lets chosen objects vanish (deleted between the manifest that names
 * them and the read). Writes pass through untouched. Deterministic for a seed, so a
 * failing scenario can be replayed.
 */
import { StorageError, type ByteRange, type GetResult, type ObjectStore } from '../../src/store/types.ts'
import { mulberry32 } from '../../scripts/dev/random.ts'

export interface Faults {
  /** Extra latency per read, ms: uniform in [0, latencyMs]. */
  latencyMs?: number
  /** Share of reads refused as throttled (SlowDown / 429). */
  throttle?: number
  /** Share of reads that hang for `timeoutMs` and then fail as timed out. */
  timeout?: number
  timeoutMs?: number
  /** Share of reads whose body comes back shorter than asked. */
  shortBody?: number
  /** Objects whose bytes get one bit flipped on every read, at `flipBit.bit` (counted in the object, mod its size in bits). */
  flipBit?: { keys: RegExp; bit: number }
  /** Objects that are gone when read (get and head answer null). */
  vanish?: RegExp
}

/** What the store did, for the suite to show that faults actually happened. */
export interface FaultCounts {
  reads: number
  throttled: number
  timedOut: number
  shortened: number
  flipped: number
  vanished: number
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

export function faultyStore(inner: ObjectStore, faults: Faults, seed = 1): { store: ObjectStore; counts: FaultCounts } {
  const r = mulberry32(seed)
  const counts: FaultCounts = { reads: 0, throttled: 0, timedOut: 0, shortened: 0, flipped: 0, vanished: 0 }

  async function before(key: string): Promise<void> {
    counts.reads++
    if (faults.latencyMs) await sleep(r() * faults.latencyMs)
    if (faults.throttle && r() < faults.throttle) {
      counts.throttled++
      throw new StorageError(`SlowDown: please reduce your request rate (${key})`)
    }
    if (faults.timeout && r() < faults.timeout) {
      counts.timedOut++
      await sleep(faults.timeoutMs ?? 20)
      throw new StorageError(`timed out reading ${key}`)
    }
  }

  const store: ObjectStore = {
    async get(key: string, range?: ByteRange): Promise<GetResult | null> {
      await before(key)
      if (faults.vanish?.test(key)) {
        counts.vanished++
        return null
      }
      const got = await inner.get(key, range)
      if (!got) return got
      let body = got.body
      if (faults.flipBit?.keys.test(key)) {
        const bit = faults.flipBit.bit % (got.size * 8)
        const at = Math.floor(bit / 8) - got.offset
        if (at >= 0 && at < body.length) {
          body = body.slice()
          body[at] ^= 1 << (bit % 8)
          counts.flipped++
        }
      }
      if (faults.shortBody && body.length > 1 && r() < faults.shortBody) {
        counts.shortened++
        body = body.subarray(0, Math.floor(r() * body.length))
      }
      return { ...got, body }
    },
    async head(key) {
      await before(key)
      if (faults.vanish?.test(key)) {
        counts.vanished++
        return null
      }
      return inner.head(key)
    },
    put: (key, body, options) => inner.put(key, body, options),
    list: prefix => inner.list(prefix),
    delete: key => inner.delete(key),
  }
  return { store, counts }
}

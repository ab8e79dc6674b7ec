/**
 * Deterministic pseudo-random numbers (mulberry32) for the sample generators, benchmarks and
 * tests: the same seed always gives the same data, so samples are reproducible byte for byte
 * and a failing case can be replayed.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

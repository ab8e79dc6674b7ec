/**
 * Bounded look-ahead that keeps order: the scan starts work on the next partitions
 * and row groups while the current one is being consumed, yet emits results in the
 * order of its input, and holds at most a bounded amount of work in flight.
 */

export interface LookAhead<T> {
  /** Items started and not yet consumed, at most (default 8). */
  count?: number
  /** Weight of an item (e.g. rows it will decode); in-flight weight stays within `maxWeight` (one item always may run). */
  weight?: (item: T) => number
  maxWeight?: number
  /** Start with one item in flight and double with every result consumed (for consumers that may stop early). */
  rampUp?: boolean
}

/**
 * Maps `source` through `fn` with look-ahead, yielding results in source order. An
 * error surfaces when its item's turn comes (a failing source after the items it
 * gave); stopping early stops pulling the source.
 */
export async function* mapOrdered<T, R>(
  source: AsyncIterable<T>,
  fn: (item: T) => Promise<R>,
  options: LookAhead<T> = {},
): AsyncGenerator<R> {
  const count = options.count ?? 8
  let allowed = options.rampUp ? 1 : count
  const weightOf = options.weight ?? (() => 0)
  const maxWeight = options.maxWeight ?? Infinity
  const iterator = source[Symbol.asyncIterator]()
  const queue: { result: Promise<R>; weight: number }[] = []
  let weight = 0
  let done = false
  let held: T | undefined
  let holding = false
  let failure: { error: unknown } | undefined
  try {
    for (;;) {
      while (!done && queue.length < allowed) {
        if (!holding) {
          let next: IteratorResult<T>
          try {
            next = await iterator.next()
          } catch (error) {
            // Items already started come first; the source's failure follows them.
            failure = { error }
            done = true
            break
          }
          if (next.done) {
            done = true
            break
          }
          held = next.value
          holding = true
        }
        const w = weightOf(held as T)
        if (queue.length > 0 && weight + w > maxWeight) break
        const result = fn(held as T)
        result.catch(() => {})
        queue.push({ result, weight: w })
        weight += w
        holding = false
        held = undefined
      }
      const head = queue.shift()
      if (!head) {
        if (failure) throw failure.error
        return
      }
      weight -= head.weight
      yield await head.result
      allowed = Math.min(count, allowed * 2)
    }
  } finally {
    if (!done) await iterator.return?.()
  }
}

/** The async-iterable helpers the layers share: batches travel as async iterables. */

/** Items already in memory as an async iterable (a cut response, one status batch). */
export async function* streamOf<T>(items: Iterable<T>): AsyncGenerator<T> {
  yield* items
}

/** The items of `source` that `keep` accepts, in order. */
export async function* filterStream<T>(source: AsyncIterable<T>, keep: (item: T) => boolean): AsyncGenerator<T> {
  for await (const item of source) if (keep(item)) yield item
}

/**
 * What every `npm run bench` section is: a name, whether a plain `npm run bench`
 * runs it, and a function that measures and returns its figures as Markdown.
 */

/** Where a section may keep data and how it reports progress. */
export interface BenchContext {
  /** The project root. */
  root: string
  /** A git-ignored cache directory (`.data/bench`) for data worth keeping between runs. */
  cache: string
  /** A progress line (stderr; stdout carries only the figures). */
  log(line: string): void
}

export interface Section {
  name: string
  /** One line saying what it measures. */
  title: string
  /** Left out of `npm run bench` without arguments (run it by name, or with `all`). */
  slow: boolean
  /** Measures; returns Markdown (tables and a line per target met or missed). */
  run(ctx: BenchContext): Promise<string>
}

/**
 * Printing for `npm run bench`: the machine a run was measured on, Markdown tables,
 * and number formats, so every section's output can be pasted into BENCHMARKS.md.
 */
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, totalmem } from 'node:os'

/** The machine, the moment and the code a run measured. */
export function machine(root: string): string {
  const cores = cpus()
  let commit = 'unknown'
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim()
    if (dirty) commit += ' + uncommitted changes'
  } catch {
    // not a git checkout: the commit stays unknown
  }
  return [
    `- date: ${new Date().toISOString()}`,
    `- machine: ${cores.length} cores (${cores[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${loadavg()
      .map(x => x.toFixed(2))
      .join(' ')}`,
    `- Node ${process.version} on ${process.platform}-${process.arch}; commit ${commit}`,
  ].join('\n')
}

/** A Markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cell = (v: string | number) => String(v).replace(/\|/g, '\\|')
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map(r => `| ${r.map(cell).join(' | ')} |`)].join(
    '\n',
  )
}

/** 1234567 → 1,234,567 */
export const int = (n: number): string => Math.round(n).toLocaleString('en')

/** Milliseconds with one decimal below 100, none above. */
export const ms = (n: number): string => (n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString('en'))

/** Bytes as B, KB or MB (decimal units). */
export function bytes(n: number): string {
  if (n < 1_000) return `${n} B`
  if (n < 1_000_000) return `${(n / 1_000).toFixed(1)} KB`
  return `${(n / 1_000_000).toFixed(2)} MB`
}

/** A ratio with two decimals. */
/** The middle value of timed runs (the upper one of an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

export const ratio = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(2) : '-')

/** A target line: met or not, with the figure that decided it. */
export const target = (met: boolean, text: string): string => `- ${met ? 'MET' : 'NOT MET'}: ${text}`

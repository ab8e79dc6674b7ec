/**
 * Ingest progress for people and for programs: on a terminal one line that updates
 * in place (blocks/s, rows, ETA); otherwise one JSON object per published unit and a
 * final summary, so logs stay quiet and parseable.
 */
import type { IngestReport, Progress } from './run.ts'

export interface ProgressOutput {
  isTTY?: boolean
  write(text: string): unknown
}

export interface ProgressReporter {
  onProgress(p: Progress): void
  log(line: string): void
  done(report: IngestReport): void
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0)

/** Milliseconds as `1h02m`, `3m05s` or `12s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '?'
  const s = Math.max(0, Math.round(ms / 1000))
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${s}s`
}

/** The terminal line for a progress event. */
export function progressLine(p: Progress): string {
  const pct = p.totalBlocks ? ((100 * p.blocks) / p.totalBlocks).toFixed(1) : '100.0'
  return (
    `blocks ${p.blocks}/${p.totalBlocks} (${pct}%) at ${p.range[1]} · ${p.blocksPerSecond.toFixed(1)} blocks/s · ` +
    `${sum(p.rows)} rows (${Math.round(p.rowsPerSecond)}/s) · ETA ${formatDuration(p.etaMs)}`
  )
}

/** The JSON record for a progress event (one line per published unit). */
export function progressRecord(p: Progress): Record<string, unknown> {
  return {
    event: 'published',
    from: p.range[0],
    to: p.range[1],
    blocks: p.blocks,
    total_blocks: p.totalBlocks,
    rows: p.rows,
    bytes: p.bytes,
    blocks_per_second: Number(p.blocksPerSecond.toFixed(2)),
    rows_per_second: Number(p.rowsPerSecond.toFixed(1)),
    eta_ms: Number.isFinite(p.etaMs) ? Math.round(p.etaMs) : null,
    generation: p.generation,
  }
}

/** The JSON summary at the end of a run. */
export function summaryRecord(r: IngestReport): Record<string, unknown> {
  return {
    event: 'done',
    chain: r.chain,
    from: r.from,
    to: r.to,
    units: r.units,
    blocks: r.blocks,
    rows: r.rows,
    bytes: r.bytes,
    puts_skipped: r.putsSkipped,
    elapsed_ms: r.elapsedMs,
    generation: r.generation,
    coverage: r.coverage,
  }
}

/** A reporter writing to `out` (usually process.stderr for lines, process.stdout for JSON). */
export function progressReporter(out: ProgressOutput): ProgressReporter {
  let open = false
  const endLine = () => {
    if (open) out.write('\n')
    open = false
  }
  if (out.isTTY) {
    return {
      onProgress(p) {
        out.write(`\r\x1b[K${progressLine(p)}`)
        open = true
      },
      log(line) {
        endLine()
        out.write(`${line}\n`)
      },
      done(r) {
        endLine()
        const secs = Math.max(r.elapsedMs, 1) / 1000
        out.write(
          `done: ${r.blocks} blocks, ${sum(r.rows)} rows, ${sum(r.bytes)} bytes in ${formatDuration(r.elapsedMs)} (${(r.blocks / secs).toFixed(1)} blocks/s); generation ${r.generation}\n`,
        )
      },
    }
  }
  return {
    onProgress: p => out.write(`${JSON.stringify(progressRecord(p))}\n`),
    log: line => out.write(`${JSON.stringify({ event: 'log', message: line })}\n`),
    done: r => out.write(`${JSON.stringify(summaryRecord(r))}\n`),
  }
}

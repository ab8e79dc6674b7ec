import { describe, expect, it } from 'vitest'
import { formatDuration, progressLine, progressReporter } from '../../src/ingest/progress.ts'
import type { IngestReport, Progress } from '../../src/ingest/run.ts'

const progress: Progress = {
  range: [20, 29],
  blocks: 20,
  totalBlocks: 80,
  rows: { blocks: 20, logs: 100 },
  bytes: { blocks: 1000, logs: 5000 },
  elapsedMs: 4000,
  blocksPerSecond: 5,
  rowsPerSecond: 30,
  etaMs: 12_000,
  generation: 2,
}
const report: IngestReport = {
  chain: 'ETH',
  from: 0,
  to: 79,
  units: 8,
  blocks: 80,
  rows: { blocks: 80, logs: 400 },
  bytes: { blocks: 4000, logs: 20000 },
  putsSkipped: 0,
  elapsedMs: 16_000,
  generation: 8,
  coverage: { blocks: [[0, 79]], logs: [[0, 79]] },
}

function capture(isTTY: boolean) {
  let text = ''
  return { out: { isTTY, write: (s: string) => (text += s) }, text: () => text }
}

describe('progress', () => {
  it('formats durations', () => {
    expect(formatDuration(12_400)).toBe('12s')
    expect(formatDuration(185_000)).toBe('3m05s')
    expect(formatDuration(3_725_000)).toBe('1h02m')
    expect(formatDuration(Infinity)).toBe('?')
  })

  it('on a terminal, rewrites one line with blocks/s, rows and ETA', () => {
    const c = capture(true)
    const r = progressReporter(c.out)
    r.onProgress(progress)
    r.onProgress({ ...progress, blocks: 30 })
    r.done(report)
    const text = c.text()
    expect(text.split('\n').length).toBe(3)
    expect(text.match(/\r\x1b\[K/g)!.length).toBe(2)
    expect(progressLine(progress)).toBe('blocks 20/80 (25.0%) at 29 · 5.0 blocks/s · 120 rows (30/s) · ETA 12s')
    expect(text).toMatch(/done: 80 blocks, 480 rows, 24000 bytes in 16s \(5\.0 blocks\/s\); generation 8\n$/)
  })

  it('otherwise writes one JSON object per line', () => {
    const c = capture(false)
    const r = progressReporter(c.out)
    r.onProgress(progress)
    r.log('hello')
    r.done(report)
    const lines = c
      .text()
      .trimEnd()
      .split('\n')
      .map(l => JSON.parse(l))
    expect(lines.map(l => l.event)).toEqual(['published', 'log', 'done'])
    expect(lines[0]).toMatchObject({ from: 20, to: 29, blocks: 20, total_blocks: 80, eta_ms: 12000 })
    expect(lines[2]).toMatchObject({ blocks: 80, rows: { blocks: 80, logs: 400 }, coverage: { blocks: [[0, 79]] } })
  })
})

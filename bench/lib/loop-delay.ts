/**
 * Preloaded into the load bench's Node server (`node --import`): the server's event-loop
 * delay, so a slow request can be told apart from a busy loop. On SIGUSR2 it prints one line,
 * `event-loop-delay {"p50":…,"p99":…,"max":…}` (ms, since the previous line), and starts over.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'

const histogram = monitorEventLoopDelay({ resolution: 5 })
histogram.enable()
process.on('SIGUSR2', () => {
  const ms = (ns: number) => Math.round(ns / 1e4) / 100
  const delay = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) }
  process.stdout.write(`event-loop-delay ${JSON.stringify(delay)}\n`)
  histogram.reset()
})

/**
 * `npm run bench -- live`: the real-time figures of bench/lib/live.ts: delivery
 * latency from a block mined on anvil to its first row at a WebSocket subscriber
 * (median and p99 over ≥200 blocks), messages per second to 100 subscribers, and
 * exactness (no row lost or repeated).
 */
import type { Section } from './section.ts'

export const live: Section = {
  name: 'live',
  title: 'WebSocket delivery latency from anvil to a subscriber and fan-out to 100 subscribers',
  slow: false,
  async run(ctx) {
    const { liveBench, liveBenchMarkdown } = await import('./lib/live.ts')
    return liveBenchMarkdown(await liveBench({ log: ctx.log }))
  },
}

/**
 * `npm run bench -- replay`: history over a WebSocket, as an indexer backfills before it
 * follows the head. A client subscribes to a bounded range of the 1 M-log lake
 * (bench/lib/lake.ts) on the Node server as `npm run serve` starts it and reads every
 * message to the `end`; the same rows as one `json_stream` answer over HTTP (curl) from the
 * same server, the two interleaved. Rows/s and MB/s of each; the client parses the frames of
 * its first run only (to count the rows, which must equal the HTTP answer's), so the figures
 * are the server's, not the client's JSON parser.
 */
import { Agent } from 'node:http'
import WebSocket from 'ws'
import { lakeDir } from './cache.ts'
import { AUTH, curlGet, startNode, timedGet } from './lib/http.ts'
import { benchLake } from './lib/lake.ts'
import { bytes, int, median, ms, ratio, table, target } from './report.ts'
import type { Section } from './section.ts'

const LOGS = 1_000_000
const RUNS = 5

interface Replayed {
  ms: number
  bytes: number
  messages: number
  /** Rows of the `rows` messages, counted when asked. */
  rows: number
}

/** A bounded subscription read to its `end` message; `count` parses the rows messages to count their rows. */
function readReplay(url: string, count: boolean): Promise<Replayed> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const got: Replayed = { ms: 0, bytes: 0, messages: 0, rows: 0 }
    const ws = new WebSocket(url, { headers: { authorization: AUTH } })
    ws.on('message', (data: Buffer) => {
      got.messages++
      got.bytes += data.length
      // '{"type":"rows"': the 10th byte starts the type's value.
      if (data[9] === 0x72 && data[10] === 0x6f) {
        if (count) got.rows += (JSON.parse(data.toString('utf8')) as { rows: unknown[] }).rows.length
        return
      }
      const m = JSON.parse(data.toString('utf8')) as { type: string; code?: string; message?: string }
      if (m.type === 'error') reject(new Error(`replay failed: ${m.code}: ${m.message}`))
      if (m.type === 'end') {
        got.ms = performance.now() - started
        ws.close()
        resolve(got)
      }
    })
    ws.once('error', reject)
    ws.once('close', code => reject(new Error(`the socket closed (${code}) before the end message`)))
  })
}

export const replay: Section = {
  name: 'replay',
  title: 'history replayed over a WebSocket from the Node server, against the same rows over HTTP',
  slow: false,
  async run(ctx) {
    const dir = lakeDir(ctx.root, ctx.cache, LOGS)
    const lake = await benchLake({ dir, logs: LOGS })
    const server = await startNode(ctx.root, dir)
    const ranges: [string, number, number][] = [
      ['one partition (500 blocks)', lake.from + 1000, lake.from + 1499],
      [`the whole lake (${int(lake.to - lake.from + 1)} blocks)`, lake.from, lake.to],
    ]
    const rows: (string | number)[][] = []
    const checks: string[] = []
    try {
      for (const [name, from, to] of ranges) {
        ctx.log(`${name}: blocks ${from}-${to}, ${RUNS} runs each way`)
        const query = `v1/api/logs?chains=ETH&from_block=${from}&to_block=${to}`
        const ws = `${server.url.replace(/^http/, 'ws')}/${query}`
        const http = `${server.url}/${query}&format=json_stream`
        const counted = await readReplay(ws, true)
        const agent = new Agent({ keepAlive: false })
        const answer = await timedGet(http, agent, 'lines')
        agent.destroy()
        if (answer.status !== 200) throw new Error(`HTTP answered ${answer.status} to ${http}`)
        const httpRows = answer.newlines
        const times = { ws: [] as number[], http: [] as number[] }
        let last = counted
        for (let i = 0; i < RUNS; i++) {
          const order = i % 2 ? (['http', 'ws'] as const) : (['ws', 'http'] as const)
          for (const way of order) {
            await new Promise(r => setTimeout(r, 300))
            if (way === 'ws') {
              last = await readReplay(ws, false)
              times.ws.push(last.ms)
            } else times.http.push((await curlGet(http)).ms)
          }
        }
        const wsMs = median(times.ws)
        const httpMs = median(times.http)
        rows.push([
          name,
          int(counted.rows),
          int(last.messages),
          bytes(last.bytes),
          ms(wsMs),
          int(counted.rows / (wsMs / 1000)),
          bytes(last.bytes / (wsMs / 1000)) + '/s',
          ms(httpMs),
          int(counted.rows / (httpMs / 1000)),
          ratio(wsMs, httpMs),
        ])
        checks.push(
          target(
            counted.rows > 0 && counted.rows === httpRows,
            `${name}: the replay's rows equal the HTTP answer's (${int(counted.rows)} and ${int(httpRows)})`,
          ),
        )
      }
    } finally {
      await server.stop()
    }
    return [
      table(
        [
          'range',
          'rows',
          'messages',
          'bytes',
          'WebSocket ms',
          'WebSocket rows/s',
          'WebSocket bytes/s',
          'HTTP ms',
          'HTTP rows/s',
          'WebSocket / HTTP',
        ],
        rows,
      ),
      '',
      `Medians of ${RUNS} runs each, interleaved; one client at a time.`,
      '',
      ...checks,
    ].join('\n')
  },
}

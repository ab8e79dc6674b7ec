/**
 * Test helpers for the WebSocket API: a real anvil chain with a log-emitting
 * contract, blocks mined on purpose, the Node server with the live service, and
 * WebSocket clients that record every message. Expected rows come from the node's
 * own eth_getLogs, never from our encoders.
 */
import { mnemonicToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import WebSocket from 'ws'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseUsers } from '../../src/api/auth.ts'
import type { RateLimiter } from '../../src/api/limits.ts'
import { DEVNET_MNEMONIC, startAnvil, type Anvil } from '../../scripts/dev/devnet/anvil.ts'
import type { FollowSpec, LiveService } from '../../src/node/live.ts'
import { startNodeServer } from '../../src/node/server.ts'
import { createApp } from '../../src/http/app.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import type { LiveLimits } from '../../src/live/protocol.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { tempStore } from '../support/stores.ts'
import { basic } from '../support/basic.ts'
import { expect } from 'vitest'

export const USERS = 'alice:secret,bob:hunter2'

/** Runtime: copies the calldata to memory and emits it as LOG3(topic0 = 0x77…77, block number, caller). */
const RUNTIME = `36600060003733437f${'77'.repeat(32)}366000a300`
const INIT = `0x602e80600b6000396000f3${RUNTIME}` as Hex
export const TOPIC0 = '0x' + '77'.repeat(32)

export type Json = any

export async function rpc<T = Json>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { result: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}

/** A devnet with the emitter deployed and automine off: blocks are mined by `mine`. */
export class Chainlet {
  readonly anvil: Anvil
  readonly contract: Hex
  readonly accounts = [0, 1, 2, 3].map(i => mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: i }))
  private nonces: number[]

  private constructor(anvil: Anvil, contract: Hex, nonces: number[]) {
    this.anvil = anvil
    this.contract = contract
    this.nonces = nonces
  }

  static async start(): Promise<Chainlet> {
    const anvil = await startAnvil()
    try {
      await rpc(anvil.url, 'evm_setAutomine', [false])
      const deployer = mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: 0 })
      const raw = await deployer.signTransaction({
        chainId: 31337,
        nonce: 0,
        gas: 200_000n,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        data: INIT,
        type: 'eip1559',
      })
      const hash = await rpc<Hex>(anvil.url, 'eth_sendRawTransaction', [raw])
      await rpc(anvil.url, 'evm_mine')
      const receipt = await rpc<{ contractAddress: Hex }>(anvil.url, 'eth_getTransactionReceipt', [hash])
      return new Chainlet(anvil, receipt.contractAddress, [1, 0, 0, 0])
    } catch (err) {
      await anvil.stop()
      throw err
    }
  }

  get url(): string {
    return this.anvil.url
  }

  address(i: number): string {
    return this.accounts[i].address.toLowerCase()
  }

  /** A signed call to the emitter from account `from` (its next nonce), emitting `data`. */
  async signedCall(from: number, data: Hex): Promise<Hex> {
    return this.accounts[from].signTransaction({
      chainId: 31337,
      nonce: this.nonces[from]++,
      to: this.contract,
      data,
      gas: 60_000n + 40n * BigInt(data.length),
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      type: 'eip1559',
    })
  }

  /** Mines one block holding one emitter call per entry (account index, data); returns its number. */
  async mine(calls: readonly [from: number, data: Hex][] = []): Promise<number> {
    for (const [from, data] of calls) await rpc(this.url, 'eth_sendRawTransaction', [await this.signedCall(from, data)])
    await rpc(this.url, 'evm_mine')
    return this.head()
  }

  async head(): Promise<number> {
    return Number(BigInt(await rpc<string>(this.url, 'eth_blockNumber')))
  }

  /** Replaces the last `depth` blocks with new ones; `txs` go into the given new block offsets. */
  async reorg(depth: number, txs: [Hex, number][] = []): Promise<void> {
    await rpc(this.url, 'anvil_reorg', [depth, txs])
  }

  /** Forgets the nonces used by blocks a reorg dropped: reads them back from the node. */
  async syncNonces(): Promise<void> {
    this.nonces = await Promise.all(
      this.accounts.map(async a => Number(BigInt(await rpc<string>(this.url, 'eth_getTransactionCount', [a.address, 'latest'])))),
    )
  }

  async blockHash(n: number): Promise<string> {
    return (await rpc<Json>(this.url, 'eth_getBlockByNumber', ['0x' + n.toString(16), false])).hash
  }

  /** The node's logs of `from`..`to` as the API's JSON records (independent of our encoders). */
  async logRecords(from: number, to: number, filter: { topics?: (string | null)[]; address?: string } = {}): Promise<Json[]> {
    const logs = await rpc<Json[]>(this.url, 'eth_getLogs', [
      { fromBlock: '0x' + from.toString(16), toBlock: '0x' + to.toString(16), ...filter },
    ])
    return logs.map(logRecord)
  }

  stop(): Promise<void> {
    return this.anvil.stop()
  }
}

/** An eth_getLogs entry as the API's log record. */
export function logRecord(l: Json): Json {
  const topic = (i: number) => l.topics[i] ?? null
  return {
    chain: 31337,
    block_number: l.blockNumber,
    block_hash: l.blockHash,
    transaction_index: Number(BigInt(l.transactionIndex)),
    transaction_hash: l.transactionHash,
    log_index: l.logIndex,
    address: l.address.toLowerCase(),
    topic0: topic(0),
    topic1: topic(1),
    topic2: topic(2),
    topic3: topic(3),
    data: l.data,
    removed: false,
  }
}

/** A 32-byte topic holding an address. */
export const addressTopic = (address: string): string => '0x' + address.slice(2).toLowerCase().padStart(64, '0')

export interface LiveServer {
  url: string
  wsUrl: string
  port: number
  service: LiveService
  store: ObjectStore
  close(): Promise<void>
}

/** The Node server with the live service on 127.0.0.1. */
export async function startLiveServer(
  opts: {
    store?: ObjectStore
    follow?: FollowSpec[]
    limits?: Partial<LiveLimits>
    /** The per-user request rate (default the server's, 50 per 10 s). */
    requests?: RateLimiter
    pollIntervalMs?: number
    closeGraceMs?: number
    log?: (line: string) => void
  } = {},
): Promise<LiveServer> {
  const store = opts.store ?? (await tempStore()).store
  const users = await parseUsers(USERS)
  const running = await startNodeServer({
    store,
    users,
    follow: opts.follow,
    limits: opts.limits,
    requests: opts.requests,
    pollIntervalMs: opts.pollIntervalMs ?? 20,
    closeGraceMs: opts.closeGraceMs,
    log: opts.log ?? (() => {}),
  })
  return {
    url: running.url,
    wsUrl: running.url.replace('http', 'ws'),
    port: running.port,
    service: running.live,
    store,
    close: () => running.close(),
  }
}

/** What the server sent, and how the socket ended. */
export interface Recorder {
  messages: Json[]
  closed: Promise<{ code: number; reason: string }>
  /** Resolves with the first message (from index `from` on) that satisfies `test`. */
  waitFor(test: (m: Json) => boolean, from?: number): Promise<Json>
  send(data: string | Buffer): void
  close(): void
  /** Drops the connection without a close handshake (a killed client). */
  kill(): void
}

function recorder(
  onMessage: (cb: (text: string) => void) => void,
  send: (d: string | Buffer) => void,
  close: () => void,
  kill: () => void,
  closed: Promise<{ code: number; reason: string }>,
): Recorder {
  const messages: Json[] = []
  const waiters: { test: (m: Json) => boolean; from: number; resolve: (m: Json) => void }[] = []
  onMessage(text => {
    const m = JSON.parse(text)
    messages.push(m)
    for (const w of [...waiters]) {
      if (messages.length - 1 >= w.from && w.test(m)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  })
  return {
    messages,
    closed,
    waitFor(test, from = 0) {
      const found = messages.slice(from).find(test)
      if (found) return Promise.resolve(found)
      return new Promise(resolve => waiters.push({ test, from, resolve }))
    },
    send,
    close,
    kill,
  }
}

/** A client on the `ws` package; `headers` go on the upgrade request. */
export function wsClient(url: string, opts: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<Recorder> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers })
    const closed = new Promise<{ code: number; reason: string }>(r =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    )
    let onText: (text: string) => void = () => {}
    // Every server message is a text frame, whether the server wrote it as a string or as bytes.
    ws.on('message', (data, isBinary) => {
      expect(isBinary, 'a binary frame from the server').toBe(false)
      onText(data.toString())
    })
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c))
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}`), {
            status: res.statusCode,
            body: JSON.parse(body || 'null'),
            headers: res.headers,
          }),
        ),
      )
    })
    ws.once('error', reject)
    const rec = recorder(
      cb => (onText = cb),
      d => ws.send(d),
      () => ws.close(),
      () => ws.terminate(),
      closed,
    )
    ws.once('open', () => resolve(rec))
  })
}

/** A client on Node's built-in WebSocket (undici), as a browser would connect: no headers, optional subprotocols. */
export function globalClient(url: string, protocols: string[] = []): Promise<Recorder> {
  return new Promise((resolve, reject) => {
    const ws = new globalThis.WebSocket(url, protocols)
    const closed = new Promise<{ code: number; reason: string }>(r =>
      ws.addEventListener('close', e => r({ code: e.code, reason: e.reason })),
    )
    let onText: (text: string) => void = () => {}
    ws.addEventListener('message', e => onText(String(e.data)))
    let opened = false
    ws.addEventListener('error', () => {
      if (!opened) reject(new Error('connection failed'))
    })
    const rec = recorder(
      cb => (onText = cb),
      d => ws.send(d),
      () => ws.close(),
      () => ws.close(),
      closed,
    )
    ws.addEventListener('open', () => {
      opened = true
      resolve(rec)
    })
  })
}

/** The rows of `rows` messages (not removed ones), in order. */
export const rowsOf = (messages: readonly Json[]): Json[] => messages.filter(m => m.type === 'rows' && !m.removed).flatMap(m => m.rows)

/** The last progress cursor. */
export const cursorOf = (messages: readonly Json[]): number => {
  const p = messages.filter(m => m.type === 'progress' || m.type === 'reorg').at(-1)
  return p ? p.cursor : -1
}

/**
 * A hand-written WebSocket client on a bare TCP socket (a third, independent
 * implementation): it can stop reading, like a consumer that falls behind.
 */
export interface RawClient {
  /** Upgrade response status. */
  status: number
  messages: Json[]
  /** Stops reading from the socket. */
  pause(): void
  /** Reads again; resolves with the close frame's code once it arrives (or 1006 when the socket ends without one). */
  resume(): Promise<number>
  /** Sends a text frame (masked, as a client must). */
  send(text: string): void
  destroy(): void
}

export async function rawClient(port: number, path: string, headers: Record<string, string>): Promise<RawClient> {
  const { connect } = await import('node:net')
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const key = Buffer.from('0123456789abcdef').toString('base64')
  socket.write(
    [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${key}`,
      'Sec-WebSocket-Version: 13',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      '',
      '',
    ].join('\r\n'),
  )
  let buf = Buffer.alloc(0)
  let status = 0
  const messages: Json[] = []
  let closeCode: number | undefined
  /** Every resume() waiting for the close (a bursty reader calls it many times). */
  const closeWaiters: ((code: number) => void)[] = []
  socket.once('close', () => {
    for (const w of closeWaiters.splice(0)) w(closeCode ?? 1006)
  })
  // Chunks wait in a list until the frame they belong to is whole: one copy per frame.
  let waiting: Buffer[] = []
  let waitingBytes = 0
  let need = 2
  const frames = () => {
    for (;;) {
      need = 2
      if (buf.length < 2) return
      const opcode = buf[0] & 0x0f
      let len = buf[1] & 0x7f
      let at = 2
      if (len === 126) {
        need = 4
        if (buf.length < 4) return
        len = buf.readUInt16BE(2)
        at = 4
      } else if (len === 127) {
        need = 10
        if (buf.length < 10) return
        len = Number(buf.readBigUInt64BE(2))
        at = 10
      }
      need = at + len
      if (buf.length < need) return
      const payload = buf.subarray(at, at + len)
      buf = buf.subarray(at + len)
      if (opcode === 1) messages.push(JSON.parse(payload.toString('utf8')))
      if (opcode === 8) {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005
        closeCode = code
        for (const w of closeWaiters.splice(0)) w(code)
      }
    }
  }
  await new Promise<void>(resolve => {
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      status = Number(/^HTTP\/1\.1 (\d+)/.exec(buf.subarray(0, end).toString())?.[1])
      buf = buf.subarray(end + 4)
      socket.off('data', onData)
      socket.on('data', (c: Buffer) => {
        waiting.push(c)
        waitingBytes += c.length
        if (buf.length + waitingBytes < need) return
        buf = Buffer.concat([buf, ...waiting])
        waiting = []
        waitingBytes = 0
        frames()
      })
      frames()
      resolve()
    }
    socket.on('data', onData)
  })
  return {
    status,
    messages,
    pause: () => socket.pause(),
    resume: () =>
      new Promise<number>(resolve => {
        if (closeCode !== undefined) return resolve(closeCode)
        if (socket.destroyed) return resolve(1006)
        closeWaiters.push(resolve)
        socket.resume()
      }),
    send: text => {
      const payload = Buffer.from(text, 'utf8')
      if (payload.length > 125) throw new Error('rawClient sends short frames only')
      const mask = Buffer.from([0x11, 0x22, 0x33, 0x44])
      socket.write(
        Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b: number, i: number) => b ^ mask[i % 4])]),
      )
    },
    destroy: () => socket.destroy(),
  }
}

/**
 * The browser example of docs/websocket.md, run as written by Node's built-in WebSocket:
 * only the host, the chain and its first block, and the credentials are replaced. It
 * never acks. Resolves with what `handle` received once `until` holds.
 */
export async function runDocsBrowserExample(
  base: string,
  chain: string,
  fromBlock: number,
  credentials: { user: string; password: string },
  until: (messages: Json[]) => boolean,
): Promise<{ messages: Json[]; socket: globalThis.WebSocket }> {
  const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'websocket.md'), 'utf8')
  const example = /```js\n(\/\/ Browser[\s\S]*?)```/.exec(docs)?.[1]
  if (!example) throw new Error('docs/websocket.md has no browser example')
  const code = example
    .replace('wss://api.example.com', base)
    .replace('chains=ETH&from_block=19000000', `chains=${chain}&from_block=${fromBlock}`)
    .replace(
      "user: 'me', password: 'secret'",
      `user: ${JSON.stringify(credentials.user)}, password: ${JSON.stringify(credentials.password)}`,
    )
  const messages: Json[] = []
  const run = new Function('WebSocket', 'handle', `${code}\nreturn ws`) as (
    w: typeof globalThis.WebSocket,
    h: (m: Json) => void,
  ) => globalThis.WebSocket
  let done!: () => void
  const finished = new Promise<void>(r => (done = r))
  const socket = run(globalThis.WebSocket, m => {
    messages.push(m)
    if (until(messages)) done()
  })
  socket.addEventListener('close', () => done())
  await finished
  return { messages, socket }
}

/** An HTTP poller as a user writes one: from the last block seen + 1, until `to` is passed; the rows and the last block read. */
export async function pollLogs(
  base: string,
  headers: Record<string, string>,
  chain: string,
  from: number,
  to: number,
): Promise<{ rows: Json[]; last: number }> {
  const rows: Json[] = []
  let next = from
  while (next <= to) {
    const res = await fetch(`${base}/v1/api/logs?chains=${chain}&from_block=${next}&format=json`, { headers })
    if (res.status !== 200) throw new Error(`poll: HTTP ${res.status} ${await res.text()}`)
    rows.push(...((await res.json()) as Json[]))
    const latest = Number(res.headers.get('x-latest-block'))
    if (latest >= next) next = latest + 1
    else await new Promise(r => setTimeout(r, 50))
  }
  return { rows, last: next - 1 }
}

/**
 * The docs' browser example as written and an HTTP poller from last + 1, against one runtime:
 * from the block after the head while `chain` mines six more. The example's filter (USDC
 * transfers) matches nothing on the devnet, so it gets progress markers only, carrying the
 * blocks' hashes; the poller gets every log of the blocks it read.
 */
export async function checkDocsExampleAndPoller(chain: Chainlet, wsBase: string, httpBase: string): Promise<void> {
  const from = (await chain.head()) + 1
  const minedTo = from + 5
  const mining = (async () => {
    for (let b = from; b <= minedTo; b++) await chain.mine([[1 + (b % 3), '0x5151']])
  })()
  const example = await runDocsBrowserExample(wsBase, 'DEVNET', from, { user: 'alice', password: 'secret' }, ms =>
    ms.some(m => m.type === 'progress' && m.cursor >= minedTo),
  )
  expect(example.messages[0]).toMatchObject({ type: 'subscribed', chain: 'DEVNET', from_block: from, to_block: null })
  const markers = example.messages.filter(m => m.type === 'progress')
  expect(markers.at(-1).cursor).toBeGreaterThanOrEqual(minedTo)
  // (A marker right after a `gap` has no hash: the block is neither stored nor followed.)
  for (const m of markers.filter(m => m.live || m.hash !== undefined)) expect(m.hash).toBe(await chain.blockHash(m.cursor))
  expect(example.messages.filter(m => m.type === 'rows')).toEqual([])
  example.socket.close()
  const polled = await pollLogs(httpBase, { authorization: basic('alice', 'secret') }, 'DEVNET', from, minedTo)
  await mining
  expect(polled.rows).toEqual(await chain.logRecords(from, polled.last))
}

/**
 * The shell example of docs/websocket.md, run as written by bash (`npx wscat`, the
 * devDependency): only the host, the chain and its range, and the credentials are
 * replaced. Its standard input stays open, as a terminal's would, until `end` is printed
 * when `endInputAtEnd` (a user's Ctrl-D: wscat then closes and exits). Resolves when the
 * command exits, with its exit code and the JSON messages it printed, one per line.
 */
export async function runDocsShellExample(
  base: string,
  chain: string,
  range: { from: number; to: number },
  credentials: { user: string; password: string },
  endInputAtEnd = false,
): Promise<{ code: number | null; messages: Json[]; stderr: string }> {
  const { spawn } = await import('node:child_process')
  const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'websocket.md'), 'utf8')
  const example = /```sh\n(# A shell[\s\S]*?)```/.exec(docs)?.[1]
  if (!example) throw new Error('docs/websocket.md has no shell example')
  const script = example
    .replace('ws://127.0.0.1:8787', base)
    .replace('chains=DEVNET&from_block=100&to_block=110', `chains=${chain}&from_block=${range.from}&to_block=${range.to}`)
    .replace('ZGV2OmRldg==', Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64'))
  const root = join(import.meta.dirname, '..', '..')
  const child = spawn('bash', ['-c', script], {
    cwd: root,
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8')
    if (endInputAtEnd && /^\{"type":"end"/m.test(stdout)) child.stdin.end()
  })
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
  const code = await new Promise<number | null>(resolve => child.once('close', resolve))
  child.stdin.destroy()
  const messages = stdout
    .split('\n')
    .filter(line => line.trim() !== '')
    .map(line => JSON.parse(line) as Json)
  return { code, messages, stderr }
}

/** json_stream records of an HTTP query over `store` alone on the Move host, as alice (the Node app, no live window). */
export async function moveLakeRecords(store: ObjectStore, path: string): Promise<Json[]> {
  const app = createApp({ store, manifest: new ManifestReader(store, { rootTtlMs: 0 }), users: await parseUsers(USERS) })
  const res = await app.fetch(new Request(`http://aptos.localhost${path}`, { headers: { authorization: basic('alice', 'secret') } }))
  const text = await res.text()
  expect(res.status, text).toBe(200)
  return text
    .split('\n')
    .filter(l => l.trim() !== '')
    .map(l => JSON.parse(l))
}

/** Resolves once `client` has a progress marker at `cursor` or beyond. */
export const progressAt = (client: Recorder, cursor: number) => client.waitFor(m => m.type === 'progress' && m.cursor >= cursor)

/** The integers from `from` to `to`, both included. */
export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

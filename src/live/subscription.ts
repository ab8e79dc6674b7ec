/**
 * One subscriber: a query, a connection and a cursor (the last block whose rows
 * were all sent). Every block is sent from exactly one place, chosen by the cursor
 * alone: the stored partitions below the window, the window's blocks, or the live
 * push of a new block. So replay hands over from partitions to the window and then
 * to the head with no gap and no duplicate, whatever compaction or reorgs do
 * meanwhile, and a client that reconnects from `cursor + 1` continues exactly.
 *
 * History is pulled at the subscriber's pace (sent only while the connection's
 * unsent bytes are below the low-water mark); live blocks are pushed, and a
 * subscriber whose unsent bytes pass the limit is closed with 4413. Its memory is
 * bounded either way: nothing is queued here, only in the socket.
 */
import { toApiError } from '../api/errors.ts'
import type { Chain } from '../chains/registry.ts'
import { intersectRanges, subtractRanges } from '../manifest/coverage.ts'
import type { BlockRange } from '../manifest/types.ts'
import type { ColumnBatch, RowBatch } from '../columns/batch.ts'
import { blockEnd, keysOf, wholeBlocks } from '../columns/blocks.ts'
import { cellOf, sliceBatch } from '../columns/batch.ts'
import { blocks } from '../datasets/evm.ts'
import type { QueryResult } from '../query/engine.ts'
import type { QuerySpec } from '../query/types.ts'
import { columnOf, type FieldDecl } from '../schema/dataset.ts'
import { bytesToHex } from '../schema/hex.ts'
import type { StoredValue } from '../schema/kinds.ts'
import { rowSelector, type RowSelector } from './match.ts'
import type { HexKernel } from '../format/hex-kernel.ts'
import {
  endMessage,
  errorMessage,
  gapMessage,
  progressMessage,
  reorgMessage,
  rowsMessages,
  subscribedMessage,
  type Message,
} from './messages.ts'
import { CLOSE, type LiveLimits } from './protocol.ts'
import type { UnfinalizedWindow, WindowBlock } from './window.ts'

/** The server side of one WebSocket, whatever the runtime. */
export interface Connection {
  /** Sends one message as a text frame (a Uint8Array: its UTF-8 text). */
  send(message: Message): void
  close(code: number, reason: string): void
  /** Bytes handed to `send` and not yet written to the network. */
  buffered(): number
  /** Called after the cursor moves, so a runtime can keep it (a hibernating Durable Object does). */
  checkpoint?(position: { cursor: number; to: number | null }): void
  /** The client's `ack`: everything up to progress `cursor` arrived. */
  ack?(cursor: number): void
}

/** What a subscription needs from its chain. */
export interface ChainView {
  readonly chain: Chain
  /** True while a head follower feeds the window. */
  readonly live: boolean
  readonly limits: LiveLimits
  /** Writes the hex values of rows messages in WebAssembly, where the runtime has the kernel (the Node server). */
  readonly hex?: HexKernel
  window(): UnfinalizedWindow | null
  /** Highest block known (window tip, else stored end); null when there is none. */
  head(): number | null
  /** Stored block ranges of a dataset, read fresh from the manifest. */
  coverage(storage: string): Promise<BlockRange[]>
  /** Runs a query over the stored partitions (the HTTP engine). */
  query(spec: QuerySpec): Promise<QueryResult>
  /**
   * Whether block `cursor` with `hash` is still canonical: `ok`, or the fork point
   * and the dropped blocks (lowest first) a resuming client still holds, or
   * `unknown` when the hash is neither canonical nor a recently dropped block.
   */
  reconcile(cursor: number, hash: string): Promise<Reconciled>
  /** A window block's rows of one dataset (decoded, cached briefly). */
  rows(block: WindowBlock, storage: string): Promise<ColumnBatch>
  /** The subscription ended (with the failure it was closed for, if any). */
  closed(sub: Subscription, failure?: Failure): void
}

export type Reconciled = { kind: 'ok' } | { kind: 'reorg'; forkPoint: number; dropped: WindowBlock[] } | { kind: 'unknown' }

export type SubscriptionState = 'history' | 'live' | 'closed'

/** A subscription that ended badly: sent as an `error` message, then the close code. */
export interface Failure {
  code: string
  message: string
  close: number
  details?: Record<string, unknown>
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))
const POLL_MS = 5
/** The hash field of the stored blocks, for progress markers of history. */
const BLOCK_HASH = blocks.fields.find(f => f.name === 'hash')!
const MAX_STALL_STEP_MS = 50

export class Subscription {
  readonly id: string
  readonly user: string
  readonly spec: QuerySpec
  readonly conn: Connection
  readonly view: ChainView
  /** Last block whose rows were all sent. */
  cursor = -1
  /** Last block to send, null for a live subscription. */
  to: number | null = null
  state: SubscriptionState = 'history'
  /** Hash of block `from_block - 1` as the client holds it (a resume), checked before anything is sent. */
  readonly cursorHash: string | undefined
  /** Same key, same rows: the dataset, the output fields and the filters. */
  readonly queryKey: string
  private readonly selector: RowSelector
  private readonly rangeField: FieldDecl
  private pumping = false

  constructor(id: string, user: string, spec: QuerySpec, conn: Connection, view: ChainView, cursorHash?: string) {
    this.id = id
    this.cursorHash = cursorHash?.toLowerCase()
    this.user = user
    this.spec = spec
    this.conn = conn
    this.view = view
    this.selector = rowSelector(spec.predicates, spec.fields, spec.chain.id)
    this.queryKey = queryKeyOf(spec)
    const key = spec.dataset.rangeKey
    const field = spec.dataset.fields.find(f => f.virtual === undefined && columnOf(f) === key)
    if (!field) throw new Error(`dataset ${spec.dataset.name} has no field for its range key`)
    this.rangeField = field
  }

  get storage(): string {
    return this.spec.dataset.storage
  }

  /**
   * Resolves the range, says `subscribed` and starts sending. `resume` continues
   * after a known cursor (a Durable Object waking up) without a new `subscribed`.
   */
  async start(resume?: { cursor: number; to: number | null }): Promise<void> {
    if (resume) {
      this.cursor = resume.cursor
      this.to = resume.to
      this.pump()
      return
    }
    const coverage = await this.view.coverage(this.storage)
    const storedEnd = coverage.length ? coverage[coverage.length - 1][1] : null
    const head = this.view.live ? this.view.head() : storedEnd
    const w = this.view.window()
    // `latest` before the follower has a block of its own: the next block it gets.
    const from = this.spec.from !== 'latest' ? this.spec.from : this.view.live && w && w.size === 0 ? w.low : head
    if (from === null)
      return this.fail({
        code: 'no_data',
        message: `no ${this.spec.dataset.name} stored or followed for chain ${this.spec.chain.code} yet`,
        close: CLOSE.noData,
        details: { coverage },
      })
    const to = this.spec.to === 'latest' ? (this.view.live ? null : head) : this.spec.to
    if (to !== null && from > to) {
      return this.fail({
        code: 'invalid_range',
        message: `from_block ${from} is after to_block ${to}`,
        close: CLOSE.invalid,
        details: { parameter: 'from_block' },
      })
    }
    if (to !== null && !(this.view.live && to > (head ?? -1))) {
      const held = w && w.size > 0 ? [[w.low, w.tip.number] as BlockRange] : []
      if (intersectRanges([from, to], [...coverage, ...held]).length === 0) {
        return this.fail({
          code: 'no_data',
          message: `no ${this.spec.dataset.name} stored in blocks ${from}-${to}`,
          close: CLOSE.noData,
          details: { coverage, range: [from, to] },
        })
      }
    }
    const reconciled = this.cursorHash === undefined ? ({ kind: 'ok' } as Reconciled) : await this.view.reconcile(from - 1, this.cursorHash)
    if (reconciled.kind === 'unknown') {
      return this.fail({
        code: 'unknown_cursor',
        message: `block ${from - 1} with hash ${this.cursorHash} is not canonical and no longer known: resume from a block below the unfinalized window`,
        close: CLOSE.reorgTooDeep,
      })
    }
    this.to = to
    this.moveCursor(from - 1)
    this.conn.send(
      subscribedMessage({
        subscription: this.id,
        chain: this.spec.chain.code,
        chain_id: this.spec.chain.id,
        dataset: this.spec.dataset.path,
        fields: this.spec.fields.map(f => f.name),
        from_block: from,
        to_block: to,
        head,
      }),
    )
    if (reconciled.kind === 'reorg') await this.replayReorg(reconciled.forkPoint, reconciled.dropped)
    this.pump()
  }

  /** A resuming client holds blocks a reorg dropped: tell it, as a live subscriber was told. */
  private async replayReorg(forkPoint: number, dropped: readonly WindowBlock[]): Promise<void> {
    const rows = new Map<WindowBlock, ColumnBatch>()
    for (const b of dropped) rows.set(b, await this.view.rows(b, this.storage))
    this.onReorg(forkPoint, dropped, rows)
  }

  /**
   * A new canonical block from the follower; sent at once when this subscriber is
   * live and due for it. Subscribers with the same query share `encoded` (the rows
   * messages of this block by query key), so a block is filtered and encoded once
   * per distinct query, not once per subscriber.
   */
  onBlock(block: WindowBlock, batches: Record<string, ColumnBatch>, encoded: Map<string, Uint8Array[]> = new Map()): void {
    if (this.state !== 'live') return
    if (this.cursor !== block.number - 1) {
      this.state = 'history'
      this.pump()
      return
    }
    if (this.conn.buffered() > this.view.limits.maxBufferedBytes) {
      return this.fail({
        code: 'slow_consumer',
        message: `more than ${this.view.limits.maxBufferedBytes} bytes unsent: read faster or narrow the filter, then resume from cursor + 1`,
        close: CLOSE.slowConsumer,
        details: { cursor: this.cursor },
      })
    }
    const rows = batches[this.storage]
    if (!rows) return
    let messages = encoded.get(this.queryKey)
    if (!messages) {
      messages = this.messagesOf(this.selector.select(rows))
      encoded.set(this.queryKey, messages)
    }
    this.deliver(block, messages)
  }

  /**
   * Blocks above `forkPoint` were dropped. If this subscriber was sent any, it gets
   * a `reorg` message, their rows again as removed, and its cursor moves back to the
   * fork point; the new canonical blocks then arrive as usual.
   */
  onReorg(forkPoint: number, dropped: readonly WindowBlock[], rows: ReadonlyMap<WindowBlock, ColumnBatch>): void {
    if (this.state === 'closed' || this.cursor <= forkPoint) return
    const seen = dropped.filter(b => b.number <= this.cursor)
    this.conn.send(
      reorgMessage(
        forkPoint,
        seen.map(b => ({ block_number: b.number, hash: b.hash })),
      ),
    )
    for (const b of seen) {
      const batch = rows.get(b)
      if (!batch) continue
      for (const m of this.messagesOf(this.selector.select(batch, { removed: true }), true)) this.conn.send(m)
    }
    this.moveCursor(forkPoint)
  }

  /** Ends the subscription with an error message and a close code. */
  fail(f: Failure): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    this.conn.send(errorMessage(f.code, f.message, f.details))
    this.conn.close(f.close, f.code)
    this.view.closed(this, f)
  }

  /** The client went away (or the server drops it): stop without a word. */
  drop(): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    this.view.closed(this)
  }

  private finish(): void {
    this.state = 'closed'
    this.conn.send(endMessage(this.cursor))
    this.conn.close(CLOSE.normal, 'end')
    this.view.closed(this)
  }

  private moveCursor(n: number): void {
    this.cursor = n
    this.conn.checkpoint?.({ cursor: n, to: this.to })
  }

  private progress(hash?: string): void {
    this.conn.send(
      progressMessage({
        cursor: this.cursor,
        ...(hash === undefined ? {} : { hash }),
        head: this.view.head(),
        live: this.state === 'live',
      }),
    )
  }

  /** Sends one window block's rows messages and moves the cursor onto it. */
  private deliver(block: WindowBlock, messages: readonly Uint8Array[]): void {
    for (const m of messages) this.conn.send(m)
    this.moveCursor(block.number)
    this.progress(block.hash)
    if (this.to !== null && this.cursor >= this.to) this.finish()
  }

  /** Sends history until the cursor reaches the window's tip (then live) or `to` (then the end). */
  private pump(): void {
    if (this.pumping) return
    this.pumping = true
    this.run()
      .catch(err => this.fail(failureOf(err)))
      .finally(() => (this.pumping = false))
  }

  private async run(): Promise<void> {
    while (this.state === 'history') {
      if (this.to !== null && this.cursor >= this.to) return this.finish()
      const next = this.cursor + 1
      const w = this.view.window()
      if (w && next >= w.low) {
        const block = w.get(next)
        if (!block) {
          this.state = 'live'
          return
        }
        if (!(await this.drained())) return
        const rows = await this.view.rows(block, this.storage)
        // Checked after the await: a reorg or compaction may have moved things meanwhile.
        if (this.state !== 'history' || this.cursor !== next - 1 || this.view.window()?.get(next) !== block) continue
        this.deliver(block, this.messagesOf(this.selector.select(rows)))
        continue
      }
      // Below the window (or without one, up to `to`): the stored partitions.
      const end = w ? w.low - 1 : this.to
      if (end === null) return
      const last = this.to === null ? end : Math.min(end, this.to)
      await this.sendStored(next, last)
    }
  }

  /** Blocks `from`..`to` from the partitions: holes are `gap` messages, stored parts their rows. */
  private async sendStored(from: number, to: number): Promise<void> {
    const coverage = await this.view.coverage(this.storage)
    const pieces: { range: BlockRange; stored: boolean }[] = [
      ...intersectRanges([from, to], coverage).map(range => ({ range, stored: true })),
      ...subtractRanges([from, to], coverage).map(range => ({ range, stored: false })),
    ].sort((a, b) => a.range[0] - b.range[0])
    for (const { range, stored } of pieces) {
      if (this.state !== 'history') return
      if (!stored) {
        this.send(gapMessage(range[0], range[1]))
      } else {
        const fields = this.spec.fields.includes(this.rangeField) ? this.spec.fields : [...this.spec.fields, this.rangeField]
        const result = await this.view.query({ ...this.spec, from: range[0], to: range[1], fields, limit: undefined })
        // A progress marker follows only whole blocks: the rows of a batch's last block wait for the next batch.
        for await (const { rows, heldFrom } of wholeBlocks(result.batches, this.rangeField.name)) {
          if (this.state !== 'history') return
          if (!(await this.drained())) return
          if (this.spec.dataset.family === 'move') this.sendVersions(rows)
          else this.sendRows(rows)
          if (heldFrom !== null && Number(heldFrom) - 1 > this.cursor) {
            this.moveCursor(Number(heldFrom) - 1)
            await this.storedProgress()
          }
        }
        if (this.state !== 'history') return
      }
      if (this.state !== 'history') return
      if (range[1] > this.cursor) {
        this.moveCursor(range[1])
        await (stored ? this.storedProgress() : this.progress())
      }
    }
  }

  /** Move history: one progress marker per version, as live (a version is a block of the protocol). */
  private sendVersions(rows: RowBatch): void {
    const keys = keysOf(rows, this.rangeField.name)
    for (let i = 0; i < rows.length;) {
      const end = blockEnd(keys, i, rows.length)
      this.sendRows(sliceBatch(rows, i, end))
      this.moveCursor(Number(cellOf(rows, this.rangeField.name, i)))
      this.progress()
      i = end
    }
  }

  /**
   * A progress marker of a stored EVM block, with the block's hash from the stored
   * blocks (so a client can resume from it with cursor_hash); without it when the
   * block is not stored.
   */
  private async storedProgress(): Promise<void> {
    if (this.spec.dataset.family !== 'evm') return this.progress()
    const n = this.cursor
    let hash: string | undefined
    try {
      const result = await this.view.query({
        chain: this.spec.chain,
        dataset: blocks,
        from: n,
        to: n,
        predicates: [],
        fields: [BLOCK_HASH],
      })
      for await (const batch of result.batches) {
        const value = batch.length ? cellOf(batch, BLOCK_HASH.name, 0) : null
        if (value instanceof Uint8Array) hash = bytesToHex(value)
        if (hash) break
      }
    } catch (err) {
      if (toApiError(err).code !== 'no_data') throw err
    }
    if (this.state === 'history' && this.cursor === n) this.progress(hash)
  }

  private sendRows(batch: RowBatch): void {
    for (const m of this.messagesOf(batch)) this.conn.send(m)
  }

  /** The `rows` messages of `batch` (`removed`: of blocks a reorg dropped). */
  private messagesOf(batch: RowBatch, removed = false): Uint8Array[] {
    return rowsMessages(this.spec.fields, batch, this.view.limits.maxRowsPerMessage, { removed, hex: this.view.hex })
  }

  private send(message: Message): void {
    if (this.state !== 'closed') this.conn.send(message)
  }

  /**
   * Waits until the unsent bytes fall below the low-water mark. A connection that
   * takes nothing for `stallTimeoutMs` is closed with 4413; false when closed. Only
   * time the server could have sent counts toward the stall: a poll delayed by a busy
   * event loop counts `MAX_STALL_STEP_MS` at most, so a client is not blamed for it.
   */
  private async drained(): Promise<boolean> {
    const { lowWaterBytes, stallTimeoutMs } = this.view.limits
    let last = this.conn.buffered()
    let at = Date.now()
    let stalled = 0
    while (this.state !== 'closed' && this.conn.buffered() > lowWaterBytes) {
      await sleep(POLL_MS)
      const now = this.conn.buffered()
      const t = Date.now()
      stalled = now < last ? 0 : stalled + Math.min(t - at, MAX_STALL_STEP_MS)
      last = now
      at = t
      if (stalled > stallTimeoutMs) {
        this.fail({
          code: 'slow_consumer',
          message: `nothing was read for ${stallTimeoutMs} ms; resume from cursor + 1`,
          close: CLOSE.slowConsumer,
          details: { cursor: this.cursor },
        })
      }
    }
    return this.state !== 'closed'
  }
}

/** A canonical text of what a query selects (not its range). */
function queryKeyOf(spec: QuerySpec): string {
  const value = (v: StoredValue | null) => (v === null ? 'null' : v instanceof Uint8Array ? bytesToHex(v) : String(v))
  const predicates = spec.predicates.map(p => `${p.field.name}:${p.op}:${p.values.map(value).join(',')}`).sort()
  return JSON.stringify([spec.chain.id, spec.dataset.name, spec.fields.map(f => f.name), predicates])
}

/** Maps an error of the query or the follower to what the subscriber is told (the HTTP API's mapping, then a close code). */
export function failureOf(err: unknown): Failure {
  const { code, message } = toApiError(err)
  if (code === 'storage_unavailable')
    return { code, message: 'object storage is unavailable or timed out; resume later from cursor + 1', close: CLOSE.unavailable }
  // A missing or damaged stored object: permanent, said so (the HTTP API's 503 storage_corrupt).
  if (code === 'storage_corrupt') return { code, message, close: CLOSE.unavailable }
  if (code === 'no_data') return { code, message, close: CLOSE.noData }
  return { code: 'internal_error', message: 'internal error', close: CLOSE.internal }
}

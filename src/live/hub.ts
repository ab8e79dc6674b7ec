/**
 * The live side of one chain, the same in a Node process and in a Durable Object:
 * the unfinalized window, the head follower that fills it, compaction of its final
 * blocks into partitions, and the fan-out of new blocks and reorgs to the chain's
 * subscriptions. A runtime calls `start` once, then `tick` on a timer (Node) or an
 * alarm (Durable Object), and hands it connections.
 *
 * Anchoring: the window starts above the last stored block when the node is at
 * most `maxCatchUpBlocks` ahead of it (its hash is checked against the node, so a
 * store on another fork is refused); otherwise `finalityDepth` below the node's
 * head, leaving the blocks in between to the ingester (subscribers get a `gap`).
 */
import { ApiError } from '../api/errors.ts'
import type { Chain } from '../chains/registry.ts'
import { chainRefOf } from '../ingest/run.ts'
import type { LayoutOptions } from '../parquet/write.ts'
import { ManifestReader } from '../manifest/read.ts'
import { IndexCache } from '../index/read.ts'
import type { BlockRange, ChainRef } from '../manifest/types.ts'
import { cellOf, type ColumnBatch } from '../columns/batch.ts'
import { runQuery, type QueryResult } from '../query/engine.ts'
import { NoDataError } from '../query/errors.ts'
import type { ScanOptions } from '../query/scan.ts'
import type { QuerySpec } from '../query/types.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import { bytesToHex } from '../schema/hex.ts'
import type { HexKernel } from '../format/hex-kernel.ts'
import type { ObjectStore } from '../store/types.ts'
import { compactBlocks, type CompactionResult } from './compact.ts'
import { HeadFollower, ReorgTooDeepError, type FollowerEvent } from './follower.ts'
import { CLOSE, DEFAULT_LIMITS, type LiveLimits } from './protocol.ts'
import type { LiveSource } from './source.ts'
import { failureOf, Subscription, type ChainView, type Connection, type Failure, type Reconciled } from './subscription.ts'
import { blockRows, UnfinalizedWindow, type Anchor, type WindowBlock } from './window.ts'
import { sliceOf, type SliceRequest, type WindowSlice } from './slice.ts'

/** The hash before genesis: the parent a chain's block 0 names. */
/** Blocks behind the node's head before the status says `Syncing` (LiveChainOptions.syncingBlocks). */
export const DEFAULT_SYNCING_BLOCKS = 10

export const ZERO_HASH = '0x' + '0'.repeat(64)

/** Dropped blocks remembered for resuming clients. */
const GRAVEYARD_BLOCKS = 256

/** Where a runtime keeps the window across restarts (a Durable Object's storage); optional. */
export interface WindowPersistence {
  load(): Promise<{ anchor: Anchor; blocks: WindowBlock[] } | null>
  /** A new, empty window at `anchor` replaces whatever was kept. */
  reset(anchor: Anchor): Promise<void>
  append(block: WindowBlock): Promise<void>
  /** Blocks above `forkPoint` are gone. */
  rollback(forkPoint: number, dropped: readonly WindowBlock[]): Promise<void>
  /** Blocks up to the new anchor are stored in partitions now. */
  finalize(anchor: Anchor, done: readonly WindowBlock[]): Promise<void>
}

/** Open subscriptions per user, shared by the chains of one runtime. */
export class UserLimiter {
  readonly max: number
  private counts = new Map<string, number>()
  constructor(max: number) {
    this.max = max
  }
  /** Takes a slot for `user`; false when the user has `max` already. */
  acquire(user: string): boolean {
    const n = this.counts.get(user) ?? 0
    if (n >= this.max) return false
    this.counts.set(user, n + 1)
    return true
  }
  release(user: string): void {
    const n = (this.counts.get(user) ?? 0) - 1
    if (n > 0) this.counts.set(user, n)
    else this.counts.delete(user)
  }
  count(user: string): number {
    return this.counts.get(user) ?? 0
  }
}

export interface LiveChainOptions {
  chain: Chain
  store: ObjectStore
  /** The node; without one the chain serves history only (bounded subscriptions). */
  source?: LiveSource
  /** Blocks this far below the node's head are final and get compacted (default: the chain's confirmations, at least 1). */
  finalityDepth?: number
  /** Final blocks compacted per partition (default 32). */
  compactBlocks?: number
  /** Turn compaction off (a follower next to a separate ingester). Default false. */
  noCompaction?: boolean
  /** Anchor above the stored data when the node is at most this far ahead (default 1,000). */
  maxCatchUpBlocks?: number
  /** Blocks fetched per tick at most (default 32). */
  maxBlocksPerTick?: number
  /** The status endpoint says `Syncing` while the window's tip is more than this many blocks behind the node's head (default 10). */
  syncingBlocks?: number
  /** The follower waits while the window holds more blocks than this (compaction failing); default 4 × (finality + compaction). */
  maxWindowBlocks?: number
  limits?: Partial<LiveLimits>
  /** Shared per-user subscription limit; default one of this chain's own. */
  users?: UserLimiter
  layout?: LayoutOptions
  scan?: ScanOptions
  /** Writes rows messages' hex values in WebAssembly (the Node server's kernel). */
  hex?: HexKernel
  persistence?: WindowPersistence
  /** Sees every follower event before it is fanned out (benchmarks time delivery from here). */
  observe?: (e: FollowerEvent) => void
  log?: (line: string) => void
}

/** Counters for tests and benchmarks. */
export interface LiveStats {
  blocks: number
  reorgs: number
  compactions: number
  compactedBlocks: number
  slowConsumerCloses: number
  subscriptionsOpened: number
}

/** The latest hash stored for block `n` of a chain, read through the engine; null when not stored. */
async function storedHash(
  ctx: { store: ObjectStore; manifest: ManifestReader },
  chain: Chain,
  dataset: DatasetDecl,
  n: number,
): Promise<string | null> {
  const hash = dataset.fields.find(f => f.name === 'hash')
  if (!hash) return null
  try {
    const result = await runQuery(ctx, { chain, dataset, from: n, to: n, predicates: [], fields: [hash] })
    for await (const b of result.batches) if (b.length) return bytesToHex(cellOf(b, 'hash', 0) as Uint8Array)
  } catch (err) {
    if (err instanceof NoDataError) return null
    throw err
  }
  return null
}

export class LiveChain implements ChainView {
  readonly chain: Chain
  readonly ref: ChainRef
  readonly limits: LiveLimits
  readonly hex?: HexKernel
  readonly stats: LiveStats = { blocks: 0, reorgs: 0, compactions: 0, compactedBlocks: 0, slowConsumerCloses: 0, subscriptionsOpened: 0 }
  readonly subscriptions = new Map<string, Subscription>()
  readonly users: UserLimiter
  private readonly opts: LiveChainOptions
  private readonly manifest: ManifestReader
  /** Index objects this chain's history queries read, shared by its subscriptions (immutable: never stale). */
  private readonly index = new IndexCache()
  private readonly finality: number
  private readonly compactEvery: number
  private win: UnfinalizedWindow | null = null
  private follower: HeadFollower | null = null
  private storedEnd: number | null = null
  private failure: Failure | null = null
  private compacting: Promise<void> | null = null
  private decoded = new Map<string, Promise<ColumnBatch>>()
  /** Recently dropped blocks by hash, so a client resuming from one of them learns of the reorg. */
  private graveyard = new Map<string, WindowBlock>()
  private nextId = 1
  /** When the last poll first found the tip behind the node's head (ms); null when caught up. */
  private behindSince: number | null = null

  constructor(options: LiveChainOptions) {
    this.opts = options
    this.chain = options.chain
    this.ref = chainRefOf(options.chain)
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.hex = options.hex
    this.users = options.users ?? new UserLimiter(this.limits.maxSubscriptionsPerUser)
    this.manifest = new ManifestReader(options.store, { rootTtlMs: 0 })
    this.finality = Math.max(1, options.finalityDepth ?? options.chain.confirmations)
    this.compactEvery = Math.max(1, options.compactBlocks ?? 32)
  }

  /** True while the head follower runs (after `start`, until a reorg too deep halts it). */
  get live(): boolean {
    return this.follower !== null && this.failure === null
  }

  /** True when the chain has a node to follow, whether or not following has started. */
  get followed(): boolean {
    return this.opts.source !== undefined
  }

  /** The datasets the window holds (the source's), or none without a source. */
  get datasets(): readonly DatasetDecl[] {
    return this.opts.source?.datasets ?? []
  }

  window(): UnfinalizedWindow | null {
    return this.win
  }

  /**
   * Refuses a subscription to a dataset the followed window does not hold (dex/tokens): its
   * stream could not go past the partitions, so it is a clear 400 at the upgrade instead.
   */
  assertStreamed(dataset: DatasetDecl): void {
    if (this.followed && !this.datasets.some(d => d.storage === dataset.storage))
      throw new ApiError(
        400,
        'live_unavailable',
        `${dataset.path} is not on the WebSocket stream of chain ${this.chain.code}: read it over HTTP`,
        {
          parameter: 'chains',
        },
      )
  }

  /** The window's blocks HTTP serves above the partitions; null while not following, or for a dataset the window lacks (dex/tokens). */
  slice(req: SliceRequest): WindowSlice | null {
    return this.win && this.live && this.datasets.some(d => d.storage === req.storage) ? sliceOf(this.win, this.finality, req) : null
  }

  head(): number | null {
    if (this.win) return this.win.tip.number >= 0 ? this.win.tip.number : null
    return this.storedEnd
  }

  /**
   * How far the window's tip is behind the node's head at the last poll: blocks, and seconds
   * since the follower first saw itself behind (blocks carry no time the follower trusts);
   * `syncing` past the threshold (`syncingBlocks`). Null until following has started.
   */
  lag(now: number = Date.now()): { syncing: boolean; blocks: number; seconds: number } | null {
    if (!this.follower || !this.win || this.follower.head < 0) return null
    const blocks = Math.max(0, this.follower.head - this.win.tip.number)
    const seconds = blocks > 0 && this.behindSince !== null ? Math.floor((now - this.behindSince) / 1000) : 0
    return { syncing: blocks > (this.opts.syncingBlocks ?? DEFAULT_SYNCING_BLOCKS), blocks, seconds }
  }

  /** Why the chain stopped following, if it did. */
  get halted(): Failure | null {
    return this.failure
  }

  async coverage(storage: string): Promise<BlockRange[]> {
    const root = await this.manifest.root(this.ref)
    const coverage = root?.datasets[storage]?.coverage ?? []
    const end = coverage.length ? coverage[coverage.length - 1][1] : null
    if (end !== null && (this.storedEnd === null || end > this.storedEnd)) this.storedEnd = end
    return coverage
  }

  query(spec: QuerySpec): Promise<QueryResult> {
    return runQuery({ store: this.opts.store, manifest: this.manifest, scan: this.opts.scan, index: this.index }, spec)
  }

  rows(block: WindowBlock, storage: string): Promise<ColumnBatch> {
    const key = `${block.hash}:${storage}`
    let rows = this.decoded.get(key)
    if (!rows) {
      const dataset = this.datasets.find(d => d.storage === storage)
      if (!dataset) return Promise.reject(new Error(`the window holds no ${storage}`))
      rows = blockRows(block, [dataset]).then(r => r[storage])
      rows.catch(() => this.decoded.delete(key))
      this.decoded.set(key, rows)
      // A few recent blocks: subscribers replaying the window read the same ones.
      while (this.decoded.size > 16) this.decoded.delete(this.decoded.keys().next().value as string)
    }
    return rows
  }

  async reconcile(cursor: number, hash: string): Promise<Reconciled> {
    const w = this.win
    const known = w?.hashAt(cursor)
    if (known === hash) return { kind: 'ok' }
    if (w && known === undefined && cursor < w.anchor.number) {
      const blocks = this.datasets.find(d => d.storage === 'blocks')
      const stored = blocks ? await storedHash({ store: this.opts.store, manifest: this.manifest }, this.chain, blocks, cursor) : null
      return stored === null || stored === hash ? { kind: 'ok' } : { kind: 'unknown' }
    }
    const dropped: WindowBlock[] = []
    for (let b = this.graveyard.get(hash); b; b = this.graveyard.get(b.parentHash)) {
      dropped.unshift(b)
      if (w?.hashAt(b.number - 1) === b.parentHash) return { kind: 'reorg', forkPoint: b.number - 1, dropped }
    }
    // Ahead of this follower (another server's cursor): nothing to judge yet.
    if (!w || (known === undefined && cursor > w.tip.number)) return { kind: 'ok' }
    return { kind: 'unknown' }
  }

  closed(sub: Subscription, failure?: Failure): void {
    if (this.subscriptions.delete(sub.id)) this.users.release(sub.user)
    if (failure?.close === CLOSE.slowConsumer) this.stats.slowConsumerCloses++
  }

  /** Loads the stored end and, with a source, anchors the window and restores what was persisted. */
  async start(): Promise<void> {
    const ends = await Promise.all(this.datasets.map(d => this.coverage(d.storage)))
    const source = this.opts.source
    if (!source) return
    const persisted = await this.opts.persistence?.load()
    if (persisted) {
      this.win = new UnfinalizedWindow(persisted.anchor, persisted.blocks)
    } else {
      const latest = await source.latest()
      const storedEnds = ends.map(c => (c.length ? c[c.length - 1][1] : null))
      const stored = storedEnds.every(e => e !== null) ? Math.min(...(storedEnds as number[])) : null
      const maxCatchUp = this.opts.maxCatchUpBlocks ?? 1_000
      let anchor: Anchor
      if (stored !== null && stored <= latest.number && latest.number - stored <= maxCatchUp) {
        const [node] = await source.headers([stored])
        if (!node) throw new Error(`the node has no block ${stored}`)
        const blocks = this.datasets.find(d => d.storage === 'blocks')
        const ours = blocks ? await storedHash({ store: this.opts.store, manifest: this.manifest }, this.chain, blocks, stored) : null
        if (ours !== null && ours !== node.hash) {
          this.failure = {
            code: 'reorg_too_deep',
            message: `stored block ${stored} is ${ours}, the node has ${node.hash}: the store is on another fork`,
            close: CLOSE.reorgTooDeep,
          }
          this.opts.log?.(`${this.chain.code}: ${this.failure.message}; not following`)
          return
        }
        anchor = { number: stored, hash: node.hash }
      } else {
        const at = latest.number - this.finality
        if (at < 0) anchor = { number: -1, hash: ZERO_HASH }
        else {
          const [node] = await source.headers([at])
          if (!node) throw new Error(`the node has no block ${at}`)
          anchor = { number: at, hash: node.hash }
        }
        if (stored !== null && anchor.number > stored + 1)
          this.opts.log?.(`${this.chain.code}: blocks ${stored + 1}-${anchor.number} are left to the ingester`)
      }
      this.win = new UnfinalizedWindow(anchor)
      await this.opts.persistence?.reset(anchor)
    }
    this.follower = new HeadFollower(source, this.win, { maxBlocksPerTick: this.opts.maxBlocksPerTick })
  }

  /** Opens a subscription; null when the user has too many already. */
  subscribe(user: string, spec: QuerySpec, conn: Connection, options: { id?: string; cursorHash?: string } = {}): Subscription | null {
    if (!this.users.acquire(user)) return null
    const id = options.id ?? this.newId()
    const sub = new Subscription(id, user, spec, conn, this, options.cursorHash)
    this.subscriptions.set(id, sub)
    this.stats.subscriptionsOpened++
    if (this.failure && (spec.to === 'latest' || spec.to > (this.head() ?? -1))) {
      sub.fail(this.failure)
      return sub
    }
    // A failure before the first message (the manifest unreadable) ends the subscription visibly, never leaves it silent.
    sub.start().catch(err => sub.fail(failureOf(err)))
    return sub
  }

  /** Re-attaches a subscription after a restart of the runtime (its cursor kept by the connection). */
  resume(user: string, spec: QuerySpec, conn: Connection, id: string, cursor: number, to: number | null): Subscription {
    this.users.acquire(user)
    const sub = new Subscription(id, user, spec, conn, this)
    this.subscriptions.set(id, sub)
    void sub.start({ cursor, to })
    return sub
  }

  private newId(): string {
    return `${this.chain.code.toLowerCase()}-${Date.now().toString(36)}-${(this.nextId++).toString(36)}`
  }

  /**
   * One poll of the node: new blocks and reorgs fanned out in order, then final
   * blocks compacted in the background. Errors of the node are thrown (the runtime
   * logs them and ticks again); a reorg deeper than the window halts following and
   * closes every subscriber that could have seen dropped blocks.
   */
  async tick(): Promise<number> {
    if (!this.follower || !this.win || this.failure) return 0
    const maxWindow = this.opts.maxWindowBlocks ?? 4 * (this.finality + this.compactEvery)
    if (this.win.size > maxWindow) {
      this.compact()
      return 0
    }
    let added: number
    try {
      added = await this.follower.tick(e => this.dispatch(e))
      this.behindSince = this.follower.head > this.win.tip.number ? (this.behindSince ?? Date.now()) : null
    } catch (err) {
      if (err instanceof ReorgTooDeepError) {
        this.halt({
          code: 'reorg_too_deep',
          message: `${err.message}; resume from a finalized block once the service recovers`,
          close: CLOSE.reorgTooDeep,
        })
        return 0
      }
      throw err
    }
    this.compact()
    return added
  }

  /** Waits for a compaction in flight (tests and shutdown). */
  async settled(): Promise<void> {
    while (this.compacting) await this.compacting
  }

  private halt(f: Failure): void {
    this.failure = f
    this.opts.log?.(`${this.chain.code}: ${f.message}`)
    for (const sub of [...this.subscriptions.values()]) {
      if (sub.to === null || (this.win && sub.cursor >= this.win.low)) sub.fail(f)
    }
  }

  private async dispatch(e: FollowerEvent): Promise<void> {
    this.opts.observe?.(e)
    if (e.type === 'block') {
      await this.opts.persistence?.append(e.block)
      this.stats.blocks++
      const encoded = new Map<string, Uint8Array[]>()
      for (const sub of [...this.subscriptions.values()]) sub.onBlock(e.block, e.batches, encoded)
      return
    }
    await this.opts.persistence?.rollback(e.forkPoint, e.dropped)
    this.stats.reorgs++
    for (const b of e.dropped) this.graveyard.set(b.hash, b)
    while (this.graveyard.size > GRAVEYARD_BLOCKS) this.graveyard.delete(this.graveyard.keys().next().value as string)
    const affected = [...this.subscriptions.values()].filter(s => s.cursor > e.forkPoint)
    const needed = new Set(affected.map(s => s.storage))
    const rows = new Map<string, Map<WindowBlock, ColumnBatch>>()
    for (const storage of needed) {
      const dataset = this.datasets.find(d => d.storage === storage)
      if (!dataset) continue
      const byBlock = new Map<WindowBlock, ColumnBatch>()
      for (const b of e.dropped) byBlock.set(b, (await blockRows(b, [dataset]))[storage])
      rows.set(storage, byBlock)
    }
    for (const sub of affected) sub.onReorg(e.forkPoint, e.dropped, rows.get(sub.storage) ?? new Map())
  }

  /** Starts compacting the final blocks, unless a compaction is running or too few are final. */
  private compact(): void {
    if (this.opts.noCompaction || this.compacting || !this.win || !this.follower) return
    const finalTo = this.follower.head - this.finality
    const ready = this.win.range(this.win.low, Math.min(finalTo, this.win.low + this.compactEvery - 1))
    if (ready.length < this.compactEvery) return
    const w = this.win
    this.compacting = (async () => {
      const result: CompactionResult = await compactBlocks(this.opts.store, this.ref, this.datasets, ready, this.opts.layout)
      const last = ready[ready.length - 1]
      if (w.get(last.number) !== last) return
      const done = w.finalize(last.number)
      await this.opts.persistence?.finalize(w.anchor, done)
      this.stats.compactions++
      this.stats.compactedBlocks += done.length
      this.storedEnd = Math.max(this.storedEnd ?? -1, last.number)
      this.opts.log?.(`${this.chain.code}: compacted blocks ${ready[0].number}-${last.number} (generation ${result.generation})`)
    })()
      .catch(err => this.opts.log?.(`${this.chain.code}: compaction failed, retrying later: ${(err as Error).message}`))
      .finally(() => (this.compacting = null))
  }
}

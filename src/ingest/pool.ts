/**
 * Worker threads for the Node ingester: each thread has its own JSON-RPC client and
 * builds whole units (fetch → verify with the WebAssembly keccak → transform → encode
 * Parquet, unit.ts), handing back only the encoded bytes (transferred, not copied), each
 * object as soon as it is written.
 * The main thread stores them and publishes, so verification and Parquet writing use
 * every core while fetches overlap both. Node only (node:worker_threads).
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { ChainRef } from '../manifest/types.ts'
import type { LayoutOptions } from '../parquet/write.ts'
import { MissingBlockError } from './extract.ts'
import type { IngestUnit } from './plan.ts'
import type { PositionChanges, PositionEntry } from '../dex/positions.ts'
import type { UnitPositions } from './positions.ts'
import type { RpcOptions, RpcRetry } from './rpc.ts'
import type { EncodedUnit, ObjectsAt, UnitBuilder } from './unit.ts'
import { IngestVerificationError } from './verify.ts'

export interface PoolOptions {
  chain: ChainRef
  rpcUrl: string
  /** RPC options of each thread's client (functions other than `onRetry` cannot cross threads and are refused). */
  rpc?: RpcOptions
  /** Each thread adds its own bloom hash (unit-worker.ts): functions cannot cross threads. */
  layout?: Omit<LayoutOptions, 'bloomHash'>
  /** Decode the DEX datasets (default true; evm-source.ts). */
  dex?: boolean
  /** Threads (default: the machine's cores). */
  workers?: number
  /**
   * Units one thread works on at once (default 1: a unit fetches its steps four at a time, which
   * keeps the thread busy; a second unit gained nothing measurable and held another partition's rows).
   */
  perWorker?: number
  /**
   * The DEX position state (positions.ts), kept here: each thread asks it for the state
   * before a unit once it has scanned the unit and sends back the unit's changes, so units
   * built in different threads still decode in block order. Without it each thread carries
   * its own state, which units built elsewhere leave incomplete.
   */
  positions?: UnitPositions
  /** Another worker module that calls unit-worker.ts's serveUnits itself (benchmarks wrap the source); `workerData` gives it `extra`. */
  workerUrl?: URL
  extra?: Record<string, unknown>
}

/** What the main thread sends a worker thread at start. */
export interface WorkerSetup {
  chain: ChainRef
  rpcUrl: string
  rpc: Omit<RpcOptions, 'onRetry' | 'fetch'>
  layout?: Omit<LayoutOptions, 'bloomHash'>
  dex?: boolean
  /** Started from PoolOptions.workerUrl: that module calls serveUnits. */
  custom?: boolean
  /** Position state is asked of the main thread (PositionRequest / PositionReply). */
  positions?: boolean
  extra?: Record<string, unknown>
}

/** A thread's side of the position state, per unit (by its last block): the keys it needs, then its changes. */
export type PositionRequest = { unitEnd: number; keys: readonly string[] } | { unitEnd: number; changes: PositionChanges }
/** The main thread's answer to a request for keys: their entries, or why there are none. */
export type PositionReply = { unitEnd: number; entries: Map<string, PositionEntry> } | { unitEnd: number; error: string }

/** A thread's replies; `{ id, at, bytes }` carries objects' bytes ahead of their unit, which then holds none of its own. */
export type WorkerReply =
  | { id: number; ok: true; unit: EncodedUnit }
  | { id: number; at: ObjectsAt; bytes: Uint8Array[] }
  | { positions: PositionRequest }
  | { id: number; ok: false; error: { name: string; message: string; block?: number } }
  | { retry: RpcRetry }

export interface UnitPool extends UnitBuilder {
  /** Threads × units per thread: the `concurrency` that keeps every thread busy. */
  readonly capacity: number
  close(): Promise<void>
}

/** The thread's error as the class the loop and its callers know (verification and missing-block errors name the block). */
function errorOf({ name, message, block }: { name: string; message: string; block?: number }): Error {
  const detail = message.replace(/^block \d+: /, '')
  if (block !== undefined && name === 'IngestVerificationError') return new IngestVerificationError(block, detail)
  if (block !== undefined && name === 'MissingBlockError') return new MissingBlockError(block, detail)
  return Object.assign(new Error(message), { name })
}

/** Where handed-over bytes are kept until their unit arrives. */
export const atKey = (at: ObjectsAt): string => `${at.storage}\n${at.part ?? 'segment'}`

const atName = (at: ObjectsAt): string => (at.part === undefined ? `${at.storage}'s index segment` : `${at.storage} partition ${at.part}`)

/**
 * The unit with the bytes its thread sent ahead put back in place (a port delivers messages in
 * order, so all came first). Bytes missing or miscounted for any object reject the unit: an
 * object is never stored empty.
 */
export function withHandedBytes(unit: EncodedUnit, handed: Map<string, Uint8Array[]>): EncodedUnit {
  const fill = (at: ObjectsAt, objects: { bytes: Uint8Array }[]) => {
    const bytes = handed.get(atKey(at))
    if (!bytes) throw new Error(`${atName(at)}: the thread sent no bytes for its objects`)
    if (bytes.length !== objects.length) throw new Error(`${atName(at)}: ${bytes.length} objects' bytes for ${objects.length} objects`)
    objects.forEach((o, i) => (o.bytes = bytes[i]))
  }
  for (const [storage, parts] of Object.entries(unit.partitions)) parts.forEach((p, part) => fill({ storage, part }, p.objects))
  for (const [storage, segment] of Object.entries(unit.segments)) fill({ storage }, segment.objects)
  return unit
}

interface Slot {
  worker: Worker
  busy: number
}

/** Starts the threads; `close()` them when the run ends. */
export function unitPool(options: PoolOptions): UnitPool {
  const { onRetry, fetch, ...rpc } = options.rpc ?? {}
  if (fetch) throw new Error('a custom fetch cannot be used by ingest worker threads')
  const setup: WorkerSetup = {
    chain: options.chain,
    rpcUrl: options.rpcUrl,
    rpc,
    layout: options.layout,
    dex: options.dex,
    custom: !!options.workerUrl,
    extra: options.extra,
    positions: !!options.positions,
  }
  const count = Math.max(1, options.workers ?? availableParallelism())
  const perWorker = Math.max(1, options.perWorker ?? 1)
  const pending = new Map<
    number,
    { resolve(u: EncodedUnit): void; reject(e: Error): void; slot: Slot; handed: Map<string, Uint8Array[]> }
  >()
  // A unit's position work in the main thread, by the unit's last block: what its thread asks and sends.
  const positionWork = new Map<number, { keys(keys: readonly string[]): void; changes(c: PositionChanges): void; fail(e: Error): void }>()
  let nextId = 0
  let failed: Error | undefined

  const slots: Slot[] = Array.from({ length: count }, () => {
    const worker = new Worker(options.workerUrl ?? new URL('./unit-worker.ts', import.meta.url), { workerData: setup })
    const slot: Slot = { worker, busy: 0 }
    worker.on('message', (reply: WorkerReply) => {
      if ('retry' in reply) return onRetry?.(reply.retry)
      if ('positions' in reply) {
        const work = positionWork.get(reply.positions.unitEnd)
        if (!work) return
        if ('keys' in reply.positions) work.keys(reply.positions.keys)
        else work.changes(reply.positions.changes)
        return
      }
      const task = pending.get(reply.id)!
      if ('at' in reply) return void task.handed.set(atKey(reply.at), reply.bytes)
      pending.delete(reply.id)
      task.slot.busy--
      if (!reply.ok) return task.reject(errorOf(reply.error))
      try {
        task.resolve(withHandedBytes(reply.unit, task.handed))
      } catch (e) {
        task.reject(e as Error)
      }
    })
    worker.on('error', err => {
      failed = err
      for (const [id, task] of pending) if (task.slot === slot) (pending.delete(id), task.reject(err))
    })
    return slot
  })

  return {
    capacity: count * perWorker,
    build(unit: IngestUnit): Promise<EncodedUnit> {
      if (failed) return Promise.reject(failed)
      const slot = slots.reduce((a, b) => (b.busy < a.busy ? b : a))
      slot.busy++
      const id = nextId++
      const built = new Promise<EncodedUnit>((resolve, reject) => {
        pending.set(id, { resolve, reject, slot, handed: new Map() })
        slot.worker.postMessage({ id, unit })
      })
      if (!options.positions) return built
      const unitEnd = unit.range[1]
      const positions = options.positions.unit(
        unit.range,
        stateOf =>
          new Promise<{ positionChanges: PositionChanges }>((resolve, reject) => {
            positionWork.set(unitEnd, {
              keys: keys =>
                stateOf(keys).then(
                  state => {
                    const entries = new Map<string, PositionEntry>()
                    for (const k of keys) if (state.has(k)) entries.set(k, state.get(k)!)
                    slot.worker.postMessage({ positions: { unitEnd, entries } satisfies PositionReply })
                  },
                  (e: Error) => slot.worker.postMessage({ positions: { unitEnd, error: e.message } satisfies PositionReply }),
                ),
              changes: positionChanges => resolve({ positionChanges }),
              fail: reject,
            })
          }),
      )
      // A thread sends a unit's changes before the unit itself: the unit's end, or its failure,
      // ends position work still open (the tracker then starts over at the next unit).
      const end = (e: Error) => positionWork.get(unitEnd)?.fail(e)
      built.then(() => end(new Error(`blocks ${unit.range[0]}-${unit.range[1]}: no position changes came back`)), end)
      positions.catch(() => {}).finally(() => positionWork.delete(unitEnd))
      return built
    },
    async close() {
      await Promise.all(slots.map(s => s.worker.terminate()))
    },
  }
}

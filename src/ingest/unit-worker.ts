/**
 * A worker thread of pool.ts: builds the units it is sent (unit.ts) from its own
 * EVM source (node:http transport, WebAssembly keccak and bloom hash), and transfers
 * the encoded bytes back, each object as soon as it is written.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { evmSource } from './evm-source.ts'
import { wasmKeccak256 } from './keccak.ts'
import { wasmXxhash64 } from '../parquet/bloom.ts'
import type { IngestUnit } from './plan.ts'
import type { PositionReply, WorkerReply, WorkerSetup } from './pool.ts'
import { ownBuffer } from '../schema/hex.ts'
import type { PositionEntry } from '../dex/positions.ts'
import type { PositionStateOf, UnitPositions } from './positions.ts'
import { createRpcClient } from './rpc.ts'
import { nodeHttpFetch } from './http-fetch.ts'
import type { ChainSource } from './source.ts'
import { buildUnit, type ObjectsAt } from './unit.ts'

const setup = workerData as WorkerSetup

/** What a unit's object holds once its bytes went ahead of the unit (pool.ts puts them back). */
const HANDED_OVER = new Uint8Array(0)

/** Answers the pool's units; `wrap` lets a benchmark's own worker module wrap the source (PoolOptions.workerUrl). */
export async function serveUnits(wrap: (source: ChainSource) => ChainSource = source => source): Promise<void> {
  const port = parentPort!
  const reply = (message: WorkerReply, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer)
  const rpc = createRpcClient(setup.rpcUrl, { concurrency: 4, ...setup.rpc, fetch: nodeHttpFetch(), onRetry: retry => reply({ retry }) })
  // Position state lives in the main thread (pool.ts): asked per unit, changes sent back.
  const asked = new Map<number, { resolve(e: Map<string, PositionEntry>): void; reject(e: Error): void }>()
  const positions: UnitPositions = {
    async unit(range, work) {
      const unitEnd = range[1]
      const stateOf: PositionStateOf = keys =>
        new Promise((resolve, reject) => {
          asked.set(unitEnd, { resolve, reject })
          reply({ positions: { unitEnd, keys } })
        })
      const out = await work(stateOf)
      reply({ positions: { unitEnd, changes: out.positionChanges } })
      return out
    },
  }
  const source = wrap(
    evmSource(rpc, {
      keccak: await wasmKeccak256(),
      chain: { family: 'evm', id: setup.chain.id },
      dex: setup.dex,
      ...(setup.positions ? { positions } : {}),
    }),
  )
  const layout = { ...setup.layout, bloomHash: await wasmXxhash64() }

  port.on('message', async (message: { id: number; unit: IngestUnit } | { positions: PositionReply }) => {
    if ('positions' in message) {
      const r = message.positions
      const waiting = asked.get(r.unitEnd)
      asked.delete(r.unitEnd)
      if ('error' in r) waiting?.reject(new Error(`position state: ${r.error}`))
      else waiting?.resolve(r.entries)
      return
    }
    const { id, unit } = message
    try {
      // Each object's bytes leave as soon as written, not with the unit: the thread then never holds
      // a unit's encoded objects (about half a gigabyte) while it encodes the rest (BENCHMARKS.md).
      const handOver = (at: ObjectsAt, objects: { bytes: Uint8Array }[]) => {
        const buffers = objects.map(o => ownBuffer(o.bytes))
        for (const o of objects) o.bytes = HANDED_OVER
        reply({ id, at, bytes: buffers.map(b => new Uint8Array(b)) }, buffers)
      }
      reply({ id, ok: true, unit: await buildUnit(source, setup.chain, unit, layout, handOver) })
    } catch (e) {
      const err = e as Error
      const block = (err as { block?: unknown }).block
      reply({ id, ok: false, error: { name: err.name, message: err.message, ...(typeof block === 'number' ? { block } : {}) } })
    }
  })
}

if (!setup.custom) await serveUnits()

/**
 * The Node server, assembled in one place: the HTTP app over any store, served by
 * node:http with backpressure (serve.ts), and the WebSocket API on the same port,
 * whose upgrades go through the same app (authentication, parsing) before live.ts
 * takes them. The explorer page's files (assets.ts) are answered first, as Workers static
 * assets are on Cloudflare. `npm run serve` is this plus argument parsing.
 */
import { compressors } from 'hyparquet-compressors'
import type { Users } from '../api/auth.ts'
import { WindowLimiter, type ReadAllowance, type StreamSlots } from '../api/limits.ts'
import type { FairShare } from '../api/fair.ts'
import { chainKey, type Chain } from '../chains/registry.ts'
import { createApp } from '../http/app.ts'
import { ManifestReader } from '../manifest/read.ts'
import { snappyModuleFromFile, wasmSnappy } from '../parquet/snappy.ts'
import { TailCache } from '../query/io.ts'
import { ColumnBuffers } from '../query/column-buffers.ts'
import { ReadBuffers } from '../query/read-buffers.ts'
import type { ScanOptions } from '../query/scan.ts'
import type { DatasetDecl } from '../schema/dataset.ts'
import type { ObjectStore } from '../store/types.ts'
import { staticAssets } from './assets.ts'
import { hexEncoders, recyclingEncoders } from '../format/encode.ts'
import { hexModuleFromFile, HexKernel } from '../format/hex-kernel.ts'
import { threadEncoders, type ThreadEncoders } from './encode-threads.ts'
import { LiveService, type LiveServiceOptions } from './live.ts'
import { serve, type RunningServer } from './serve.ts'

export interface NodeServerOptions extends Omit<LiveServiceOptions, 'scan' | 'hex'> {
  store: ObjectStore
  users: Users | null
  /** 0 picks a free port (default 0). */
  port?: number
  /** Interface to bind (default 127.0.0.1). */
  host?: string
  chains?: readonly Chain[]
  datasets?: readonly DatasetDecl[]
  /** Scanner options (default: the wasm snappy decompressor and one tail cache for the API and the live replays). */
  scan?: ScanOptions
  /** Resolve once every followed chain is anchored (default true); else at once, following as nodes come up. */
  waitForNodes?: boolean
  /** One JSON line per request (default: none). */
  accessLog?: (line: string) => void
  /** Concurrent data streams per user (default 8; `requests`, the rate, is shared with the live service). */
  streams?: StreamSlots
  /** Storage bytes a user's data responses may read (default 512 MiB per 10 s; src/api/limits.ts). */
  reads?: ReadAllowance
  /** Fair shares of the CPU between users' data streams (default none; src/api/fair.ts). */
  turns?: FairShare
  /** Large text responses are encoded in a thread of their own (encode-threads.ts); `false` keeps them in place. */
  encodeThread?: false | { minRows?: number }
}

export interface NodeServer extends RunningServer {
  live: LiveService
  /** The encoding thread, unless `encodeThread: false`. */
  encoding?: ThreadEncoders
}

/**
 * hyparquet-compressors for every codec, snappy through the module the Worker uses too (pages decode from its memory);
 * local files are read into reused memory (src/query/read-buffers.ts), and data pages decode into memory the text
 * encoders hand back (src/query/column-buffers.ts).
 */
export async function nodeScan(): Promise<ScanOptions> {
  const SNAPPY = wasmSnappy(await snappyModuleFromFile())
  return { compressors: { ...compressors, SNAPPY }, tails: new TailCache(), buffers: new ReadBuffers(), columns: new ColumnBuffers() }
}

/** Starts the HTTP and WebSocket API; resolves once it listens. */
export async function startNodeServer(options: NodeServerOptions): Promise<NodeServer> {
  const scan = options.scan ?? (await nodeScan())
  const requests = options.requests ?? new WindowLimiter()
  const hex = new HexKernel(await hexModuleFromFile())
  const live = new LiveService({ ...options, scan, requests, hex })
  const encoding = options.encodeThread === false ? undefined : threadEncoders({ ...options.encodeThread, hex })
  // Encoders hand the scan's columns back to its memory once they have taken them (Arrow's once the socket has written them).
  const columns = scan.columns
  const encoders = encoding?.encoders ?? hexEncoders(hex)
  const app = createApp({
    limits: { requests, streams: options.streams, reads: options.reads, turns: options.turns },
    store: options.store,
    manifest: new ManifestReader(options.store),
    users: options.users,
    chains: options.chains,
    datasets: options.datasets,
    scan,
    upgrade: live.upgradeHook,
    liveLag: chain => live.chains.get(chainKey(chain))?.lag() ?? null,
    unfinalized: { slice: async (chain, req) => live.chains.get(chainKey(chain))?.slice(req) ?? null },
    accessLog: options.accessLog,
    encoders: columns ? recyclingEncoders(encoders, columns) : encoders,
  })
  const fetch = (request: Request) => app.fetch(request)
  const assets = staticAssets()
  const running = await serve({
    fetch: request => assets(request) ?? fetch(request),
    port: options.port,
    host: options.host,
    written: chunk => {
      encoding?.written(chunk)
      columns?.wrote(chunk)
    },
  })
  running.server.on('upgrade', (req, socket, head) => live.handleUpgrade(req, socket, head, fetch))
  const started = live.start()
  if (options.waitForNodes ?? true) await started
  return {
    ...running,
    live,
    ...(encoding ? { encoding } : {}),
    close: async () => {
      await live.close()
      await running.close()
      await encoding?.close()
    },
  }
}

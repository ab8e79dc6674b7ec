/**
 * The end-to-end lake: the recorded mainnet blocks ingested by the real ingester
 * from the replay JSON-RPC node (../shared/tools/replay-evm.mjs) into a temp
 * file-system store, and the real app over it, called with Basic auth.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findChain } from '../../src/chains/registry.ts'
import { createApp } from '../../src/http/app.ts'
import { WindowLimiter } from '../../src/api/limits.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { runIngest } from '../../src/ingest/run.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { fsStore } from '../../src/store/fs.ts'
import type { ObjectStore } from '../../src/store/types.ts'
import { startReplay } from '../ingest/fixtures.ts'
import { RECORDED_BLOCKS } from './reference.ts'
import { basic } from '../support/basic.ts'

/** The user the tests call the API as (a plaintext secret in API_USERS, as for local use). */
export const USER = 'e2e'
export const PASSWORD = 'recorded-mainnet'
export const AUTHORIZATION = basic(USER, PASSWORD)

/** The range every filter case asks for: wider than the data, with gaps between the stored blocks. */
export const FROM = 17000000
export const TO = 18500000
/** X-Blocks-Served of that range: the stored blocks only. */
export const SERVED = RECORDED_BLOCKS.map(n => `${n}-${n}`).join(',')

/** The ingested lake and the app over it. */
export interface RecordedLake {
  store: ObjectStore
  /** The store's directory (for `--data file://…`). */
  dir: string
  /** The app over the store, as a fetch function. */
  fetch: (request: Request) => Response | Promise<Response>
  remove(): Promise<void>
}

/** Ingests each recorded block as a one-block range, then builds the app over the store. */
export async function ingestRecorded(): Promise<RecordedLake> {
  const dir = await mkdtemp(join(tmpdir(), 'e2e-lake-'))
  const store = fsStore(dir)
  const chain = findChain('evm', 'ETH')!
  const replay = await startReplay()
  try {
    for (const n of RECORDED_BLOCKS) await runIngest({ chain, rpcUrl: replay.url, from: n, to: n, store })
  } finally {
    replay.stop()
  }
  const app = createApp({
    store,
    manifest: new ManifestReader(store),
    users: await parseUsers(`${USER}:${PASSWORD}`),
    // Hundreds of cases in a few seconds: results are what is tested here, not the request rate.
    limits: { requests: new WindowLimiter({ limit: 1_000_000 }) },
  })
  return { store, dir, fetch: request => app.fetch(request), remove: () => rm(dir, { recursive: true, force: true }) }
}

/** GET `/v1/api/<path>` from the app, authenticated. */
export const apiGet = (lake: RecordedLake, path: string, headers: Record<string, string> = {}): Promise<Response> =>
  Promise.resolve(
    lake.fetch(new Request(`http://api.example.com/v1/api/${path}`, { headers: { authorization: AUTHORIZATION, ...headers } })),
  )

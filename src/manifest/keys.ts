/** Object keys of the lake. Partition keys carry a content hash, so a rewrite never changes bytes under a reader. */
import { chainKey } from '../chains/registry.ts'
import type { ChainRef } from './types.ts'

const pad = (n: number) => String(n).padStart(12, '0')

export const rootKey = (chain: ChainRef): string => `${chainKey(chain)}/manifest/root.json`

export const shardKey = (chain: ChainRef, dataset: string, index: number, generation: number): string =>
  `${chainKey(chain)}/manifest/${dataset}/${String(index).padStart(6, '0')}-g${generation}.json`

export const partitionKey = (chain: ChainRef, dataset: string, from: number, to: number, contentHash: string): string =>
  `${chainKey(chain)}/${dataset}/${pad(from)}-${pad(to)}-${contentHash.slice(0, 16)}.parquet`

/** Hex SHA-256 of the partition bytes (Web Crypto: same code in Node and workerd). */
export async function contentHash(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)
  return Array.from(new Uint8Array(digest), b => b.toString(16).padStart(2, '0')).join('')
}

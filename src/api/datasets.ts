/**
 * Which dataset a path names on a host. Both families have a `transactions`
 * endpoint, so a path resolves only within the host's family; a path of the other
 * family is a 404 that says where it is served, never another chain's data.
 */
import { DEX_DATASETS, dexTokens } from '../datasets/dex.ts'
import { EVM_DATASETS } from '../datasets/evm.ts'
import { MOVE_DATASETS } from '../datasets/move.ts'
import type { DatasetDecl, Family } from '../schema/dataset.ts'
import { ApiError } from './errors.ts'

/** Every dataset the API serves. */
export const DATASETS: readonly DatasetDecl[] = [...EVM_DATASETS, ...DEX_DATASETS, dexTokens, ...MOVE_DATASETS]

const WHERE: Record<Family, string> = { evm: 'the EVM host', move: 'the Move chain hosts' }

/** The dataset at `path` (below /v1/api/, trailing slash ignored) for a family; 404 otherwise. */
export function findDataset(path: string, family: Family, datasets: readonly DatasetDecl[] = DATASETS): DatasetDecl {
  const p = path.replace(/\/+$/, '')
  const found = datasets.find(d => d.family === family && d.path === p)
  if (found) return found
  const elsewhere = datasets.find(d => d.path === p)
  const hint = elsewhere ? `; /v1/api/${p} is served on ${WHERE[elsewhere.family]}` : ''
  const here = datasets.filter(d => d.family === family).map(d => `/v1/api/${d.path}`)
  throw new ApiError(
    404,
    'not_found',
    `no endpoint at /v1/api/${p} on this host${hint}; endpoints here: /v1/api/status, ${here.join(', ')}`,
  )
}

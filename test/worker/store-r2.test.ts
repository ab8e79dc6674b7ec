import { describe, expect, it } from 'vitest'
import { env } from 'cloudflare:workers'
import { r2Store } from '../../src/store/r2.ts'
import { StorageError } from '../../src/store/types.ts'
import { objectStoreContract } from '../store/contract.ts'

objectStoreContract('R2 binding (miniflare)', () => r2Store(env.LAKE, { pageSize: 7 }))

describe('r2Store', () => {
  it('turns a failing binding into StorageError', async () => {
    const broken = new Proxy(env.LAKE, {
      get: () => () => Promise.reject(new Error('get: We encountered an internal error. Please try again. (10001)')),
    })
    const store = r2Store(broken)
    await expect(store.head('k')).rejects.toThrow(StorageError)
    await expect(store.get('k', { offset: 0, length: 4 })).rejects.toThrow(StorageError)
    await expect(store.list('')).rejects.toThrow(StorageError)
  })
})

import { pbkdf2Sync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  authenticate,
  constantTimeEqual,
  hashPassword,
  parseBasic,
  parseUsers,
  PBKDF2_ITERATIONS,
  UsersConfigError,
} from '../../src/api/auth.ts'
import { basic } from '../support/basic.ts'

describe('hashPassword', () => {
  it('writes a PBKDF2-SHA256 hash that Node derives the same way', async () => {
    const hash = await hashPassword('correct horse', 1000)
    const [scheme, iterations, salt, digest] = hash.split('$')
    expect(scheme).toBe('pbkdf2-sha256')
    expect(iterations).toBe('1000')
    const expected = pbkdf2Sync('correct horse', Buffer.from(salt, 'base64'), 1000, 32, 'sha256').toString('base64')
    expect(digest).toBe(expected)
  })

  it('salts every hash', async () => {
    expect(await hashPassword('x', 10)).not.toBe(await hashPassword('x', 10))
  })

  it('refuses iteration counts workerd cannot run', async () => {
    await expect(hashPassword('x', 100_001)).rejects.toThrow(RangeError)
  })
})

describe('parseBasic', () => {
  it('splits at the first colon and keeps UTF-8', () => {
    expect(parseBasic(basic('ana', 'pa:ss wörd'))).toEqual({ user: 'ana', password: 'pa:ss wörd' })
    expect(parseBasic('basic ' + Buffer.from('a:b').toString('base64'))).toEqual({ user: 'a', password: 'b' })
  })

  it('refuses other schemes and malformed values', () => {
    for (const h of [
      null,
      '',
      'Bearer abc',
      'Basic',
      'Basic !!!',
      'Basic ' + Buffer.from('nocolon').toString('base64'),
      'Basic ' + Buffer.from([0xff, 0x3a]).toString('base64'),
    ]) {
      expect(parseBasic(h)).toBe(null)
    }
  })
})

describe('authenticate', () => {
  it('accepts hashed and plaintext secrets and nothing else', async () => {
    const users = await parseUsers(`alice:${await hashPassword('s3cret', 1000)}, bob:plain-pw`)
    expect(await authenticate(basic('alice', 's3cret'), users)).toBe('alice')
    expect(await authenticate(basic('alice', 's3cret'), users)).toBe('alice')
    expect(await authenticate(basic('alice', 's3cre'), users)).toBe(null)
    expect(await authenticate(basic('bob', 'plain-pw'), users)).toBe('bob')
    expect(await authenticate(basic('bob', 'plain-pw '), users)).toBe(null)
    expect(await authenticate(basic('carol', 'plain-pw'), users)).toBe(null)
    expect(await authenticate(basic('Alice', 's3cret'), users)).toBe(null)
    expect(await authenticate(undefined, users)).toBe(null)
  })

  it('hashes a plaintext secret when loading it, so a known user costs the same PBKDF2 as an unknown one', async () => {
    const users = await parseUsers('dev:dev')
    const secret = users.get('dev')!
    expect(secret.iterations).toBe(PBKDF2_ITERATIONS)
    expect(secret.hash).toHaveLength(32)
    expect(new TextDecoder().decode(secret.hash)).not.toContain('dev')
    expect((await parseUsers('dev:dev')).get('dev')!.salt).not.toEqual(secret.salt)
  })

  it('does not let a cached success leak to another password or a changed secret', async () => {
    const before = await parseUsers('dave:one')
    expect(await authenticate(basic('dave', 'one'), before)).toBe('dave')
    const after = await parseUsers('dave:two')
    expect(await authenticate(basic('dave', 'one'), after)).toBe(null)
    expect(await authenticate(basic('dave', 'two'), after)).toBe('dave')
  })
})

describe('parseUsers', () => {
  it('reports malformed entries without their secrets', async () => {
    for (const text of [
      '',
      'alice',
      'alice:',
      ':pw',
      'a:x,a:y',
      'a:pbkdf2-sha256$0$AA==$AA==',
      'a:pbkdf2-sha256$200000$AA==$AA==',
      'a:pbkdf2-sha256$1000$!!$AA==',
    ]) {
      const err = await parseUsers(text).catch(e => e)
      expect(err).toBeInstanceOf(UsersConfigError)
      expect(String(err.message)).not.toContain('AA==')
    }
  })
})

describe('constantTimeEqual', () => {
  it('compares contents and lengths', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true)
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false)
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0]))).toBe(false)
  })
})

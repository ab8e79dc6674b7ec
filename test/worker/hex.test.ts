import { describe, expect, it } from 'vitest'
import { bytesToHex, hexToBytes } from '../../src/schema/hex.ts'
import { jsKeccak256 } from '../../src/ingest/keccak.ts'
import { orderedTrieRoot } from '../../src/ingest/trie.ts'

// In workerd hexToBytes takes nodejs_compat's Buffer for long strings, and verification its JavaScript keccak.
describe('hex and keccak in workerd', () => {
  it('decodes long hex natively and still refuses what is not hex', () => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 97 + 13) & 0xff)
    expect(hexToBytes(bytesToHex(bytes))).toEqual(bytes)
    const hex = bytesToHex(bytes)
    for (const bad of ['g', 'é', '\u0130']) expect(() => hexToBytes(hex.slice(0, 500) + bad + hex.slice(501))).toThrow(/invalid hex/)
  })

  it('hashes with the JavaScript keccak: the empty trie root', () => {
    expect(bytesToHex(orderedTrieRoot([], jsKeccak256))).toBe('0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421')
  })
})

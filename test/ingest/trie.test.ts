/**
 * `orderedTrieRoot` on tries of every shape mainnet blocks rarely give (verify.test.ts checks
 * their real roots), held to a plain reference that encodes each node whole, as the Yellow Paper
 * writes it: values of one byte below 0x80, leaves short enough to be embedded in their parent, a
 * single value, and both hashers.
 */
import { describe, expect, it } from 'vitest'
import { jsKeccak256, wasmKeccak256, type Keccak256 } from '../../src/ingest/keccak.ts'
import { rlpEncode, uintBytes } from '../../src/ingest/rlp.ts'
import { orderedTrieRoot } from '../../src/ingest/trie.ts'
import { randomBytes, rng } from '../query/lake.ts'

type Leaf = { nibbles: number[]; value: Uint8Array }

const nibblesOf = (bytes: Uint8Array) => [...bytes].flatMap(b => [b >> 4, b & 15])
const compact = (nibbles: number[], leaf: boolean) => {
  const all = [(leaf ? 2 : 0) + (nibbles.length % 2), ...(nibbles.length % 2 ? [] : [0]), ...nibbles]
  return Uint8Array.from({ length: all.length / 2 }, (_, i) => (all[2 * i] << 4) | all[2 * i + 1])
}

/** A list of items already encoded: the payload's prefix, then the items as they are. */
function listOf(encoded: Uint8Array[]): Uint8Array {
  const payload = Buffer.concat(encoded)
  const n = payload.length
  const length = [...uintBytes(BigInt(n))]
  return Uint8Array.from([...(n < 56 ? [0xc0 + n] : [0xf7 + length.length, ...length]), ...payload])
}

function referenceNode(leaves: Leaf[], depth: number, keccak: Keccak256): Uint8Array {
  // a child shorter than a hash is embedded as it is, else its hash is a string item
  const ref = (encoded: Uint8Array): Uint8Array => (encoded.length < 32 ? encoded : rlpEncode(keccak(encoded)))
  if (leaves.length === 1) return rlpEncode([compact(leaves[0].nibbles.slice(depth), true), leaves[0].value])
  let shared = 0
  while (leaves.every(l => l.nibbles.length > depth + shared && l.nibbles[depth + shared] === leaves[0].nibbles[depth + shared])) shared++
  if (shared)
    return listOf([
      rlpEncode(compact(leaves[0].nibbles.slice(depth, depth + shared), false)),
      ref(referenceNode(leaves, depth + shared, keccak)),
    ])
  const branch: Uint8Array[] = Array.from({ length: 17 }, () => rlpEncode(new Uint8Array(0)))
  for (let n = 0; n < 16; n++) {
    const group = leaves.filter(l => l.nibbles.length > depth && l.nibbles[depth] === n)
    if (group.length) branch[n] = ref(referenceNode(group, depth + 1, keccak))
  }
  const here = leaves.find(l => l.nibbles.length === depth)
  if (here) branch[16] = rlpEncode(here.value)
  return listOf(branch)
}

const referenceRoot = (values: Uint8Array[], keccak: Keccak256) =>
  keccak(
    referenceNode(
      values.map((value, i) => ({ nibbles: nibblesOf(rlpEncode(uintBytes(BigInt(i)))), value })),
      0,
      keccak,
    ),
  )

describe('orderedTrieRoot', () => {
  it('matches each node encoded whole, for tries of tiny, embedded and large leaves', async () => {
    const r = rng(17)
    for (const [name, keccak] of [
      ['JavaScript', jsKeccak256],
      ['WebAssembly', await wasmKeccak256()],
    ] as const) {
      for (const count of [1, 2, 3, 16, 17, 129, 300]) {
        for (const size of [() => 1, () => Math.floor(r() * 6), () => Math.floor(r() * 40), () => 20 + Math.floor(r() * 2000)]) {
          const values = Array.from({ length: count }, () => {
            const n = size()
            // a one-byte value below 0x80 is its own encoding
            return n === 1 ? Uint8Array.of(Math.floor(r() * 256)) : randomBytes(r, n)
          })
          expect(Buffer.from(orderedTrieRoot(values, keccak)), `${name}: ${count} values`).toEqual(
            Buffer.from(referenceRoot(values, keccak)),
          )
        }
      }
    }
  })
})

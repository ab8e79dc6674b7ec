/**
 * Root of a Merkle-Patricia trie keyed by rlp(index): the transactions, receipts and
 * withdrawals roots of a block header. Recomputing them binds every transaction,
 * receipt and log to the header hash, so a verified header verifies the rows.
 */
import { jsKeccak256, type Keccak256 } from './keccak.ts'
import { rlpEncode, rlpRaw, uintBytes, type RlpItem } from './rlp.ts'

interface Leaf {
  nibbles: number[]
  value: Uint8Array
}

const EMPTY = new Uint8Array(0)

/** Root hash of the trie holding `values[i]` under key rlp(i). */
export function orderedTrieRoot(values: readonly Uint8Array[], keccak: Keccak256 = jsKeccak256): Uint8Array {
  if (values.length === 0) return keccak(rlpEncode(EMPTY))
  const leaves = values.map((value, i) => ({ nibbles: keyNibbles(i), value }))
  return keccak(encodeNode(leaves, 0, keccak))
}

/** The nibbles of rlp(i), the same in every block's tries: made once per index, shared (nothing writes into them). */
const KEYS: number[][] = []
function keyNibbles(i: number): number[] {
  while (KEYS.length <= i) KEYS.push(toNibbles(rlpEncode(uintBytes(BigInt(KEYS.length)))))
  return KEYS[i]
}

function toNibbles(bytes: Uint8Array): number[] {
  const out: number[] = []
  for (const b of bytes) out.push(b >> 4, b & 0x0f)
  return out
}

/** Compact (hex-prefix) encoding of a key path, flagging leaves. */
function hexPrefix(nibbles: number[], leaf: boolean): Uint8Array {
  const flag = (leaf ? 2 : 0) + (nibbles.length % 2)
  const all = nibbles.length % 2 ? [flag, ...nibbles] : [flag, 0, ...nibbles]
  const out = new Uint8Array(all.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = (all[2 * i] << 4) | all[2 * i + 1]
  return out
}

/** A child is embedded when its encoding is shorter than a hash, else referenced by hash. */
function reference(encoded: Uint8Array, keccak: Keccak256): RlpItem {
  return encoded.length < 32 ? rlpRaw(encoded) : keccak(encoded)
}

function encodeNode(leaves: Leaf[], depth: number, keccak: Keccak256): Uint8Array {
  if (leaves.length === 1) {
    return rlpEncode([hexPrefix(leaves[0].nibbles.slice(depth), true), leaves[0].value])
  }
  const shared = sharedPrefix(leaves, depth)
  if (shared > 0) {
    const path = leaves[0].nibbles.slice(depth, depth + shared)
    return rlpEncode([hexPrefix(path, false), reference(encodeNode(leaves, depth + shared, keccak), keccak)])
  }
  const groups: Leaf[][] = Array.from({ length: 16 }, () => [])
  const branch: RlpItem[] = Array.from({ length: 17 }, () => EMPTY)
  for (const leaf of leaves) {
    if (leaf.nibbles.length === depth) branch[16] = leaf.value
    else groups[leaf.nibbles[depth]].push(leaf)
  }
  for (let nibble = 0; nibble < 16; nibble++) {
    if (groups[nibble].length) branch[nibble] = reference(encodeNode(groups[nibble], depth + 1, keccak), keccak)
  }
  return rlpEncode(branch)
}

function sharedPrefix(leaves: Leaf[], depth: number): number {
  let n = 0
  for (;;) {
    const at = depth + n
    const first = leaves[0].nibbles[at]
    if (first === undefined || leaves.some(l => l.nibbles.length <= at || l.nibbles[at] !== first)) return n
    n++
  }
}

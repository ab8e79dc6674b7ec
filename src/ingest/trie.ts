/**
 * Root of a Merkle-Patricia trie keyed by rlp(index): the transactions, receipts and
 * withdrawals roots of a block header. Recomputing them binds every transaction,
 * receipt and log to the header hash, so a verified header verifies the rows.
 */
import { jsKeccak256, type Keccak256 } from './keccak.ts'
import { rlpEncode, RlpWriter, uintBytes } from './rlp.ts'

interface Leaf {
  nibbles: number[]
  value: Uint8Array
}

const EMPTY: Uint8Array = new Uint8Array(0)

/** The trie's node writer; `orderedTrieRoot` resets its arena as it starts (no node outlives the root's hash). */
const rlp = new RlpWriter()

/** Root hash of the trie holding `values[i]` under key rlp(i). */
export function orderedTrieRoot(values: readonly Uint8Array[], keccak: Keccak256 = jsKeccak256): Uint8Array {
  if (values.length === 0) return keccak(rlpEncode(EMPTY))
  rlp.reset()
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

/**
 * How a parent holds a child: its encoding when shorter than a hash (embedded), else its hash.
 * The two are told apart by length (under 32 bytes, or 32).
 */
function reference(encoded: Uint8Array, keccak: Keccak256): Uint8Array {
  return encoded.length < 32 ? encoded : keccak(encoded)
}

function writeReference(w: RlpWriter, ref: Uint8Array): void {
  if (ref.length < 32) w.raw(ref)
  else w.bytes(ref)
}

/** A node's encoding (a view of the writer's arena); its children are encoded, and hashed, before it. */
function encodeNode(leaves: Leaf[], depth: number, keccak: Keccak256): Uint8Array {
  if (leaves.length === 1) {
    const path = hexPrefix(leaves[0].nibbles.slice(depth), true)
    const value = leaves[0].value
    return rlp.encode(w => {
      w.begin()
      w.bytes(path)
      w.bytes(value)
      w.end()
    })
  }
  const shared = sharedPrefix(leaves, depth)
  if (shared > 0) {
    const path = hexPrefix(leaves[0].nibbles.slice(depth, depth + shared), false)
    const child = reference(encodeNode(leaves, depth + shared, keccak), keccak)
    return rlp.encode(w => {
      w.begin()
      w.bytes(path)
      writeReference(w, child)
      w.end()
    })
  }
  const groups: Leaf[][] = Array.from({ length: 16 }, () => [])
  let value = EMPTY
  for (const leaf of leaves) {
    if (leaf.nibbles.length === depth) value = leaf.value
    else groups[leaf.nibbles[depth]].push(leaf)
  }
  const children = groups.map(group => (group.length ? reference(encodeNode(group, depth + 1, keccak), keccak) : undefined))
  return rlp.encode(w => {
    w.begin()
    for (const child of children) {
      if (child) writeReference(w, child)
      else w.bytes(EMPTY)
    }
    w.bytes(value)
    w.end()
  })
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

/**
 * keccak-256, the hash under every header, transaction and trie node. Verification
 * takes it as a parameter: the default is viem's JavaScript keccak, which runs
 * everywhere (the Worker's live follower verifies with it: production workerd refuses
 * to compile WebAssembly from bytes at run time); the Node ingester passes the
 * WebAssembly keccak of `wasmKeccak256`, about ten times faster on a mainnet block.
 */
import { keccak256 } from 'viem'

/** keccak-256 of `bytes`: 32 bytes. */
export type Keccak256 = (bytes: Uint8Array) => Uint8Array

export const jsKeccak256: Keccak256 = bytes => keccak256(bytes, 'bytes')

/** hash-wasm's WebAssembly keccak-256 (Node: it compiles its module from bytes). One instance, not reentrant: fine on one thread. */
export async function wasmKeccak256(): Promise<Keccak256> {
  const { createKeccak } = await import('hash-wasm')
  const hasher = await createKeccak(256)
  return bytes => hasher.init().update(bytes).digest('binary')
}

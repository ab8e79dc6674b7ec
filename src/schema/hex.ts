/** Hex text is the hot path of every text encoder, so these avoid per-byte string concatenation. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

export function bytesToHex(bytes: Uint8Array): string {
  let out = '0x'
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]]
  return out
}

/** Parses 0x-prefixed hex of even length (case-insensitive). */
export function hexToBytes(hex: string): Uint8Array {
  const s = hex.startsWith('0x') || hex.startsWith('0X') ? hex.slice(2) : hex
  if (s.length % 2 !== 0) throw new Error(`odd-length hex: ${hex}`)
  const out = new Uint8Array(s.length / 2)
  for (let i = 0; i < out.length; i++) {
    const b = parseInt(s.substr(i * 2, 2), 16)
    if (Number.isNaN(b)) throw new Error(`invalid hex: ${hex}`)
    out[i] = b
  }
  return out
}

/** The parts one after another in a new buffer. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

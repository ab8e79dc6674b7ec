/**
 * Strict decoding of static ABI words, for events and `eth_call` results. Every DEX event
 * has only static parameters (addresses and fixed-width integers), so a log decodes from its
 * topics and fixed 32-byte data words. A word that is not a valid encoding of its declared
 * type (dirty address padding, an int24 that is not sign-extended, a uint112 above 2^112)
 * makes the whole log undecodable: a contract that reuses a topic0 with another layout is
 * ignored rather than mis-decoded.
 */
import { toEventSelector } from 'viem'
import type { AbiEvent, Hex } from 'viem'

/** A decoded static value: addresses as lowercase 0x-hex, integers as bigint. */
export type Word = Hex | bigint

/** Decoded parameters by name (an unnamed parameter by its position, e.g. `3`). */
export type Args = Readonly<Record<string, Word>>

/** The part of a JSON-RPC log a decoder reads. */
export interface RawLog {
  topics: readonly Hex[]
  data: Hex
}

const WORD = 64
const TWO_256 = 1n << 256n

/**
 * The value of one 64-hex-digit word as `type`, or undefined when the word is not a valid
 * encoding of it. Only the static types DEX events use are known; others are refused.
 */
export function decodeWord(type: string, word: string): Word | undefined {
  if (word.length !== WORD || !/^[0-9a-fA-F]*$/.test(word)) return undefined
  if (type === 'address') return /^0{24}$/.test(word.slice(0, 24)) ? (`0x${word.slice(24).toLowerCase()}` as Hex) : undefined
  const m = /^(u?)int(\d+)$/.exec(type)
  if (!m) return undefined
  const bits = BigInt(m[2])
  const n = BigInt(`0x${word}`)
  if (m[1] === 'u') return n < 1n << bits ? n : undefined
  const half = 1n << (bits - 1n)
  if (n < half) return n
  return n >= TWO_256 - half ? n - TWO_256 : undefined
}

/** The 32-byte words of 0x-hex data, or undefined when its length is not a whole number of words. */
export function words(data: Hex): string[] | undefined {
  const hex = data.slice(2)
  if (hex.length % WORD !== 0) return undefined
  return Array.from({ length: hex.length / WORD }, (_, i) => hex.slice(i * WORD, (i + 1) * WORD))
}

/** An event ABI item with its topic0, compiled once for strict decoding. */
export interface CompiledEvent {
  abi: AbiEvent
  topic0: Hex
  /** Topics a conforming log has, topic0 included. */
  topics: number
  /** Data words a conforming log has. */
  dataWords: number
}

/** Precomputes what `decodeLog` checks for an event ABI item. */
export function compileEvent(abi: AbiEvent): CompiledEvent {
  const indexed = abi.inputs.filter(i => i.indexed).length
  return { abi, topic0: toEventSelector(abi), topics: 1 + indexed, dataWords: abi.inputs.length - indexed }
}

/**
 * The log's parameters, or null when the log does not conform to the event exactly: another
 * topic0, another number of topics or data words, or a word out of its type's range.
 */
export function decodeLog(event: CompiledEvent, log: RawLog): Args | null {
  if (log.topics.length !== event.topics || log.topics[0]?.toLowerCase() !== event.topic0) return null
  const data = words(log.data)
  if (!data || data.length !== event.dataWords) return null
  const args: Record<string, Word> = {}
  let topic = 1
  let word = 0
  for (const [i, input] of event.abi.inputs.entries()) {
    const raw = input.indexed ? log.topics[topic++].slice(2) : data[word++]
    const value = decodeWord(input.type, raw)
    if (value === undefined) return null
    args[input.name || String(i)] = value
  }
  return args
}

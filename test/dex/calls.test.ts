import { describe, expect, it } from 'vitest'
import { encodeAbiParameters, stringToHex, toFunctionSelector } from 'viem'
import type { Hex } from 'viem'
import { POOL_CALLS, poolInfoFromCalls } from '../../src/dex/pools.ts'
import { TOKEN_CALLS, decodeDecimalsResult, decodeTextResult, tokenRow } from '../../src/dex/tokens.ts'
import { bytesToHex } from '../../src/schema/hex.ts'

const string = (s: string): Hex => encodeAbiParameters([{ type: 'string' }], [s])
const uint = (n: bigint): Hex => encodeAbiParameters([{ type: 'uint256' }], [n])
const address = (a: Hex): Hex => encodeAbiParameters([{ type: 'address' }], [a])
const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'
const WETH = '0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2'

describe('token metadata results', () => {
  it('calls the ERC-20 getters by their selectors', () => {
    // Selectors as listed in EIP-20.
    expect(TOKEN_CALLS).toEqual({ symbol: '0x95d89b41', name: '0x06fdde03', decimals: '0x313ce567' })
  })

  it('decodes ABI strings, short and long, ASCII and not', () => {
    expect(decodeTextResult(string('WETH'))).toBe('WETH')
    const long = 'A token whose name is longer than one 32-byte word, on purpose'
    expect(decodeTextResult(string(long))).toBe(long)
    expect(decodeTextResult(string('Ünïcødé 🦄'))).toBe('Ünïcødé 🦄')
    expect(decodeTextResult(string(''))).toBe('')
  })

  it('decodes bytes32 symbols and names (MKR)', () => {
    // MKR's symbol() and name() return bytes32, NUL-padded.
    expect(decodeTextResult(stringToHex('MKR', { size: 32 }))).toBe('MKR')
    expect(decodeTextResult(stringToHex('Maker', { size: 32 }))).toBe('Maker')
  })

  it('tolerates reverts, empty and malformed results', () => {
    expect(decodeTextResult(null)).toBeNull()
    expect(decodeTextResult('0x')).toBeNull()
    expect(decodeTextResult('0x1234')).toBeNull()
    // An offset past the end, and a length past the end.
    expect(decodeTextResult(`0x${'0'.repeat(62)}80${'0'.repeat(64)}`)).toBeNull()
    expect(decodeTextResult(`0x${'0'.repeat(62)}20${'0'.repeat(62)}ff${'41'.repeat(32)}`)).toBeNull()
    expect(decodeTextResult('0xzz' as Hex)).toBeNull()
  })

  it('decodes decimals as uint8', () => {
    expect(decodeDecimalsResult(uint(18n))).toBe(18n)
    expect(decodeDecimalsResult(uint(0n))).toBe(0n)
    expect(decodeDecimalsResult(uint(256n))).toBeNull()
    expect(decodeDecimalsResult('0x')).toBeNull()
    expect(decodeDecimalsResult(null)).toBeNull()
  })

  it('builds the dex/tokens row', () => {
    const row = tokenRow(USDC, { symbol: string('USDC'), name: null, decimals: uint(6n) })
    expect({ ...row, address: bytesToHex(row.address) }).toEqual({ address: USDC, symbol: 'USDC', name: null, decimals: 6n })
  })
})

describe('pool metadata results', () => {
  it('calls token0(), token1() and fee()', () => {
    expect(POOL_CALLS).toEqual({
      token0: toFunctionSelector('function token0() view returns (address)'),
      token1: '0xd21220a7',
      fee: '0xddca3f43',
    })
  })

  it('reads a v3 pool and a v2 pair (whose fee() reverts)', () => {
    expect(poolInfoFromCalls({ token0: address(USDC), token1: address(WETH), fee: uint(500n) })).toEqual({
      token0: USDC,
      token1: WETH,
      fee: 500n,
    })
    expect(poolInfoFromCalls({ token0: address(USDC), token1: address(WETH), fee: null })).toEqual({
      token0: USDC,
      token1: WETH,
      fee: null,
    })
  })

  it('answers null without both tokens, and refuses dirty words', () => {
    expect(poolInfoFromCalls({ token0: address(USDC), token1: null, fee: null })).toBeNull()
    expect(poolInfoFromCalls({ token0: '0x', token1: address(WETH), fee: null })).toBeNull()
    const dirty = `0x01${address(USDC).slice(4)}` as Hex
    expect(poolInfoFromCalls({ token0: dirty, token1: address(WETH), fee: null })).toBeNull()
    expect(poolInfoFromCalls({ token0: address(USDC), token1: address(WETH), fee: uint(1n << 24n) })?.fee).toBeNull()
  })
})

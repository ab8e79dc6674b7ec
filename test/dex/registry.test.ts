import { describe, expect, it } from 'vitest'
import { getContractAddress, keccak256, toEventSelector } from 'viem'
import type { Abi, Hex } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { decodeDex, poolsToResolve, scanBlocks } from '../../src/dex/decode.ts'
import type { DexBlock, DexLog } from '../../src/dex/decode.ts'
import { FACTORIES, POSITION_MANAGERS, poolAddress, verifyPool } from '../../src/dex/factories.ts'
import { MANAGER_EVENTS, POOL_EVENTS_BY_TOPIC, PROTOCOLS } from '../../src/dex/protocols.ts'
import type { PoolEventSpec } from '../../src/dex/protocols.ts'
import { DEVNET_MNEMONIC } from '../../scripts/dev/devnet/anvil.ts'
import { loadArtifact } from '../../scripts/dev/devnet/contracts.ts'
import { ARTIFACT_ABIS, artifactEvent, create2 } from './recorded.ts'

/** The npm artifact each registry event was copied from. */
const SOURCES: Record<string, [Abi, string]> = {
  'uniswap_v2.PairCreated': [ARTIFACT_ABIS.v2Factory, 'PairCreated'],
  'uniswap_v2.Swap': [ARTIFACT_ABIS.v2Pair, 'Swap'],
  'uniswap_v2.Sync': [ARTIFACT_ABIS.v2Pair, 'Sync'],
  'uniswap_v2.Mint': [ARTIFACT_ABIS.v2Pair, 'Mint'],
  'uniswap_v2.Burn': [ARTIFACT_ABIS.v2Pair, 'Burn'],
  'uniswap_v3.PoolCreated': [ARTIFACT_ABIS.v3Factory, 'PoolCreated'],
  'uniswap_v3.Swap': [ARTIFACT_ABIS.v3Pool, 'Swap'],
  'uniswap_v3.Mint': [ARTIFACT_ABIS.v3Pool, 'Mint'],
  'uniswap_v3.Burn': [ARTIFACT_ABIS.v3Pool, 'Burn'],
  'uniswap_v3.Collect': [ARTIFACT_ABIS.v3Pool, 'Collect'],
  'pancakeswap_v3.Swap': [ARTIFACT_ABIS.pancakeV3Pool, 'Swap'],
  'position_manager.IncreaseLiquidity': [ARTIFACT_ABIS.positionManager, 'IncreaseLiquidity'],
  'position_manager.DecreaseLiquidity': [ARTIFACT_ABIS.positionManager, 'DecreaseLiquidity'],
  'position_manager.Collect': [ARTIFACT_ABIS.positionManager, 'Collect'],
  'position_manager.Transfer': [ARTIFACT_ABIS.positionManager, 'Transfer'],
}

const allSpecs = [...new Set(Object.values(PROTOCOLS).flatMap(p => p.events as readonly PoolEventSpec[]))]
const spec = (id: string): PoolEventSpec => allSpecs.find(s => s.id === id)!

describe('event ABI registry', () => {
  it('copies every event from the npm artifacts: same inputs, same topic0', () => {
    const specs = [...allSpecs, ...MANAGER_EVENTS]
    expect(specs.map(s => s.id).sort()).toEqual(Object.keys(SOURCES).sort())
    for (const s of specs) {
      const [abi, name] = SOURCES[s.id]
      const source = artifactEvent(abi, name)
      expect(s.event.abi.inputs.map(i => [i.name, i.type, i.indexed])).toEqual(source.inputs.map(i => [i.name, i.type, i.indexed ?? false]))
      expect(s.event.topic0).toBe(toEventSelector(source))
    }
  })

  it('gives PancakeSwap v3 its own Swap topic0 and Uniswap v3 Mint, Burn, Collect and PoolCreated', () => {
    const uni = PROTOCOLS.uniswap_v3.events.map(s => s.event.topic0)
    const pancake = PROTOCOLS.pancakeswap_v3.events.map(s => s.event.topic0)
    // Swap's topic0 as published for PancakeSwap v3 pools.
    expect(pancake).toContain('0x19b47279256b2a23a1665c810c8d55a1758940ee09377d4f8d26497a3577dc83')
    expect(pancake.filter(t => !uni.includes(t))).toEqual(['0x19b47279256b2a23a1665c810c8d55a1758940ee09377d4f8d26497a3577dc83'])
    expect(uni.filter(t => !pancake.includes(t))).toEqual([toEventSelector(artifactEvent(ARTIFACT_ABIS.v3Pool, 'Swap'))])
  })

  it('has one decoder per topic0, shared by every protocol that emits it', () => {
    for (const s of allSpecs) expect(POOL_EVENTS_BY_TOPIC.get(s.event.topic0)).toBe(s)
    expect(POOL_EVENTS_BY_TOPIC.size).toBe(allSpecs.length)
    expect(PROTOCOLS.sushiswap_v2.events).toBe(PROTOCOLS.uniswap_v2.events)
    expect(PROTOCOLS.pancakeswap_v2.events).toBe(PROTOCOLS.uniswap_v2.events)
  })
})

const word = (n: bigint): string => (n < 0n ? (1n << 256n) + n : n).toString(16).padStart(64, '0')
const addressTopic = (a: string): Hex => `0x${a.slice(2).padStart(64, '0')}`
const POOL = '0x1111111111111111111111111111111111111111'
const SENDER = '0x2222222222222222222222222222222222222222'
const TX = `0x${'ab'.repeat(32)}` as Hex

/** A one-transaction block around synthetic logs. */
function block(logs: Omit<DexLog, 'logIndex' | 'transactionIndex' | 'transactionHash'>[]): DexBlock {
  return {
    number: '0x1',
    hash: `0x${'cd'.repeat(32)}`,
    timestamp: '0x10',
    transactions: [{ hash: TX, from: SENDER, to: POOL }],
    logs: logs.map((l, i) => ({ ...l, logIndex: `0x${i.toString(16)}`, transactionIndex: '0x0', transactionHash: TX })),
  }
}

const v3Swap = spec('uniswap_v3.Swap').event.topic0
const v3SwapData = `0x${[5n, -7n, 1n << 96n, 10n ** 18n, -3n].map(word).join('')}` as Hex
const decodeOne = (logs: Parameters<typeof block>[0]) => decodeDex(scanBlocks(1, [block(logs)]), new Map(), new Map())

describe('strict decoding', () => {
  it('decodes a conforming log', () => {
    const out = decodeOne([{ address: POOL, topics: [v3Swap, addressTopic(SENDER), addressTopic(SENDER)], data: v3SwapData }])
    expect(out.swaps.map(s => [s.amount0, s.amount1, s.tick, s.price])).toEqual([[5n, -7n, -3n, '1']])
  })

  it('ignores an unknown topic0: a fork signature with one more field', () => {
    const fork = toEventSelector('Swap(address,address,int256,int256,uint160,uint128,int24,uint16)')
    const out = decodeOne([
      { address: POOL, topics: [fork, addressTopic(SENDER), addressTopic(SENDER)], data: `${v3SwapData}${word(1n)}` as Hex },
    ])
    expect([out.swaps, out.liquidity, out.pools, out.positions].flat()).toEqual([])
  })

  it('ignores a registered topic0 with another layout or an invalid word', () => {
    const cases: [string, Hex[], Hex][] = [
      ['a topic missing (sender not indexed)', [v3Swap, addressTopic(SENDER)], v3SwapData],
      ['a data word too many', [v3Swap, addressTopic(SENDER), addressTopic(SENDER)], `${v3SwapData}${word(0n)}` as Hex],
      ['a data word too few', [v3Swap, addressTopic(SENDER), addressTopic(SENDER)], v3SwapData.slice(0, -64) as Hex],
      ['dirty address padding', [v3Swap, `0x01${addressTopic(SENDER).slice(4)}`, addressTopic(SENDER)], v3SwapData],
      [
        'an int24 not sign-extended',
        [v3Swap, addressTopic(SENDER), addressTopic(SENDER)],
        `${v3SwapData.slice(0, -64)}${'0'.repeat(58)}fffffd` as Hex,
      ],
      [
        'a uint160 above 2^160',
        [v3Swap, addressTopic(SENDER), addressTopic(SENDER)],
        `0x${[5n, -7n, 1n << 160n, 1n, 1n].map(word).join('')}` as Hex,
      ],
    ]
    for (const [what, topics, data] of cases) expect(decodeOne([{ address: POOL, topics, data }]).swaps, what).toEqual([])
  })

  it('reads manager events only from registered position managers', () => {
    const increase = MANAGER_EVENTS[0].event.topic0
    const data = `0x${[1n, 2n, 3n].map(word).join('')}` as Hex
    expect(decodeOne([{ address: POOL, topics: [increase, `0x${word(9n)}`], data }]).positions).toEqual([])
    expect(decodeOne([{ address: POSITION_MANAGERS[1][0].address, topics: [increase, `0x${word(9n)}`], data }]).positions).toHaveLength(1)
  })
})

describe('factory registry', () => {
  it('holds the init-code hashes of the npm pair and pool bytecode', () => {
    const v2 = keccak256(loadArtifact('UniswapV2Pair').bytecode)
    const v3 = keccak256(loadArtifact('UniswapV3Pool').bytecode)
    for (const chain of [1, 31337]) {
      expect(FACTORIES[chain].find(f => f.protocol === 'uniswap_v2')!.initCodeHash).toBe(v2)
      expect(FACTORIES[chain].find(f => f.protocol === 'uniswap_v3')!.initCodeHash).toBe(v3)
    }
  })

  it('holds the devnet addresses deploy.ts gets: account 0 of the test mnemonic at nonces 4, 5 and 7', () => {
    // deploy.ts: 3 tokens (nonces 0-2), WETH9 3, v2 factory 4, v3 factory 5, v2 router 6, position manager 7.
    const from = mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: 0 }).address
    const at = (nonce: bigint) => getContractAddress({ from, nonce }).toLowerCase()
    expect(FACTORIES[31337].map(f => [f.protocol, f.factory, f.deployer])).toEqual([
      ['uniswap_v2', at(4n), at(4n)],
      ['uniswap_v3', at(5n), at(5n)],
    ])
    expect(POSITION_MANAGERS[31337].map(m => [m.address, m.factory])).toEqual([[at(7n), at(5n)]])
  })

  // Pools everyone knows, with their tokens and fee as the explorers list them.
  const KNOWN_POOLS: [string, string, Hex, Hex, bigint | null, Hex][] = [
    [
      'uniswap_v3',
      'uniswap_v3.Swap',
      '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
      500n,
      '0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640',
    ],
    [
      'uniswap_v3',
      'uniswap_v3.Swap',
      '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
      3000n,
      '0x8ad599c3A0ff1De082011EFDDc58f1908eb6e6D8',
    ],
    [
      'uniswap_v2',
      'uniswap_v2.Swap',
      '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
      null,
      '0xB4e16d0168e52d35CaCD2c6185b44281Ec28C9Dc',
    ],
    [
      'uniswap_v2',
      'uniswap_v2.Swap',
      '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
      '0xdAC17F958D2ee523a2206206994597C13D831ec7',
      null,
      '0x0d4a11d5EEaaC28EC3F61d100daF4d40471f1852',
    ],
    [
      'sushiswap_v2',
      'uniswap_v2.Swap',
      '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
      null,
      '0x397FF1542f962076d0BFE58eA045FfA2d347ACa0',
    ],
  ]

  it('derives well-known mainnet pools by CREATE2, and only from their own key', () => {
    for (const [protocol, id, token0, token1, fee, pool] of KNOWN_POOLS) {
      const key = { token0, token1, fee }
      expect(verifyPool(1, spec(id), pool, key)?.protocol).toBe(protocol)
      expect(verifyPool(1, spec(id), pool, { token0: token1, token1: token0, fee })).toBeNull()
      if (fee !== null) expect(verifyPool(1, spec(id), pool, { ...key, fee: fee === 500n ? 3000n : 500n })).toBeNull()
      // A v3 pool never verifies for a v2 event, nor the other way round.
      expect(verifyPool(1, spec(fee === null ? 'uniswap_v3.Swap' : 'uniswap_v2.Swap'), pool, key)).toBeNull()
    }
  })

  it('derives addresses as the Solidity sources do', () => {
    const token0 = '0x00000000000000000000000000000000000000aa'
    const token1 = '0x00000000000000000000000000000000000000bb'
    for (const entry of FACTORIES[1]) {
      const v3 = PROTOCOLS[entry.protocol].family === 'v3'
      expect(poolAddress(entry, { token0, token1, fee: v3 ? 100n : null })).toBe(
        create2(entry.deployer, token0, token1, v3 ? 100 : null, entry.initCodeHash),
      )
    }
    expect(
      poolAddress(
        FACTORIES[1].find(f => f.protocol === 'uniswap_v3')!,
        { token0, token1, fee: null },
      ),
    ).toBeNull()
  })

  it('keeps a factory-created pool from the same batch: its PoolCreated is the metadata', () => {
    const factory = FACTORIES[1].find(f => f.protocol === 'uniswap_v3')!
    const [token0, token1, fee] = KNOWN_POOLS[0].slice(2, 5) as [Hex, Hex, bigint]
    const pool = KNOWN_POOLS[0][5].toLowerCase() as Hex
    const created = spec('uniswap_v3.PoolCreated').event.topic0
    const data = `0x${word(10n)}${addressTopic(pool).slice(2)}` as Hex
    const scan = scanBlocks(1, [
      block([
        {
          address: factory.factory,
          topics: [created, addressTopic(token0.toLowerCase()), addressTopic(token1.toLowerCase()), `0x${word(fee)}`],
          data,
        },
        { address: pool, topics: [v3Swap, addressTopic(SENDER), addressTopic(SENDER)], data: v3SwapData },
      ]),
    ])
    expect(poolsToResolve(scan)).toEqual([])
    const out = decodeDex(scan, new Map(), new Map())
    expect(out.pools.map(p => [p.protocol, p.pool_verified, p.fee, p.tick_spacing])).toEqual([['uniswap_v3', true, 500n, 10n]])
    expect(out.swaps.map(s => [s.protocol, s.pool_verified, s.fee])).toEqual([['uniswap_v3', true, 500n]])
    // The same event from any other contract creates nothing verified, and its pool's swaps need resolving.
    const spoof = scanBlocks(1, [
      block([
        {
          address: SENDER,
          topics: [created, addressTopic(token0.toLowerCase()), addressTopic(token1.toLowerCase()), `0x${word(fee)}`],
          data,
        },
        { address: pool, topics: [v3Swap, addressTopic(SENDER), addressTopic(SENDER)], data: v3SwapData },
      ]),
    ])
    expect(poolsToResolve(spoof)).toEqual([pool])
    const spoofed = decodeDex(spoof, new Map(), new Map())
    expect(spoofed.pools.map(p => [p.protocol, p.pool_verified])).toEqual([[null, false]])
    expect(spoofed.swaps.map(s => [s.pool_verified, s.token0])).toEqual([[false, null]])
  })
})

import { describe, expect, it } from 'vitest'
import { CHAINS } from '../../src/chains/registry.ts'
import { blocks, logs, transactions } from '../../src/datasets/evm.ts'
import { moveTransactions } from '../../src/datasets/move.ts'
import { ApiError } from '../../src/api/errors.ts'
import { routeHost } from '../../src/api/hosts.ts'
import { MAX_IN_VALUES, MAX_LIMIT, parseBlockBound, parseDataQuery, parseFields, parseLimit } from '../../src/api/params.ts'
import type { DatasetDecl } from '../../src/schema/dataset.ts'

const evm = routeHost('api.example.com', CHAINS)
const parse = (qs: string, dataset: DatasetDecl = transactions, chains = evm.chains) =>
  parseDataQuery(new URLSearchParams(qs), { dataset, chains, allChains: CHAINS })

/** The ApiError a call throws (fails the test when it throws nothing or something else). */
function refusal(f: () => unknown): ApiError {
  try {
    f()
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError)
    return err as ApiError
  }
  throw new Error('expected an ApiError')
}

const hexOf = (b: unknown) => '0x' + Buffer.from(b as Uint8Array).toString('hex')

describe('chains', () => {
  it('accepts the code, the EIP-155 id and the name, in any case', () => {
    for (const v of ['ETH', 'eth', '1', 'Ethereum-Mainnet']) expect(parse(`chains=${v}`).chain.code).toBe('ETH')
  })

  it('is required, one chain only, and lists valid values when unknown', () => {
    expect(refusal(() => parse('')).parameter).toBe('chains')
    const many = refusal(() => parse('chains=ETH,DEVNET'))
    expect(many.message).toMatch(/one chain per request/)
    const unknown = refusal(() => parse('chains=DOGE'))
    expect(unknown.status).toBe(400)
    expect(unknown.message).toContain('ETH')
    expect(unknown.message).toContain('ethereum-mainnet')
  })

  it('refuses a Move chain on the EVM host and says where it is served', () => {
    const err = refusal(() => parse('chains=APTOS'))
    expect(err.message).toContain('aptos.localhost')
  })

  it('resolves an id within the host family: 1 on the Aptos host is Aptos', () => {
    const aptos = routeHost('aptos.localhost:8787', CHAINS)
    expect(aptos.family).toBe('move')
    expect(
      parseDataQuery(new URLSearchParams('chains=1'), { dataset: { ...transactions, family: 'move' }, chains: aptos.chains }).chain.code,
    ).toBe('APTOS')
    expect(
      refusal(() =>
        parseDataQuery(new URLSearchParams('chains=ETH'), { dataset: { ...transactions, family: 'move' }, chains: aptos.chains }),
      ).parameter,
    ).toBe('chains')
  })
})

describe('block range', () => {
  it('takes decimal, 0x-hex and latest, defaulting to latest', () => {
    expect(parseBlockBound('1000', 'from_block')).toBe(1000)
    expect(parseBlockBound('0x3e8', 'from_block')).toBe(1000)
    expect(parseBlockBound('LATEST', 'from_block')).toBe('latest')
    expect(parseBlockBound(undefined, 'from_block')).toBe('latest')
    const q = parse('chains=ETH')
    expect([q.from, q.to]).toEqual(['latest', 'latest'])
    expect(parse('chains=ETH&from_block=0&to_block=0').from).toBe(0)
  })

  it('refuses garbage, negatives, numbers past 2^53 and from > to, naming the parameter', () => {
    for (const v of ['-1', '1.5', 'abc', '', '0x', '9007199254740993'])
      expect(refusal(() => parse(`chains=ETH&to_block=${v}`)).parameter).toBe('to_block')
    const err = refusal(() => parse('chains=ETH&from_block=10&to_block=9'))
    expect(err.status).toBe(400)
    expect(err.parameter).toBe('from_block')
  })

  it('takes from_version/to_version as aliases on Move datasets only', () => {
    const move = { ...transactions, family: 'move' as const }
    const aptos = routeHost('aptos.localhost', CHAINS)
    const q = parseDataQuery(new URLSearchParams('chains=APTOS&from_version=5&to_version=0x10'), { dataset: move, chains: aptos.chains })
    expect([q.from, q.to]).toEqual([5, 16])
    expect(
      refusal(() =>
        parseDataQuery(new URLSearchParams('chains=APTOS&from_version=5&from_block=6'), { dataset: move, chains: aptos.chains }),
      ).code,
    ).toBe('duplicate_parameter')
    expect(refusal(() => parse('chains=ETH&from_version=5')).parameter).toBe('from_version')
  })
})

describe('filters', () => {
  it('normalises numbers: decimal and hex give the same 32 bytes', () => {
    const a = parse('chains=ETH&value__gte=1000000000000000000').predicates[0]
    const b = parse('chains=ETH&value__gte=0xde0b6b3a7640000').predicates[0]
    expect(a.op).toBe('gte')
    expect(a.field.name).toBe('value')
    expect(hexOf(a.values[0])).toBe('0x' + (10n ** 18n).toString(16).padStart(64, '0'))
    expect(a.values).toEqual(b.values)
  })

  it('normalises hex case of addresses', () => {
    const lower = parse('chains=ETH&from__in=0xabcdefabcdefabcdefabcdefabcdefabcdefabcd').predicates[0]
    const upper = parse('chains=ETH&from__in=0xABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCD').predicates[0]
    expect(lower.values).toEqual(upper.values)
    expect(lower.op).toBe('in')
  })

  it('reads %00 as null, alone or in a list', () => {
    const p = parse('chains=ETH&to__in=%00').predicates[0]
    expect(p.values).toEqual([null])
    const mixed = parse(`chains=ETH&to__in=%00,0x${'11'.repeat(20)}`).predicates[0]
    expect(mixed.values[0]).toBe(null)
    expect(hexOf(mixed.values[1])).toBe('0x' + '11'.repeat(20))
  })

  it('refuses null on a field that is never null, and with __gte', () => {
    expect(refusal(() => parse('chains=ETH&from=%00')).parameter).toBe('from')
    expect(refusal(() => parse('chains=ETH&to__gte=%00')).parameter).toBe('to__gte')
  })

  it('builds one AND-ed predicate per parameter, every field of the dataset filterable', () => {
    const q = parse(
      `chains=ETH&from_block=1&to_block=2&address=0x${'ab'.repeat(20)}&topic0__in=0x${'00'.repeat(32)},0x${'ff'.repeat(32)}&removed=false&block_number__lte=0x10`,
      logs,
    )
    expect(q.predicates.map(p => [p.field.name, p.op, p.values.length])).toEqual([
      ['address', 'eq', 1],
      ['topic0', 'in', 2],
      ['removed', 'eq', 1],
      ['block_number', 'lte', 1],
    ])
  })

  it('refuses unknown fields, unknown operators and operators a kind cannot take, naming the parameter', () => {
    expect(refusal(() => parse('chains=ETH&colour=red')).parameter).toBe('colour')
    const op = refusal(() => parse('chains=ETH&value__gt=1'))
    expect(op.parameter).toBe('value__gt')
    expect(op.message).toMatch(/operator/)
    const kind = refusal(() => parse('chains=ETH&removed__gte=true', logs))
    expect(kind.parameter).toBe('removed__gte')
    expect(parse(`chains=ETH&hash__gte=0x${'00'.repeat(32)}`).predicates[0].op).toBe('gte')
    expect(refusal(() => parse('chains=ETH&access_list=1')).parameter).toBe('access_list')
  })

  it('refuses a sign or spaces around a number or hash (a query string turns + into a space)', () => {
    for (const qs of [
      'from_block=+5',
      'from_block=%205',
      'from_block=5%20',
      'limit=+5',
      'nonce=+1',
      `hash=+0x${'00'.repeat(32)}`,
      'to_block=%20latest',
    ]) {
      expect(() => parse(`chains=ETH&${qs}`), qs).toThrow(ApiError)
    }
    expect(parse('chains=ETH&from_block=5&to_block=LATEST').from).toBe(5)
  })

  it('refuses a value outside a closed set, listing the values', () => {
    const move: DatasetDecl = moveTransactions
    const aptos = routeHost('aptos.localhost', CHAINS)
    const err = refusal(() => parse('chains=APTOS&kind__in=user_transaction', move, aptos.chains))
    expect(err.parameter).toBe('kind__in')
    expect(err.message).toMatch(/UserTransaction, BlockMetadataTransaction/)
    expect(parse('chains=APTOS&kind=UserTransaction', move, aptos.chains).predicates[0].values).toEqual(['UserTransaction'])
    expect(refusal(() => parse('chains=ETH&type=7')).message).toMatch(/the values are 0, 1, 2, 3, 4/)
    expect(parse('chains=ETH&type__in=0x2,3').predicates[0].values).toEqual([2n, 3n])
    expect(parse('chains=ETH&type__gte=9').predicates[0].op).toBe('gte')
  })

  it('refuses malformed values with the reason', () => {
    const err = refusal(() => parse('chains=ETH&from=0x1234'))
    expect(err.parameter).toBe('from')
    expect(err.message).toMatch(/20 bytes/)
    expect(refusal(() => parse('chains=ETH&value__gte=')).parameter).toBe('value__gte')
    expect(refusal(() => parse('chains=ETH&value__gte=0x' + 'f'.repeat(65))).parameter).toBe('value__gte')
  })

  it('refuses a list longer than the maximum and a parameter given twice', () => {
    const ok = Array.from({ length: MAX_IN_VALUES }, (_, i) => String(i)).join(',')
    expect(parse(`chains=ETH&nonce__in=${ok}`).predicates[0].values).toHaveLength(MAX_IN_VALUES)
    expect(refusal(() => parse(`chains=ETH&nonce__in=${ok},1`)).code).toBe('too_many_values')
    expect(refusal(() => parse('chains=ETH&nonce=1&nonce=2')).code).toBe('duplicate_parameter')
  })

  it('takes transaction_type__in and type__in as aliases of kind__in on Move datasets', () => {
    const move: DatasetDecl = {
      ...transactions,
      family: 'move',
      fields: [...transactions.fields.filter(f => f.name !== 'type'), { name: 'kind', kind: 'string' }],
    }
    const chains = routeHost('movement.localhost', CHAINS).chains
    for (const name of ['kind__in', 'transaction_type__in', 'type__in']) {
      const q = parseDataQuery(new URLSearchParams(`chains=MOVEMENT&${name}=UserTransaction,BlockMetadataTransaction`), {
        dataset: move,
        chains,
      })
      expect(q.predicates[0].field.name).toBe('kind')
      expect(q.predicates[0].values).toEqual(['UserTransaction', 'BlockMetadataTransaction'])
    }
    expect(
      refusal(() => parseDataQuery(new URLSearchParams('chains=MOVEMENT&kind__in=a&type__in=b'), { dataset: move, chains })).code,
    ).toBe('duplicate_parameter')
  })
})

describe('fields and limit', () => {
  it('defaults to the non-extra fields and takes extras by name, in the order given', () => {
    expect(parseFields(undefined, blocks).map(f => f.name)).toEqual(blocks.fields.filter(f => !f.extra).map(f => f.name))
    expect(parseFields('withdrawals,hash,hash', blocks).map(f => f.name)).toEqual(['withdrawals', 'hash'])
    expect(refusal(() => parseFields('hash,nope', blocks)).parameter).toBe('fields')
    expect(refusal(() => parseFields('', blocks)).parameter).toBe('fields')
  })

  it('takes a positive limit up to the maximum', () => {
    expect(parseLimit('10')).toBe(10)
    expect(parseLimit(String(MAX_LIMIT))).toBe(MAX_LIMIT)
    for (const v of ['0', '-1', 'x', String(MAX_LIMIT + 1), '1e3']) expect(refusal(() => parseLimit(v)).parameter).toBe('limit')
  })

  it('leaves format to negotiation', () => {
    expect(parse('chains=ETH&format=csv').predicates).toEqual([])
  })
})

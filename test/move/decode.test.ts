import { describe, expect, it } from 'vitest'
import { AbiCache, type AbiModule } from '../../src/move/abi-cache.ts'
import { decodeEntryFunction, decodeScript } from '../../src/move/decode.ts'
import { parseTypeArgs } from '../../src/move/payload.ts'
import { encodeArgument } from '../../src/move/value-encode.ts'
import { decodeArgument, typeLayout } from '../../src/move/value-decode.ts'
import { parseType, type TypeDescription } from '../../src/move/type-tags.ts'
import { hexToBytes } from '../../src/schema/hex.ts'
import type { RestEntryFunctionPayload, RestScriptPayload, RestUserTransaction } from '../../src/move/rest-types.ts'
import { recordedAbis, restOf, restTransactions, userVectors } from './data.ts'

const abis = recordedAbis()

/** Renders a type description back to the REST type string (an independent reading of the format). */
function render(d: TypeDescription): string {
  if (typeof d === 'string') return d
  if ('vector' in d) return `vector<${render(d.vector)}>`
  const s = d.struct
  return `${s.address}::${s.module}::${s.name}${s.type_args.length ? `<${s.type_args.map(render).join(', ')}>` : ''}`
}

describe('decodeEntryFunction on the verified vectors', () => {
  const vectors = userVectors().filter(v => v.payload_decoded.EntryFunction && restOf(v))

  for (const v of vectors) {
    it(`decodes ${v.version} ${v.entry_function_id} from the vector's BCS to the node's JSON`, () => {
      const tx = restOf(v) as RestUserTransaction
      const call = tx.payload as RestEntryFunctionPayload
      const ef = v.payload_decoded.EntryFunction!
      const r = decodeEntryFunction(
        call,
        parseTypeArgs(call.type_arguments),
        ef.args_bcs_hex.map(h => hexToBytes(h)),
        abis,
      )
      if (!r.ok) throw new Error(r.reason)
      expect(r.decoded.args.map(a => JSON.parse(a))).toEqual(v.arguments_json)
      expect(r.decoded.type_args.map(t => render(JSON.parse(t)))).toEqual(call.type_arguments)
      const params = (v.abi_params ?? []).filter(p => p !== 'signer' && p !== '&signer')
      expect(r.decoded.args_abi).toHaveLength(params.length)
      params.forEach((p, i) => {
        const layout = JSON.parse(r.decoded.args_abi[i])
        if (/^(u\d+|bool|address)$/.test(p)) expect(layout).toBe(p)
        if (p === '0x1::string::String')
          expect(layout).toEqual({ struct: { type: '0x1::string::String', fields: [{ name: 'bytes', layout: { vector: 'u8' } }] } })
        if (p === 'vector<vector<u8>>') expect(layout).toEqual({ vector: { vector: 'u8' } })
        if (p === '0x1::object::Object<T0>')
          expect(layout).toEqual({
            struct: { type: `0x1::object::Object<${call.type_arguments[0]}>`, fields: [{ name: 'inner', layout: 'address' }] },
          })
      })
    })
  }
})

describe('decodeEntryFunction without a fitting ABI', () => {
  const tx = restTransactions('mainnet').find(t => t.version === '685') as RestUserTransaction
  const call = tx.payload as RestEntryFunctionPayload
  const args = call.arguments.map(a => encodeArgument(parseType('vector<u8>'), a, abis))

  it('returns a reason, not a throw, when the module ABI is missing', () => {
    expect(decodeEntryFunction(call, [], args, new AbiCache())).toEqual({ ok: false, reason: 'ABI of 0x1::stake not available' })
  })

  it('returns a reason when the bytes do not fit the parameter types', () => {
    const r = decodeEntryFunction(
      call,
      [],
      args.map(a => a.subarray(0, a.length - 1)),
      abis,
    )
    expect(r.ok).toBe(false)
  })

  it('returns a reason when the argument count differs from the ABI', () => {
    const r = decodeEntryFunction(call, [], args.slice(1), abis)
    expect(r.ok).toBe(false)
  })
})

describe('decodeScript', () => {
  it('decodes a recorded script call to the node JSON of its arguments', () => {
    const tx = restTransactions('mainnet').find(t => t.version === '145959468') as RestUserTransaction
    const p = tx.payload as RestScriptPayload
    // TransactionArgument BCS: variant 3 (address) + 32 bytes, variant 4 (u8 vector) + bytes.
    const args = p.arguments.map((a, i) => {
      const body = encodeArgument(parseType(i < 2 ? 'address' : 'vector<u8>'), a, abis)
      return Uint8Array.from([i < 2 ? 3 : 4, ...body])
    })
    const r = decodeScript(p, [], args, abis)
    if (!r.ok) throw new Error(r.reason)
    expect(r.decoded.args.map(a => JSON.parse(a))).toEqual(p.arguments)
    expect(r.decoded.args_abi.map(a => JSON.parse(a))).toEqual(['address', 'address', { vector: 'u8' }, { vector: 'u8' }, { vector: 'u8' }])
  })
})

describe('values of generic structs, enums and options', () => {
  const module: AbiModule = {
    address: '0xcafe',
    name: 'm',
    exposed_functions: [],
    structs: [
      {
        name: 'Pair',
        fields: [
          { name: 'left', type: 'T0' },
          { name: 'right', type: 'vector<T1>' },
        ],
      },
      {
        name: 'Shape',
        is_enum: true,
        fields: [],
        variants: [
          { name: 'Circle', fields: [{ name: 'radius', type: 'u64' }] },
          {
            name: 'Square',
            fields: [
              { name: 'side', type: 'u16' },
              { name: 'label', type: '0x1::option::Option<0x1::string::String>' },
            ],
          },
        ],
      },
    ],
  }
  const cache = new AbiCache().add([module])

  it('encodes and decodes back to the same JSON, with the BCS written out by hand', () => {
    const tag = parseType('0xcafe::m::Pair<u8, 0xcafe::m::Shape>')
    const value = {
      left: 7,
      right: [
        { __variant__: 'Circle', radius: '5' },
        { __variant__: 'Square', side: 3, label: { vec: ['hi'] } },
      ],
    }
    const bytes = encodeArgument(tag, value, cache)
    // left u8 7 | 2 shapes | variant 0, u64 5 | variant 1, u16 3, option some, "hi"
    expect(Array.from(bytes)).toEqual([7, 2, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 1, 2, 104, 105])
    expect(decodeArgument(bytes, tag, cache)).toEqual(value)
    expect(typeLayout(tag, cache)).toMatchObject({
      struct: {
        type: '0xcafe::m::Pair<u8, 0xcafe::m::Shape>',
        fields: [
          { name: 'left', layout: 'u8' },
          { name: 'right', layout: { vector: { enum: { type: '0xcafe::m::Shape' } } } },
        ],
      },
    })
  })

  it('refuses a value that does not fit its type, and bytes left over', () => {
    expect(() => encodeArgument(parseType('u8'), 256, cache)).toThrow(/not a u8/)
    expect(() => encodeArgument(parseType('u64'), '0x10', cache)).toThrow(/not a u64/)
    expect(() => encodeArgument(parseType('0xcafe::m::Shape'), { __variant__: 'Triangle' }, cache)).toThrow()
    expect(() => decodeArgument(Uint8Array.from([1, 2]), parseType('u8'), cache)).toThrow(/1 bytes left/)
  })
})

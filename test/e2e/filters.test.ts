/**
 * Real data end to end: the recorded mainnet blocks 17000000, 18000000 and
 * 18500000, ingested from the replay node, queried through the app over the range
 * 17000000-18500000 (mostly gaps) with every filter of every field, and each answer
 * compared field by field, in order, with the plain reference computed from the
 * same JSON (test/e2e/reference.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EVM_DATASETS } from '../../src/datasets/evm.ts'
import { differences, filterCases, type FilterCase } from './cases.ts'
import { fromJsonLines, fromJson } from './decode.ts'
import { apiGet, FROM, ingestRecorded, SERVED, TO, type RecordedLake } from './lake.ts'
import { defaultFields, project, referenceRecords, SPEC_FIELDS, type DatasetName, type SpecRecord } from './reference.ts'

const DATASETS: DatasetName[] = ['blocks', 'transactions', 'logs']

let lake: RecordedLake
let reference: Record<DatasetName, SpecRecord[]>

beforeAll(async () => {
  reference = referenceRecords()
  lake = await ingestRecorded()
}, 120_000)
afterAll(() => lake?.remove())

const range = `chains=ETH&from_block=${FROM}&to_block=${TO}`

/** Runs one case; returns what went wrong, each line naming the request. */
async function check(c: FilterCase): Promise<string[]> {
  const what = `${c.dataset}?${c.query}`
  const res = await apiGet(lake, `${c.dataset}?${range}&format=json_stream&${c.query}`)
  if ('refused' in c.expect) {
    const body = await res.text()
    if (res.status !== 400) return [`${what}: status ${res.status}, expected 400 (${body.slice(0, 200)})`]
    const parameter = JSON.parse(body).error?.parameter
    return parameter === c.expect.refused ? [] : [`${what}: the 400 names ${JSON.stringify(parameter)}, expected ${c.expect.refused}`]
  }
  const body = new Uint8Array(await res.arrayBuffer())
  if (res.status !== 200) return [`${what}: status ${res.status}, expected 200 (${Buffer.from(body).toString().slice(0, 200)})`]
  const problems: string[] = []
  const served = res.headers.get('x-blocks-served')
  if (served !== SERVED) problems.push(`${what}: X-Blocks-Served is ${served}, expected ${SERVED}`)
  const fields = defaultFields(c.dataset)
  let got: SpecRecord[]
  try {
    got = fromJsonLines(body, fields)
  } catch (err) {
    return [...problems, `${what}: ${(err as Error).message}`]
  }
  return [
    ...problems,
    ...differences(
      what,
      got,
      c.expect.records.map(r => project(r, fields)),
    ),
  ]
}

describe('recorded mainnet through the API', () => {
  it('has a reference for every declared field, in the declared order', () => {
    for (const d of EVM_DATASETS) {
      expect(
        SPEC_FIELDS[d.name as DatasetName].map(x => [x.name, x.nullable === true, x.extra === true]),
        d.name,
      ).toEqual(d.fields.map(x => [x.name, x.nullable === true, x.extra === true]))
    }
  })

  it('has the recorded counts (data README: 102 + 94 + 157 transactions, 237 + 291 + 408 logs, one deployment)', () => {
    expect(reference.blocks).toHaveLength(3)
    expect(reference.transactions).toHaveLength(102 + 94 + 157)
    expect(reference.logs).toHaveLength(237 + 291 + 408)
    expect(reference.transactions.filter(t => t.to === null)).toHaveLength(1)
  })

  it('serves every record, extra fields included, over a range with gaps; the default is the spec record', async () => {
    const problems: string[] = []
    for (const dataset of DATASETS) {
      const all = SPEC_FIELDS[dataset]
      const full = await apiGet(lake, `${dataset}?${range}&format=json_stream&fields=${all.map(x => x.name).join(',')}`)
      expect(full.status, dataset).toBe(200)
      expect(full.headers.get('x-block-range'), dataset).toBe(`${FROM}-${TO}`)
      expect(full.headers.get('x-blocks-served'), dataset).toBe(SERVED)
      problems.push(
        ...differences(`${dataset} all fields`, fromJsonLines(new Uint8Array(await full.arrayBuffer()), all), reference[dataset]),
      )
      const plain = await apiGet(lake, `${dataset}?${range}&format=json_stream`)
      const fields = defaultFields(dataset)
      problems.push(
        ...differences(
          `${dataset} default fields`,
          fromJsonLines(new Uint8Array(await plain.arrayBuffer()), fields),
          reference[dataset].map(r => project(r, fields)),
        ),
      )
    }
    expect(problems).toEqual([])
  })

  it('refuses format=json over the whole range (413) and serves it block by block', async () => {
    const res = await apiGet(lake, `logs?${range}&format=json`)
    expect(res.status).toBe(413)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/json_stream/)
    const fields = defaultFields('logs')
    for (const n of [FROM, 18000000, TO]) {
      const one = await apiGet(lake, `logs?chains=ETH&from_block=${n}&to_block=0x${n.toString(16)}&format=json`)
      expect(one.headers.get('x-blocks-served')).toBe(`${n}-${n}`)
      const want = reference.logs.filter(r => r.block_number === '0x' + n.toString(16)).map(r => project(r, fields))
      expect(differences(`logs of ${n}`, fromJson(new Uint8Array(await one.arrayBuffer()), fields), want)).toEqual([])
    }
  })

  for (const dataset of DATASETS) {
    it(`${dataset}: every filter of every field agrees with the reference`, async () => {
      const cases = filterCases(dataset, reference[dataset])
      // Not vacuous: most cases select some records but not all of them.
      const selective = cases.filter(
        c => 'records' in c.expect && c.expect.records.length > 0 && c.expect.records.length < reference[dataset].length,
      )
      expect(selective.length).toBeGreaterThan(cases.length / 3)
      const problems: string[] = []
      for (const c of cases) problems.push(...(await check(c)))
      expect(problems, `${problems.length} problems in ${cases.length} cases`).toEqual([])
    })
  }

  it("the cases include the spec's examples: to__in=%00 gives the deployment, topic3__in=%00 the logs without topic3", () => {
    const queries = new Map(DATASETS.flatMap(d => filterCases(d, reference[d]).map(c => [`${d}?${c.query}`, c] as const)))
    const deployments = queries.get('transactions?to__in=%00')!.expect as { records: SpecRecord[] }
    expect(deployments.records.map(r => r.contract_address === null)).toEqual([false])
    const noTopic3 = queries.get('logs?topic3__in=%00')!.expect as { records: SpecRecord[] }
    expect(noTopic3.records.length).toBeGreaterThan(0)
    expect(noTopic3.records.length).toBeLessThan(reference.logs.length)
    const valueGte = [...queries.keys()].filter(k => k.startsWith('transactions?value__gte=') && !k.includes('&'))
    expect(valueGte.some(k => /=\d+$/.test(k)) && valueGte.some(k => /=0x[0-9a-f]+$/.test(k))).toBe(true)
  })
})

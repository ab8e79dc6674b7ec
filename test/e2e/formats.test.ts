/**
 * Real data in every format: the same queries on the recorded mainnet lake as
 * json, json_stream, csv and arrow give the same records (Arrow decoded with
 * apache-arrow, its types mapped back to spec text as documented in
 * test/e2e/decode.ts), equal to the reference; and DuckDB, a third-party reader,
 * reads the CSV output and agrees with the JSON output.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { differences } from './cases.ts'
import { fromCells, READERS, type FormatName } from './decode.ts'
import { apiGet, FROM, ingestRecorded, SERVED, TO, type RecordedLake } from './lake.ts'
import {
  defaultFields,
  matches,
  project,
  referenceRecords,
  RECORDED_BLOCKS,
  SPEC_FIELDS,
  type DatasetName,
  type SpecField,
  type SpecRecord,
} from './reference.ts'

const DATASETS: DatasetName[] = ['blocks', 'transactions', 'logs']
const FORMATS: FormatName[] = ['json', 'json_stream', 'csv', 'arrow']
/** keccak256("Transfer(address,address,uint256)"): the ERC-20 and ERC-721 transfer event (ERC-721 indexes the token id: topic3). */
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'

let lake: RecordedLake
let reference: Record<DatasetName, SpecRecord[]>
let dir: string
let duck: DuckDBConnection

beforeAll(async () => {
  reference = referenceRecords()
  lake = await ingestRecorded()
  dir = await mkdtemp(join(tmpdir(), 'e2e-duckdb-'))
  duck = await (await DuckDBInstance.create(':memory:')).connect()
}, 120_000)
afterAll(async () => {
  duck?.closeSync()
  await lake?.remove()
  if (dir) await rm(dir, { recursive: true, force: true })
})

const field = (dataset: DatasetName, name: string): SpecField => SPEC_FIELDS[dataset].find(x => x.name === name)!

interface Query {
  dataset: DatasetName
  /** Query-string part after chains and the range. */
  params: string
  fields: readonly SpecField[]
  want: SpecRecord[]
}

/** Per dataset: every field of a json-sized range around each stored block, and a selective filter. */
function queries(): Query[] {
  const out: Query[] = []
  for (const dataset of DATASETS) {
    const all = SPEC_FIELDS[dataset]
    for (const n of RECORDED_BLOCKS) {
      out.push({
        dataset,
        params: `from_block=${n - 5000}&to_block=${n + 4999}&fields=${all.map(x => x.name).join(',')}`,
        fields: all,
        want: reference[dataset].filter(r => r.block_number === '0x' + n.toString(16)),
      })
    }
  }
  const logs = reference.logs.filter(r => r.block_number === '0x112a880')
  out.push({
    dataset: 'logs',
    params: `from_block=18000000&to_block=18000000&topic0=${TRANSFER}&topic3__in=%00`,
    fields: defaultFields('logs'),
    want: logs.filter(r => r.topic0 === TRANSFER && r.topic3 === null).map(r => project(r, defaultFields('logs'))),
  })
  const value = field('transactions', 'value')
  const to = field('transactions', 'to')
  out.push({
    dataset: 'transactions',
    params: 'from_block=18000000&to_block=18000000&value__gte=1000000000000000000&fields=hash,value,to,access_list,status',
    fields: ['hash', 'value', 'to', 'access_list', 'status'].map(n => field('transactions', n)),
    want: reference.transactions
      .filter(r => r.block_number === '0x112a880' && matches(value, 'gte', ['1000000000000000000'], r))
      .map(r =>
        project(
          r,
          ['hash', 'value', 'to', 'access_list', 'status'].map(n => field('transactions', n)),
        ),
      ),
  })
  out.push({
    dataset: 'transactions',
    params: 'from_block=17995001&to_block=18004999&to__in=%00',
    fields: defaultFields('transactions'),
    want: reference.transactions.filter(r => matches(to, 'in', ['\u0000'], r)).map(r => project(r, defaultFields('transactions'))),
  })
  return out
}

describe('recorded mainnet in every format', () => {
  it('gives the same records, equal to the reference, as json, json_stream, csv and arrow', async () => {
    const problems: string[] = []
    const cases = queries()
    expect(cases.every(q => q.want.length > 0)).toBe(true)
    for (const q of cases) {
      for (const format of FORMATS) {
        const what = `${q.dataset}?${q.params}&format=${format}`
        const res = await apiGet(lake, `${q.dataset}?chains=ETH&${q.params}&format=${format}`)
        const bytes = new Uint8Array(await res.arrayBuffer())
        if (res.status !== 200) {
          problems.push(`${what}: status ${res.status} ${Buffer.from(bytes).toString().slice(0, 200)}`)
          continue
        }
        try {
          problems.push(...differences(what, READERS[format](bytes, q.fields), q.want))
        } catch (err) {
          problems.push(`${what}: ${(err as Error).message}`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  it('labels each format with its media type', async () => {
    const types: Record<FormatName, RegExp> = {
      json: /^application\/json/,
      json_stream: /^application\/jsonstream/,
      csv: /^text\/csv/,
      arrow: /^application\/vnd\.apache\.arrow\.stream/,
    }
    for (const format of FORMATS) {
      const res = await apiGet(lake, `blocks?chains=ETH&from_block=18000000&to_block=18000000&format=${format}`)
      expect(res.headers.get('content-type'), format).toMatch(types[format])
      await res.arrayBuffer()
    }
  })
})

describe('DuckDB reads the CSV output', () => {
  for (const dataset of DATASETS) {
    it(`${dataset}: every field over the whole range, equal to the JSON output`, async () => {
      const fields = SPEC_FIELDS[dataset]
      const query = `${dataset}?chains=ETH&from_block=${FROM}&to_block=${TO}&fields=${fields.map(x => x.name).join(',')}`
      const csv = await apiGet(lake, `${query}&format=csv`)
      expect(csv.status).toBe(200)
      expect(csv.headers.get('x-blocks-served')).toBe(SERVED)
      const path = join(dir, `${dataset}.csv`)
      await writeFile(path, new Uint8Array(await csv.arrayBuffer()))
      // Every column as text; an unquoted empty cell is NULL, a quoted one an empty string.
      const result = await duck.runAndReadAll(
        `SELECT * FROM read_csv('${path}', header = true, all_varchar = true, delim = ',', quote = '"', escape = '"', allow_quoted_nulls = false)`,
      )
      expect(result.columnNames()).toEqual(fields.map(x => x.name))
      const fromDuck = result.getRows().map(row => fromCells(row as (string | null)[], fields))

      const json = await apiGet(lake, `${query}&format=json_stream`)
      const fromApi = READERS.json_stream(new Uint8Array(await json.arrayBuffer()), fields)
      expect(differences(`DuckDB vs json_stream of ${dataset}`, fromDuck, fromApi)).toEqual([])
      expect(differences(`DuckDB vs reference of ${dataset}`, fromDuck, reference[dataset])).toEqual([])
    })
  }
})

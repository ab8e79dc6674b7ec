/**
 * A third-party reader agrees with the encoders: DuckDB reads the CSV (and the
 * JSON lines) output from a temporary file and gets the values back. Arrow IPC is
 * checked with apache-arrow instead: DuckDB needs its arrow extension for that, which
 * is not bundled and cannot be fetched here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { encodeRows } from '../../src/format/encode.ts'
import { logs } from '../../src/datasets/evm.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { ALL_KINDS, NASTY_STRINGS, makeBatches, packed, type PlainBatch } from './cases.ts'
import { collect, fromArray } from './decode.ts'

let dir: string
let db: DuckDBConnection

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'format-duckdb-'))
  db = await (await DuckDBInstance.create(':memory:')).connect()
})

afterAll(async () => {
  db?.closeSync()
  await rm(dir, { recursive: true, force: true })
})

async function writeOutput(
  name: string,
  format: 'csv' | 'json_stream' | 'arrow',
  fields: readonly FieldDecl[],
  batches: PlainBatch[],
): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, await collect(encodeRows(format, fields, fromArray(batches.map(b => packed(fields, b))))))
  return path
}

/** Every cell as KINDS toText gives it, null kept. */
function expectedCells(fields: readonly FieldDecl[], batches: PlainBatch[]): (string | null)[][] {
  return batches.flatMap(b =>
    Array.from({ length: b.length }, (_, i) =>
      fields.map(f => {
        const v = b.columns[f.name][i]
        return v === null ? null : KINDS[f.kind].toText(v)
      }),
    ),
  )
}

const CSV_CASES: { name: string; fields: readonly FieldDecl[]; batches: PlainBatch[] }[] = [
  { name: 'every kind with nulls', fields: ALL_KINDS, batches: makeBatches(ALL_KINDS, [40, 0, 26], 11) },
  { name: 'logs', fields: logs.fields, batches: makeBatches(logs.fields, [200, 100], 12) },
  {
    name: 'strings needing escaping',
    fields: [
      { name: 'text', kind: 'string' },
      { name: 'note', kind: 'string', nullable: true },
    ],
    batches: [{ length: NASTY_STRINGS.length, columns: { text: NASTY_STRINGS, note: NASTY_STRINGS.map((s, i) => (i % 3 ? s : null)) } }],
  },
]

describe('DuckDB reads the output', () => {
  for (const c of CSV_CASES) {
    it(`csv: ${c.name}`, async () => {
      const path = await writeOutput(`${c.name}.csv`, 'csv', c.fields, c.batches)
      // Quoted empty cells are empty strings, unquoted ones NULL, as the encoder writes them.
      const result = await db.runAndReadAll(
        `SELECT * FROM read_csv('${path}', header = true, all_varchar = true, delim = ',', quote = '"', escape = '"', allow_quoted_nulls = false)`,
      )
      expect(result.columnNames()).toEqual(c.fields.map(f => f.name))
      expect(result.getRows()).toEqual(expectedCells(c.fields, c.batches))
    })
  }

  it('json_stream: strings and row count', async () => {
    const fields: FieldDecl[] = [
      { name: 'text', kind: 'string' },
      { name: 'n', kind: 'u64int' },
    ]
    const batches: PlainBatch[] = [
      { length: NASTY_STRINGS.length, columns: { text: NASTY_STRINGS, n: NASTY_STRINGS.map((_, i) => BigInt(i)) } },
    ]
    const path = await writeOutput('strings.jsonl', 'json_stream', fields, batches)
    const result = await db.runAndReadAll(
      `SELECT text, n FROM read_json('${path}', format = 'newline_delimited', columns = {text: 'VARCHAR', n: 'UBIGINT'}) ORDER BY n`,
    )
    expect(result.getRows()).toEqual(NASTY_STRINGS.map((s, i) => [s, BigInt(i)]))
  })
})

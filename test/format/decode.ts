/**
 * Test side of the encoder contract: reads each format back into one canonical
 * record shape, and computes the records a batch list should give, independently
 * of the encoders (hex via Buffer, numbers via BigInt).
 */
import { tableFromIPC } from 'apache-arrow'
import type { FieldDecl } from '../../src/schema/dataset.ts'
import { bytesToInt, type Kind, type StoredValue } from '../../src/schema/kinds.ts'
import type { Format } from '../../src/format/encode.ts'
import type { PlainBatch } from './cases.ts'
import type { RowBatch } from '../../src/columns/batch.ts'

/**
 * A record as every format must give it back: u64int as exact decimal text,
 * u64hex and binary kinds as their 0x text, bool, string, the parsed value of a
 * json field, null.
 */
export type Canonical = Record<string, unknown>

const hex = (b: Uint8Array) => '0x' + Buffer.from(b).toString('hex')

/** The canonical value of a stored value. */
export function canonicalOf(kind: Kind, v: StoredValue | null): unknown {
  if (v === null) return null
  switch (kind) {
    case 'u64int':
      return (v as bigint).toString()
    case 'u64hex':
      return '0x' + (v as bigint).toString(16)
    case 'u256hex':
      return '0x' + BigInt(hex(v as Uint8Array)).toString(16)
    case 'int':
      return bytesToInt(v as Uint8Array).toString()
    case 'u256pad':
    case 'hash':
    case 'address':
    case 'address32':
    case 'bytes':
      return hex(v as Uint8Array)
    case 'json':
      return JSON.parse(v as string)
    default:
      return v
  }
}

/** The records a list of batches should encode to. */
export function expectedRecords(fields: readonly FieldDecl[], batches: readonly PlainBatch[]): Canonical[] {
  const out: Canonical[] = []
  for (const b of batches) {
    for (let i = 0; i < b.length; i++) {
      out.push(Object.fromEntries(fields.map(f => [f.name, canonicalOf(f.kind, b.columns[f.name][i])])))
    }
  }
  return out
}

/** All bytes of a stream; rejects when the stream errors. */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer())
}

/** The chunks read before a stream ended or failed, and its error if it failed. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<{ chunks: Uint8Array[]; error?: unknown }> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  try {
    for (;;) {
      const r = await reader.read()
      if (r.done) return { chunks }
      chunks.push(r.value)
    }
  } catch (error) {
    return { chunks, error }
  }
}

export const concat = (chunks: Uint8Array[]) => Buffer.concat(chunks)

/** JSON text of one record object, u64int numbers kept exact through `JSON.parse` source access. */
function parseRecordJson(text: string, fields: readonly FieldDecl[]): unknown {
  const exact = new Set(fields.filter(f => f.kind === 'u64int').map(f => f.name))
  const names = fields.map(f => f.name).join(',')
  return JSON.parse(text, function (this: Record<string, unknown>, key, value, context?: { source?: string }) {
    if (exact.has(key) && typeof value === 'number' && Object.keys(this).join(',') === names) return context?.source
    return value
  })
}

function checkKeys(records: unknown[], fields: readonly FieldDecl[]): Canonical[] {
  for (const r of records) {
    if (Object.keys(r as object).join(',') !== fields.map(f => f.name).join(',')) {
      throw new Error(`record keys ${Object.keys(r as object)} are not the fields in order`)
    }
  }
  return records as Canonical[]
}

export function decodeJson(bytes: Uint8Array, fields: readonly FieldDecl[]): Canonical[] {
  const parsed = parseRecordJson(Buffer.from(bytes).toString('utf8'), fields)
  if (!Array.isArray(parsed)) throw new Error('json output is not an array')
  return checkKeys(parsed, fields)
}

export function decodeJsonl(bytes: Uint8Array, fields: readonly FieldDecl[]): Canonical[] {
  const text = Buffer.from(bytes).toString('utf8')
  if (text === '') return []
  if (!text.endsWith('\n')) throw new Error('json lines output does not end with a newline')
  return checkKeys(
    text
      .slice(0, -1)
      .split('\n')
      .map((line: string) => parseRecordJson(line, fields)),
    fields,
  )
}

export interface CsvCell {
  text: string
  quoted: boolean
}

/** A strict RFC 4180 reader with `\n` line ends; rejects a bare CR and an unterminated last line. */
export function parseCsv(text: string): CsvCell[][] {
  const rows: CsvCell[][] = []
  let row: CsvCell[] = []
  let cell = ''
  let quoted = false
  let inQuotes = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inQuotes) {
      if (c !== '"') cell += c
      else if (text[i + 1] === '"') {
        cell += '"'
        i++
      } else inQuotes = false
    } else if (c === '"') {
      if (cell !== '' || quoted) throw new Error(`quote inside an unquoted cell at ${i}`)
      inQuotes = quoted = true
    } else if (c === ',' || c === '\n') {
      row.push({ text: cell, quoted })
      cell = ''
      quoted = false
      if (c === '\n') {
        rows.push(row)
        row = []
      }
    } else if (c === '\r') {
      throw new Error(`bare CR at ${i}`)
    } else {
      if (quoted) throw new Error(`text after a closing quote at ${i}`)
      cell += c
    }
  }
  if (inQuotes || cell !== '' || quoted || row.length > 0) throw new Error('unterminated last CSV line')
  return rows
}

function csvValue(kind: Kind, cell: CsvCell): unknown {
  if (cell.text === '' && !cell.quoted) return null
  if (kind === 'bool') {
    if (cell.text !== 'true' && cell.text !== 'false') throw new Error(`bad bool cell ${cell.text}`)
    return cell.text === 'true'
  }
  if (kind === 'json') return JSON.parse(cell.text)
  return cell.text
}

export function decodeCsv(bytes: Uint8Array, fields: readonly FieldDecl[]): Canonical[] {
  const [header, ...rows] = parseCsv(Buffer.from(bytes).toString('utf8'))
  if (header.map(c => c.text).join(',') !== fields.map(f => f.name).join(',')) throw new Error(`bad CSV header ${header.map(c => c.text)}`)
  return rows.map(cells => {
    if (cells.length !== fields.length) throw new Error(`CSV row has ${cells.length} cells`)
    return Object.fromEntries(fields.map((f, j) => [f.name, csvValue(f.kind, cells[j])]))
  })
}

export function decodeArrow(bytes: Uint8Array, fields: readonly FieldDecl[]): Canonical[] {
  const table = tableFromIPC(bytes)
  const columns = fields.map(f => {
    const col = table.getChild(f.name)
    if (!col) throw new Error(`arrow output has no column ${f.name}`)
    return col
  })
  const out: Canonical[] = []
  for (let i = 0; i < table.numRows; i++) {
    out.push(Object.fromEntries(fields.map((f, j) => [f.name, arrowValue(f.kind, columns[j].get(i))])))
  }
  return out
}

/**
 * A decimal256 cell is a view of 8 little-endian 32-bit words (two's complement); read
 * here because apache-arrow's own decimal text is wrong beyond 128 bits.
 */
function arrowValue(kind: Kind, v: unknown): unknown {
  if (kind !== 'int' || v === null) return canonicalOf(kind, v as StoredValue | null)
  const words = v as Uint32Array
  let n = 0n
  for (let k = words.length - 1; k >= 0; k--) n = (n << 32n) | BigInt(words[k])
  return BigInt.asIntN(256, n).toString()
}

export const DECODERS: Record<Format, (bytes: Uint8Array, fields: readonly FieldDecl[]) => Canonical[]> = {
  json: decodeJson,
  json_stream: decodeJsonl,
  csv: decodeCsv,
  arrow: decodeArrow,
}

export async function* fromArray(batches: readonly RowBatch[]): AsyncGenerator<RowBatch> {
  for (const b of batches) yield b
}

/**
 * Arrow IPC stream output: a schema message built from the field declarations
 * (never inferred from values), one record batch message per RowBatch, then the
 * end-of-stream marker.
 *
 * Production workerd forbids `new Function`, which apache-arrow's builders
 * (`makeBuilder`, `vectorFromArray`, `Builder.new`) call to make their null
 * checks. So columns are laid out here, buffer by buffer, and wrapped with
 * `makeData`; messages are framed here with the library's flatbuffer encoder
 * (`Message.encode`) and body assembler (`VectorAssembler`), none of which build
 * functions at run time. Subpath imports keep the rest of the library out of the
 * Worker bundle.
 */
import { makeData, type Data } from 'apache-arrow/data'
import { Binary, Bool, FixedSizeBinary, Struct, Uint64, Utf8, type DataType } from 'apache-arrow/type'
import { Field, Schema } from 'apache-arrow/schema'
import { RecordBatch } from 'apache-arrow/recordbatch'
import { Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message'
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler'
import type { RowBatch } from '../query/types.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import { KINDS, type Kind, type StoredValue } from '../schema/kinds.ts'
import { BatchShapeError, ByteSink, columnOfBatch, requiredNull, type BatchEncoder } from './sink.ts'

type Column = (StoredValue | null)[]

/** The Arrow type of each kind; fixed-width kinds take their width from KINDS. */
function arrowTypeOf(kind: Kind): DataType {
  if (kind === 'u64hex' || kind === 'u64int') return new Uint64()
  const width = KINDS[kind].width
  if (width !== undefined) return new FixedSizeBinary(width)
  if (kind === 'bytes') return new Binary()
  if (kind === 'bool') return new Bool()
  return new Utf8() // string, and json as its JSON text
}

/** The Arrow schema of an output field list, nullability as declared. */
export function arrowSchemaOf(fields: readonly FieldDecl[]): Schema {
  return new Schema(fields.map(f => new Field(f.name, arrowTypeOf(f.kind), f.nullable === true)))
}

/** Validity bitmap of a column: set bits are non-null rows. Empty when no row is null. */
interface Validity {
  bitmap: Uint8Array | undefined
  nullCount: number
}

function validityOf(field: FieldDecl, col: Column, n: number): Validity {
  let nulls = 0
  for (let i = 0; i < n; i++) if (col[i] === null) nulls++
  if (nulls === 0) return { bitmap: undefined, nullCount: 0 }
  if (!field.nullable) throw requiredNull(field.name)
  const bitmap = new Uint8Array((n + 7) >> 3)
  for (let i = 0; i < n; i++) if (col[i] !== null) bitmap[i >> 3] |= 1 << (i & 7)
  return { bitmap, nullCount: nulls }
}

function uint64Data(type: DataType, col: Column, n: number, v: Validity): Data {
  const data = new BigUint64Array(n)
  for (let i = 0; i < n; i++) {
    const x = col[i]
    if (x !== null) data[i] = x as bigint
  }
  return makeData({ type: type as Uint64, length: n, nullCount: v.nullCount, nullBitmap: v.bitmap, data })
}

function fixedData(field: FieldDecl, type: FixedSizeBinary, col: Column, n: number, v: Validity): Data {
  const w = type.byteWidth
  const data = new Uint8Array(n * w)
  for (let i = 0, at = 0; i < n; i++, at += w) {
    const x = col[i] as Uint8Array | null
    if (x === null) continue
    if (x.length !== w) throw new BatchShapeError(`field "${field.name}" holds ${x.length} bytes, expected ${w}`)
    if (w > 32) {
      data.set(x, at)
      continue
    }
    for (let k = 0; k < w; k++) data[at + k] = x[k]
  }
  return makeData({ type, length: n, nullCount: v.nullCount, nullBitmap: v.bitmap, data })
}

function binaryData(type: Binary, col: Column, n: number, v: Validity): Data {
  const valueOffsets = new Int32Array(n + 1)
  let total = 0
  for (let i = 0; i < n; i++) {
    const x = col[i] as Uint8Array | null
    if (x !== null) total += x.length
    if (total > 0x7fffffff) throw new BatchShapeError('binary column over 2 GiB in one batch')
    valueOffsets[i + 1] = total
  }
  const data = new Uint8Array(total)
  for (let i = 0; i < n; i++) {
    const x = col[i] as Uint8Array | null
    if (x !== null) data.set(x, valueOffsets[i])
  }
  return makeData({ type, length: n, nullCount: v.nullCount, nullBitmap: v.bitmap, valueOffsets, data })
}

const utf8 = new TextEncoder()

function utf8Data(type: Utf8, col: Column, n: number, v: Validity): Data {
  const valueOffsets = new Int32Array(n + 1)
  let chars = 0
  for (let i = 0; i < n; i++) {
    const x = col[i] as string | null
    if (x !== null) chars += x.length
  }
  let data = new Uint8Array(chars)
  let p = 0
  for (let i = 0; i < n; i++) {
    const s = col[i] as string | null
    if (s !== null) {
      if (data.length - p < 3 * s.length) {
        const grown = new Uint8Array(Math.max(2 * data.length, p + 3 * s.length))
        grown.set(data.subarray(0, p))
        data = grown
      }
      for (let k = 0; k < s.length; k++) {
        const c = s.charCodeAt(k)
        if (c >= 0x80) {
          p += utf8.encodeInto(s.slice(k), data.subarray(p)).written
          break
        }
        data[p++] = c
      }
    }
    if (p > 0x7fffffff) throw new BatchShapeError('string column over 2 GiB in one batch')
    valueOffsets[i + 1] = p
  }
  return makeData({ type, length: n, nullCount: v.nullCount, nullBitmap: v.bitmap, valueOffsets, data: data.subarray(0, p) })
}

function boolData(type: Bool, col: Column, n: number, v: Validity): Data {
  const data = new Uint8Array((n + 7) >> 3)
  for (let i = 0; i < n; i++) if (col[i] === true) data[i >> 3] |= 1 << (i & 7)
  return makeData({ type, length: n, nullCount: v.nullCount, nullBitmap: v.bitmap, data })
}

/** One column of a batch as Arrow data of the field's declared type. */
function columnData(field: FieldDecl, type: DataType, col: Column, n: number): Data {
  const v = validityOf(field, col, n)
  if (type instanceof Uint64) return uint64Data(type, col, n, v)
  if (type instanceof FixedSizeBinary) return fixedData(field, type, col, n, v)
  if (type instanceof Binary) return binaryData(type, col, n, v)
  if (type instanceof Bool) return boolData(type, col, n, v)
  return utf8Data(type as Utf8, col, n, v)
}

/** A RowBatch as an Arrow record batch of the given schema. */
function arrowRecordBatch(schema: Schema, fields: readonly FieldDecl[], batch: RowBatch): RecordBatch {
  const n = batch.length
  const children = fields.map((f, j) => columnData(f, schema.fields[j].type, columnOfBatch(batch, f.name), n))
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children }))
}

/**
 * An encapsulated IPC message: continuation marker, metadata length, flatbuffer
 * metadata padded to 8 bytes, then the body (zero-filled padding throughout).
 */
function framedMessage(metadata: Uint8Array, bodyLength: number): { bytes: Uint8Array; bodyStart: number } {
  const bodyStart = (8 + metadata.length + 7) & ~7
  const bytes = new Uint8Array(bodyStart + bodyLength)
  const view = new DataView(bytes.buffer)
  view.setInt32(0, -1, true)
  view.setInt32(4, bodyStart - 8, true)
  bytes.set(metadata, 8)
  return { bytes, bodyStart }
}

/** The IPC schema message of a schema. */
function schemaMessage(schema: Schema): Uint8Array {
  return framedMessage(Message.encode(Message.from(schema)), 0).bytes
}

/** The IPC record batch message of a batch, body included, in one buffer. */
function recordBatchMessage(batch: RecordBatch): Uint8Array {
  const body = VectorAssembler.assemble(batch)
  const header = new RecordBatchHeader(batch.numRows, body.nodes, body.bufferRegions, null, body.variadicBufferCounts)
  const { bytes, bodyStart } = framedMessage(Message.encode(Message.from(header, body.byteLength)), body.byteLength)
  body.buffers.forEach((buf, k) => {
    bytes.set(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), bodyStart + body.bufferRegions[k].offset)
  })
  return bytes
}

/** Continuation marker and a zero length: the end of an IPC stream. */
const END_OF_STREAM = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)

/** Encoder of the `arrow` format (Arrow IPC stream). */
export function arrowEncoder(fields: readonly FieldDecl[]): BatchEncoder {
  const schema = arrowSchemaOf(fields)
  const sink = new ByteSink()
  return {
    open: () => {
      sink.bytes(schemaMessage(schema))
      return sink.take()
    },
    batch: batch => {
      sink.bytes(recordBatchMessage(arrowRecordBatch(schema, fields, batch)))
      return sink.flush()
    },
    close: () => {
      sink.bytes(END_OF_STREAM)
      return sink.flush()
    },
  }
}

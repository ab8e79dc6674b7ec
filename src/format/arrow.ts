/**
 * Arrow IPC stream output: a schema message built from the field declarations
 * (never inferred from values), one record batch message per RowBatch, then the
 * end-of-stream marker.
 *
 * Production workerd forbids `new Function`, which apache-arrow's builders
 * (`makeBuilder`, `vectorFromArray`, `Builder.new`) call to make their null
 * checks. So columns are wrapped with `makeData` here, buffer by buffer; the
 * batch's vectors already have Arrow's layout, so their buffers are used as they
 * are (only booleans and validity are packed to bitmaps). Messages are framed
 * here with the library's flatbuffer encoder (`Message.encode`) and body
 * assembler (`VectorAssembler`), none of which build functions at run time.
 * Subpath imports keep the rest of the library out of the Worker bundle.
 */
import { makeData, type Data } from 'apache-arrow/data'
import { Binary, Bool, Decimal, FixedSizeBinary, Struct, Uint64, Utf8, type DataType } from 'apache-arrow/type'
import { Field, Schema } from 'apache-arrow/schema'
import { RecordBatch } from 'apache-arrow/recordbatch'
import { Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message'
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler'
import type { BinaryVector, BoolVector, FixedVector, U64Vector, Vector } from '../columns/vector.ts'
import type { FieldDecl } from '../schema/dataset.ts'
import { bytesToInt, KINDS, type Kind } from '../schema/kinds.ts'
import { BatchShapeError, ByteSink, fieldColumn, requiredNull, type BatchEncoder } from './sink.ts'
import type { RowBatch } from '../columns/batch.ts'

/** Every kind's Arrow type (json as its JSON text): a new kind does not compile until it has one. */
const ARROW_TYPES: Record<Kind, () => DataType> = {
  u64hex: () => new Uint64(),
  u64int: () => new Uint64(),
  u256hex: () => new FixedSizeBinary(KINDS.u256hex.width!),
  u256pad: () => new FixedSizeBinary(KINDS.u256pad.width!),
  // A number DuckDB, pandas and pyarrow read as one: decimal256 holds every int256.
  int: () => new Decimal(0, DECIMAL_PRECISION, 256),
  hash: () => new FixedSizeBinary(KINDS.hash.width!),
  address: () => new FixedSizeBinary(KINDS.address.width!),
  address32: () => new FixedSizeBinary(KINDS.address32.width!),
  bytes: () => new Binary(),
  bool: () => new Bool(),
  string: () => new Utf8(),
  json: () => new Utf8(),
}

/** The widest decimal256 precision; the 256-bit value is exact whatever the precision says. */
const DECIMAL_PRECISION = 76
const INT256_MIN = -(1n << 255n)
const INT256_MAX = (1n << 255n) - 1n

const arrowTypeOf = (kind: Kind): DataType => ARROW_TYPES[kind]()

/** The Arrow schema of an output field list, nullability as declared. */
export function arrowSchemaOf(fields: readonly FieldDecl[]): Schema {
  return new Schema(fields.map(f => new Field(f.name, arrowTypeOf(f.kind), f.nullable === true)))
}

/** Validity bitmap of a column: set bits are non-null rows. Empty when no row is null. */
interface Validity {
  bitmap: Uint8Array | undefined
  nullCount: number
}

/**
 * A bitmap of `n` bits, bit i set where `bytes[i]` is not 0. Sized to a multiple
 * of 8 bytes, as the IPC body wants, so the assembler keeps it without a copy.
 */
function bitmapOf(bytes: Uint8Array, n: number): Uint8Array {
  const bitmap = new Uint8Array(((n + 63) >> 6) << 3)
  for (let i = 0; i < n; i++) if (bytes[i] !== 0) bitmap[i >> 3] |= 1 << (i & 7)
  return bitmap
}

function validityOf(field: FieldDecl, v: Vector, n: number): Validity {
  const valid = v.valid
  if (valid === null) return { bitmap: undefined, nullCount: 0 }
  let nulls = 0
  for (let i = 0; i < n; i++) if (valid[i] === 0) nulls++
  if (nulls === 0) return { bitmap: undefined, nullCount: 0 }
  if (!field.nullable) throw requiredNull(field.name)
  return { bitmap: bitmapOf(valid, n), nullCount: nulls }
}

function uint64Data(type: Uint64, v: U64Vector, n: number, valid: Validity): Data {
  const data = v.values.length === n ? v.values : v.values.subarray(0, n)
  return makeData({ type, length: n, nullCount: valid.nullCount, nullBitmap: valid.bitmap, data })
}

function fixedData(type: FixedSizeBinary, v: FixedVector, n: number, valid: Validity): Data {
  const size = n * v.width
  const data = v.bytes.length === size ? v.bytes : v.bytes.subarray(0, size)
  return makeData({ type, length: n, nullCount: valid.nullCount, nullBitmap: valid.bitmap, data })
}

/**
 * An `int` column as decimal256: each value as 256-bit little-endian two's complement. A value
 * outside int256 (only a spoofed contract's uint256 difference can be) has no Arrow form: the
 * stream fails naming it rather than wrapping it.
 */
function decimalData(type: Decimal, field: FieldDecl, v: FixedVector, n: number, valid: Validity): Data {
  const out = new Uint8Array(n * 32)
  for (let i = 0; i < n; i++) {
    if (v.valid !== null && v.valid[i] === 0) continue
    let x = bytesToInt(v.bytes, i * v.width)
    if (x < INT256_MIN || x > INT256_MAX)
      throw new BatchShapeError(`field "${field.name}" holds ${x}, outside Arrow's decimal256: ask for JSON or CSV`)
    if (x < 0n) x += 1n << 256n
    for (let k = 0; k < 32 && x > 0n; k++) {
      out[i * 32 + k] = Number(x & 0xffn)
      x >>= 8n
    }
  }
  return makeData({ type, length: n, nullCount: valid.nullCount, nullBitmap: valid.bitmap, data: new Uint32Array(out.buffer) })
}

/** Binary and Utf8 share the layout: offsets into the data, rebased only when a slice left them off 0. */
function binaryData(type: Binary | Utf8, v: BinaryVector, n: number, valid: Validity): Data {
  const base = v.offsets[0]
  const end = v.offsets[n]
  let valueOffsets = v.offsets.length === n + 1 ? v.offsets : v.offsets.subarray(0, n + 1)
  if (base !== 0) valueOffsets = valueOffsets.map(o => o - base)
  const data = base === 0 && end === v.bytes.length ? v.bytes : v.bytes.subarray(base, end)
  const props = { length: n, nullCount: valid.nullCount, nullBitmap: valid.bitmap, valueOffsets, data }
  return type instanceof Utf8 ? makeData({ type, ...props }) : makeData({ type, ...props })
}

function boolData(type: Bool, v: BoolVector, n: number, valid: Validity): Data {
  return makeData({ type, length: n, nullCount: valid.nullCount, nullBitmap: valid.bitmap, data: bitmapOf(v.values, n) })
}

/** One column of a batch as Arrow data of the field's declared type, made from the vector's buffers. */
function columnData(field: FieldDecl, type: DataType, v: Vector, n: number): Data {
  const valid = validityOf(field, v, n)
  switch (v.type) {
    case 'u64':
      return uint64Data(type as Uint64, v, n, valid)
    case 'fixed':
      return type instanceof Decimal ? decimalData(type, field, v, n, valid) : fixedData(type as FixedSizeBinary, v, n, valid)
    case 'binary':
      return binaryData(type as Binary | Utf8, v, n, valid)
    case 'bool':
      return boolData(type as Bool, v, n, valid)
  }
}

/** A RowBatch as an Arrow record batch of the given schema. */
function arrowRecordBatch(schema: Schema, fields: readonly FieldDecl[], batch: RowBatch): RecordBatch {
  const n = batch.length
  const children = fields.map((f, j) => columnData(f, schema.fields[j].type, fieldColumn(batch, f), n))
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

/**
 * Writes the IPC record batch message of a batch: its framed metadata, then each body
 * buffer at its offset with zero padding between. Large buffers (the columns) go out as
 * they are, without a copy: the scanner never reuses a vector's memory.
 */
function writeRecordBatch(sink: ByteSink, batch: RecordBatch): void {
  const body = VectorAssembler.assemble(batch)
  const header = new RecordBatchHeader(batch.numRows, body.nodes, body.bufferRegions, null, body.variadicBufferCounts)
  sink.bytes(framedMessage(Message.encode(Message.from(header, body.byteLength)), 0).bytes)
  let at = 0
  body.buffers.forEach((buf, k) => {
    const region = body.bufferRegions[k]
    if (region.offset > at) sink.bytes(new Uint8Array(region.offset - at))
    sink.bytes(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength))
    at = region.offset + buf.byteLength
  })
  if (body.byteLength > at) sink.bytes(new Uint8Array(body.byteLength - at))
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
      writeRecordBatch(sink, arrowRecordBatch(schema, fields, batch))
      return sink.flush()
    },
    close: () => {
      sink.bytes(END_OF_STREAM)
      return sink.flush()
    },
  }
}

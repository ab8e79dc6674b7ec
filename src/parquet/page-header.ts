/**
 * Parquet page headers and offset indexes (where each page of a chunk lies), Thrift
 * compact protocol, read straight into the fields the page decoder and the scan use.
 * hyparquet's `parquetHeader` and `readOffsetIndex` build a generic object per struct (a
 * `field_N` key a field, BigInts for i64), then the header from it. A scan reads one
 * header per page of every column it decodes, and a Worker opens a query's partitions
 * anew, so it reads every chunk's offset index again (1,300 for a scan of the 1 M-log
 * lake's 100 row groups); in workerd the two cost more than checking the pages' CRCs
 * (BENCHMARKS.md, "Dense picks, page headers, 1 MiB chunks"). Fields not used (page
 * statistics, future ones) are skipped by their type. Bytes that end inside a struct,
 * or a type the protocol does not have, throw: the caller reports the object as damaged.
 */
import type { DataPageHeader, DictionaryPageHeader, PageHeader } from 'hyparquet'
import { Encodings, PageTypes } from 'hyparquet/src/constants.js'

type DataPageHeaderV2 = NonNullable<PageHeader['data_page_header_v2']>

/** Where a header is read from: the same shape as hyparquet's DataReader. */
export interface HeaderReader {
  view: DataView
  offset: number
}

const STOP = 0
const TRUE = 1
const FALSE = 2
const BYTE = 3
const I16 = 4
const I32 = 5
const I64 = 6
const DOUBLE = 7
const BINARY = 8
const LIST = 9
const SET = 10
const MAP = 11
const STRUCT = 12

/** A struct's fields, in order: `next()` gives the next field's type (STOP at the end) and sets `id`. */
class Fields {
  id = 0
  private readonly r: HeaderReader

  constructor(r: HeaderReader) {
    this.r = r
  }

  next(): number {
    const byte = u8(this.r)
    const type = byte & 0x0f
    if (type === STOP) return STOP
    const delta = byte >> 4
    this.id = delta ? this.id + delta : zigzag(this.r)
    return type
  }
}

function u8(r: HeaderReader): number {
  if (r.offset >= r.view.byteLength) throw new Error('thrift struct runs past its bytes')
  return r.view.getUint8(r.offset++)
}

function varint(r: HeaderReader): number {
  let result = 0
  for (let shift = 0; shift < 35; shift += 7) {
    const byte = u8(r)
    result |= (byte & 0x7f) << shift
    if (!(byte & 0x80)) return result
  }
  throw new Error('thrift struct holds a varint over 32 bits')
}

/** An i64 varint as a number (offsets and row counts stay far below 2^53). */
function varint64(r: HeaderReader): number {
  let result = 0
  for (let scale = 1; scale < 2 ** 63; scale *= 128) {
    const byte = u8(r)
    result += (byte & 0x7f) * scale
    if (!(byte & 0x80)) return result
  }
  throw new Error('thrift struct holds a varint over 64 bits')
}

/** An i64 field's value. */
function zigzag64(r: HeaderReader): number {
  const n = varint64(r)
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2
}

/** An i16 or i32 field's value. */
function zigzag(r: HeaderReader): number {
  const n = varint(r)
  return (n >>> 1) ^ -(n & 1)
}

/** Passes over a value of `type` (a field the decoder does not read). */
function skip(r: HeaderReader, type: number): void {
  switch (type) {
    case TRUE:
    case FALSE:
      return
    case BYTE:
      r.offset++
      return
    case I16:
    case I32:
    case I64:
      while (u8(r) & 0x80);
      return
    case DOUBLE:
      r.offset += 8
      return
    case BINARY: {
      const length = varint(r)
      r.offset += length
      return
    }
    case LIST:
    case SET: {
      const byte = u8(r)
      const n = byte >> 4 === 15 ? varint(r) : byte >> 4
      const element = byte & 0x0f
      // A list of booleans holds a byte per element.
      for (let i = 0; i < n; i++) skip(r, element === TRUE || element === FALSE ? BYTE : element)
      return
    }
    case MAP: {
      const n = varint(r)
      if (n === 0) return
      const types = u8(r)
      for (let i = 0; i < n; i++) {
        skip(r, types >> 4)
        skip(r, types & 0x0f)
      }
      return
    }
    case STRUCT: {
      const f = new Fields(r)
      for (let t = f.next(); t !== STOP; t = f.next()) skip(r, t)
      return
    }
    default:
      throw new Error(`thrift struct holds type ${type}`)
  }
}

function encoding(n: number): DataPageHeader['encoding'] {
  const name = Encodings[n]
  if (name === undefined) throw new Error(`page header names encoding ${n}`)
  return name
}

function dataPageHeader(r: HeaderReader): DataPageHeader {
  const h = { num_values: 0, encoding: 'PLAIN', definition_level_encoding: 'RLE', repetition_level_encoding: 'RLE' } as DataPageHeader
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === I32) h.num_values = zigzag(r)
    else if (f.id === 2 && t === I32) h.encoding = encoding(zigzag(r))
    else if (f.id === 3 && t === I32) h.definition_level_encoding = encoding(zigzag(r))
    else if (f.id === 4 && t === I32) h.repetition_level_encoding = encoding(zigzag(r))
    else skip(r, t)
  }
  return h
}

function dataPageHeaderV2(r: HeaderReader): DataPageHeaderV2 {
  const h: DataPageHeaderV2 = {
    num_values: 0,
    num_nulls: 0,
    num_rows: 0,
    encoding: 'PLAIN',
    definition_levels_byte_length: 0,
    repetition_levels_byte_length: 0,
    is_compressed: true,
  }
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === I32) h.num_values = zigzag(r)
    else if (f.id === 2 && t === I32) h.num_nulls = zigzag(r)
    else if (f.id === 3 && t === I32) h.num_rows = zigzag(r)
    else if (f.id === 4 && t === I32) h.encoding = encoding(zigzag(r))
    else if (f.id === 5 && t === I32) h.definition_levels_byte_length = zigzag(r)
    else if (f.id === 6 && t === I32) h.repetition_levels_byte_length = zigzag(r)
    else if (f.id === 7 && (t === TRUE || t === FALSE)) h.is_compressed = t === TRUE
    else skip(r, t)
  }
  return h
}

function dictionaryPageHeader(r: HeaderReader): DictionaryPageHeader {
  const h: DictionaryPageHeader = { num_values: 0, encoding: 'PLAIN' }
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === I32) h.num_values = zigzag(r)
    else if (f.id === 2 && t === I32) h.encoding = encoding(zigzag(r))
    else if (f.id === 3 && (t === TRUE || t === FALSE)) h.is_sorted = t === TRUE
    else skip(r, t)
  }
  return h
}

/** The page header at `r.offset`, leaving `r` at the page's bytes. */
export function readPageHeader(r: HeaderReader): PageHeader {
  let type: PageHeader['type'] | undefined
  const h = { uncompressed_page_size: -1, compressed_page_size: -1 } as PageHeader
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === I32) {
      const n = zigzag(r)
      type = PageTypes[n]
      if (type === undefined) throw new Error(`page header names page type ${n}`)
    } else if (f.id === 2 && t === I32) h.uncompressed_page_size = zigzag(r)
    else if (f.id === 3 && t === I32) h.compressed_page_size = zigzag(r)
    else if (f.id === 4 && t === I32) h.crc = zigzag(r)
    else if (f.id === 5 && t === STRUCT) h.data_page_header = dataPageHeader(r)
    else if (f.id === 7 && t === STRUCT) h.dictionary_page_header = dictionaryPageHeader(r)
    else if (f.id === 8 && t === STRUCT) h.data_page_header_v2 = dataPageHeaderV2(r)
    else skip(r, t)
  }
  if (r.offset > r.view.byteLength) throw new Error('page header runs past its bytes')
  if (type === undefined || h.uncompressed_page_size < 0 || h.compressed_page_size < 0)
    throw new Error('page header lacks its type or sizes')
  h.type = type
  return h
}

/** Where a data page lies in the file and the first row it holds (relative to its row group). */
export interface PageLocation {
  offset: number
  compressed_page_size: number
  first_row_index: number
}

function pageLocation(r: HeaderReader): PageLocation {
  const p = { offset: -1, compressed_page_size: -1, first_row_index: -1 }
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === I64) p.offset = zigzag64(r)
    else if (f.id === 2 && t === I32) p.compressed_page_size = zigzag(r)
    else if (f.id === 3 && t === I64) p.first_row_index = zigzag64(r)
    else skip(r, t)
  }
  if (p.offset < 0 || p.compressed_page_size < 0 || p.first_row_index < 0) throw new Error('page location lacks a field')
  return p
}

/** The page locations of an offset index at `r.offset` (its other fields skipped). */
export function readPageLocations(r: HeaderReader): PageLocation[] {
  let locations: PageLocation[] | undefined
  const f = new Fields(r)
  for (let t = f.next(); t !== STOP; t = f.next()) {
    if (f.id === 1 && t === LIST) {
      const byte = u8(r)
      const n = byte >> 4 === 15 ? varint(r) : byte >> 4
      if ((byte & 0x0f) !== STRUCT) throw new Error('offset index holds a list of something else than page locations')
      locations = new Array<PageLocation>(n)
      for (let i = 0; i < n; i++) locations[i] = pageLocation(r)
    } else skip(r, t)
  }
  if (r.offset > r.view.byteLength) throw new Error('offset index runs past its bytes')
  if (!locations) throw new Error('offset index lacks its page locations')
  return locations
}

/**
 * The CRC-32 of every page, in the standard PageHeader `crc` field (over the page's
 * bytes after its header, as stored: levels and compressed values), which
 * hyparquet-writer leaves out. `checksumPages` runs between `ParquetWriter.write()`
 * and `finish()`: the column chunks are written and their metadata, offset indexes
 * included, are still objects, not bytes. It rewrites each page header with its
 * checksum and moves every offset the metadata holds by the bytes the headers grew,
 * so `finish()` then writes page indexes, blooms and footer that agree with the pages.
 * The page decoder (pages.ts) verifies the field when it is there; DuckDB reads such
 * files as before.
 */
import { parquetHeader } from 'hyparquet/src/column.js'
import type { ParquetWriter } from 'hyparquet-writer'
import { writePageHeader } from 'hyparquet-writer/src/datapage.js'
import { crc32 } from '../store/crc32.ts'
import { ChunkedWriter } from './chunked-writer.ts'

/** Most bytes a page header takes (a data page's without statistics takes a few dozen). */
const HEADER_WINDOW = 1024

/** Rewrites the pages `parquet` has written so far with their checksums; `parquet` then writes on into a new writer. */
export function checksumPages(parquet: ParquetWriter): void {
  const written = parquet.writer
  if (!(written instanceof ChunkedWriter) || !Array.isArray(parquet.row_groups)) {
    throw new Error(
      'ParquetWriter has no ChunkedWriter as its writer, or hyparquet-writer no longer has row_groups: see src/parquet/page-crc.ts',
    )
  }
  const length = written.offset
  // Room for the pages, each header grown by its crc field (at most 6 bytes); the tail goes on in further chunks.
  const out = new ChunkedWriter(length + (length >> 6) + 64 * 1024)
  out.appendBytes(written.read(0, 4))
  // Old start of every page (and the end of the last) → its new start.
  const moved = new Map<number, number>()
  let offset = 4
  while (offset < length) {
    moved.set(offset, out.offset)
    const window = written.read(offset, Math.min(HEADER_WINDOW, length - offset))
    const reader = { view: new DataView(window.buffer, window.byteOffset, window.byteLength), offset: 0 }
    const header = parquetHeader(reader)
    const body = written.read(offset + reader.offset, header.compressed_page_size)
    writePageHeader(out, { ...header, crc: crc32(body) | 0 })
    out.appendBytes(body)
    offset += reader.offset + header.compressed_page_size
  }
  moved.set(length, out.offset)
  const at = (offset: bigint | number): number => {
    const to = moved.get(Number(offset))
    if (to === undefined) throw new Error(`checksumPages: offset ${offset} is not the start of a page`)
    return to
  }
  for (const group of parquet.row_groups) {
    let groupStart = Infinity
    let groupEnd = 0
    let uncompressed = 0n
    for (const chunk of group.columns) {
      const m = chunk.meta_data!
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
      const end = start + Number(m.total_compressed_size)
      const [newStart, newEnd] = [at(start), at(end)]
      m.total_uncompressed_size += BigInt(newEnd - newStart - (end - start))
      m.total_compressed_size = BigInt(newEnd - newStart)
      m.data_page_offset = BigInt(at(m.data_page_offset))
      if (m.dictionary_page_offset !== undefined) m.dictionary_page_offset = BigInt(at(m.dictionary_page_offset))
      chunk.file_offset = BigInt(newStart)
      groupStart = Math.min(groupStart, newStart)
      groupEnd = Math.max(groupEnd, newEnd)
      uncompressed += m.total_uncompressed_size
    }
    group.total_byte_size = uncompressed
    if (group.columns.length) group.total_compressed_size = BigInt(groupEnd - groupStart)
  }
  for (const { offsetIndex } of parquet.pendingIndexes) {
    for (const page of offsetIndex?.page_locations ?? []) {
      const start = Number(page.offset)
      page.compressed_page_size = at(start + page.compressed_page_size) - at(start)
      page.offset = BigInt(at(start))
    }
  }
  parquet.writer = out
}

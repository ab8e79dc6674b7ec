import { parquetMetadataAsync, asyncBufferFromFile, readOffsetIndex } from 'hyparquet'
import { readdirSync } from 'node:fs'
const dir = process.argv[2]
const files = readdirSync(dir, { recursive: true }).filter(f => String(f).endsWith('.parquet') && !String(f).includes('lookup')).slice(0, 1)
for (const f of files) {
  const buf = await asyncBufferFromFile(dir + '/' + f)
  const md = await parquetMetadataAsync(buf)
  console.log(f, 'rows', md.num_rows, 'row groups', md.row_groups.length, 'rg rows', md.row_groups.map(r => r.num_rows).join(','))
  const rg = md.row_groups[0]
  for (const c of rg.columns) {
    const m = c.meta_data
    let pages = '?'
    if (c.offset_index_offset) { const b = await buf.slice(Number(c.offset_index_offset), Number(c.offset_index_offset) + c.offset_index_length); const oi = readOffsetIndex({ view: new DataView(b), offset: 0 }); pages = oi.page_locations.length }
    console.log(m.path_in_schema.join('.'), m.encodings.join('/'), 'comp', Number(m.total_compressed_size), 'uncomp', Number(m.total_uncompressed_size), 'pages', pages)
  }
}

// The explorer page: plain DOM, no framework, no build step. Everything it offers is read
// from the host's own OpenAPI document, so a new dataset, field or format appears here
// without a change. Credentials live in one variable for the tab's lifetime.
const API = '/v1/api/'
const SUBPROTOCOL = 'edge-chain-data.v1'
const LIVE_ROWS = 200
const EXTENSIONS = { json: 'json', json_stream: 'jsonl', csv: 'csv', arrow: 'arrow' }

const $ = id => document.getElementById(id)
/** An element with properties (dataset merged) and children. */
function el(tag, { dataset, ...props } = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props)
  Object.assign(node.dataset, dataset)
  node.append(...children)
  return node
}

let credentials = null
let doc = null
let pages = []
let socket = null

const authorization = () => 'Basic ' + btoa(credentials.user + ':' + credentials.password)

async function api(path, params) {
  // credentials 'omit': a 401 comes back to the script instead of opening the browser's own sign-in dialog.
  const res = await fetch(API + path + (params ? '?' + params : ''), { headers: { Authorization: authorization() }, credentials: 'omit' })
  if (!res.ok) {
    const body = await res.json().catch(() => null)
    throw new Error(body?.error ? `${body.error.status} ${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`)
  }
  return res
}

/** Fills `table` with a header of `columns` and one row per record; values as the API sent them. */
function fillTable(table, columns, records) {
  const cell = v => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v))
  table.replaceChildren(
    el('thead', {}, el('tr', {}, ...columns.map(c => el('th', { textContent: c })))),
    el('tbody', {}, ...records.map(r => el('tr', {}, ...columns.map(c => el('td', { textContent: cell(r[c]) }))))),
  )
}

async function signIn(event) {
  event.preventDefault()
  credentials = { user: $('user').value, password: $('password').value }
  $('signin-error').textContent = ''
  try {
    const [status, openapi] = await Promise.all([
      api('status', 'format=json').then(r => r.json()),
      fetch(API + 'openapi.json').then(r => r.json()),
    ])
    doc = openapi
    $('password').value = ''
    $('signin').hidden = true
    $('app').hidden = false
    $('signout').hidden = false
    showStatus(status)
    buildForm(status)
  } catch (err) {
    credentials = null
    $('signin-error').textContent = err.message
  }
}

function signOut() {
  credentials = null
  stopLive()
  location.reload()
}

function showStatus(records) {
  const rows = records.map(r => ({
    chain: r.chain_code,
    id: r.chain,
    name: r.chain_name,
    status: r.status,
    lag: r.lag ? `${r.lag.blocks} blocks, ${r.lag.seconds} s` : '',
    latest_block: r.latest_block_height,
    time: r.timestamp ? new Date(r.timestamp * 1000).toISOString() : '',
    note: r.error?.message ?? r.label ?? '',
  }))
  fillTable($('status'), Object.keys(rows[0] ?? { chain: 0 }), rows)
}

/** The data endpoints of the document: path → GET operation. */
const operations = () =>
  Object.fromEntries(
    Object.entries(doc.paths)
      .filter(([path, item]) => item.get && !/\/(status|openapi\.json)$/.test(path))
      .map(([path, item]) => [path.slice(API.length), item.get]),
  )
const parameter = name => operations()[$('dataset').value].parameters.find(p => p.name === name)
const options = (select, values, chosen) =>
  select.replaceChildren(...values.map(v => el('option', { value: v, textContent: v, selected: v === chosen })))
const BUILT_IN = ['chains', 'from_block', 'to_block', 'fields', 'limit', 'format']

function buildForm(status) {
  options($('dataset'), Object.keys(operations()))
  const withData = status.find(r => r.latest_block_height !== null)
  options($('chain'), parameter('chains').schema.enum, withData?.chain_code)
  $('downloads').replaceChildren(
    'Download:',
    ...parameter('format').schema.enum.map(f =>
      el('button', { type: 'button', textContent: f, dataset: { format: f }, onclick: () => download(f) }),
    ),
  )
  $('dataset').onchange = () => $('filters').replaceChildren()
}

function addFilter() {
  const names = operations()
    [$('dataset').value].parameters.map(p => p.name)
    .filter(n => !BUILT_IN.includes(n))
  const select = el('select', { className: 'filter-name' })
  options(select, names)
  const value = el('input', { className: 'filter-value' })
  const describe = () => {
    const p = parameter(select.value)
    value.placeholder = p.schema.enum ? p.schema.enum.join(' | ') : (p.schema.pattern ?? p.schema.description ?? '')
    value.title = p.description
  }
  select.onchange = describe
  describe()
  $('filters').append(
    el(
      'div',
      { className: 'row filter' },
      select,
      value,
      el('button', { type: 'button', textContent: '×', onclick: e => e.target.parentNode.remove() }),
    ),
  )
}

/** The query of the form; `format` and `limit` are left to the caller. */
function formParams() {
  const params = new URLSearchParams({ chains: $('chain').value })
  for (const name of ['from_block', 'to_block', 'fields']) if ($(name).value.trim()) params.set(name, $(name).value.trim())
  for (const row of document.querySelectorAll('.filter')) {
    const [name, value] = [row.querySelector('.filter-name').value, row.querySelector('.filter-value').value]
    if (value !== '') params.append(name, value)
  }
  return params
}

async function run(event, from) {
  event?.preventDefault()
  if (from === undefined) pages = []
  const params = formParams()
  if (from !== undefined) params.set('from_block', from)
  if ($('limit').value) params.set('limit', $('limit').value)
  params.set('format', 'json')
  const dataset = $('dataset').value
  $('url').textContent = `GET ${location.origin}${API}${dataset}?${params}`
  $('query-error').textContent = ''
  try {
    const res = await api(dataset, params)
    const records = await res.json()
    const columns = params.get('fields')?.split(',') ?? Object.keys(records[0] ?? {})
    fillTable($('results'), columns, records)
    $('headers').replaceChildren(
      ...[...res.headers]
        .filter(([name]) => name.startsWith('x-') && name !== 'x-content-type-options')
        .flatMap(([name, value]) => [el('dt', { textContent: name }), el('dd', { textContent: value })]),
    )
    pages.push(params.get('from_block') ?? '')
    const next = res.headers.get('x-next-from-block')
    $('next').disabled = next === null
    $('next').onclick = () => run(null, next)
    $('prev').disabled = pages.length < 2
  } catch (err) {
    $('query-error').textContent = err.message
  }
}

function previous() {
  pages.pop()
  const from = pages.pop()
  run(null, from)
}

/** Fetches the query (without limit: every row of the range) in `format` and saves it. */
async function download(format) {
  const params = formParams()
  params.set('format', format)
  if ($('limit').value) params.set('limit', $('limit').value)
  try {
    const blob = await (await api($('dataset').value, params)).blob()
    const a = el('a', {
      href: URL.createObjectURL(blob),
      download: `${$('dataset').value.replace('/', '-')}-${$('chain').value}.${EXTENSIONS[format] ?? format}`,
    })
    document.body.append(a)
    a.click()
    a.remove()
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000)
  } catch (err) {
    $('query-error').textContent = err.message
  }
}

function startLive() {
  const params = formParams()
  // From the head on: history is what the query above is for.
  params.delete('from_block')
  params.delete('to_block')
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${API}${$('dataset').value}?${params}`
  const rows = []
  let columns = null
  delete $('live-state').dataset.from
  socket = new WebSocket(url, [SUBPROTOCOL])
  const state = text => ($('live-state').textContent = text)
  socket.onopen = () => {
    socket.send(JSON.stringify({ type: 'auth', user: credentials.user, password: credentials.password }))
    state('connected')
  }
  socket.onmessage = e => {
    const m = JSON.parse(e.data)
    if (m.type === 'subscribed') {
      columns = m.fields
      $('live-state').dataset.from = m.from_block
      state(`subscribed to ${m.chain} ${m.dataset} from ${m.from_block}, head ${m.head}`)
    } else if (m.type === 'rows') {
      rows.unshift(...m.rows.map(r => (m.removed ? { ...r, removed: true } : r)).reverse())
      rows.length = Math.min(rows.length, LIVE_ROWS)
      fillTable($('live'), columns ?? Object.keys(rows[0]), rows)
    } else if (m.type === 'progress') state(`block ${m.cursor} of ${m.head}${m.live ? ' (live)' : ''}, ${rows.length} rows shown`)
    else if (m.type === 'reorg') state(`reorg at ${m.fork_point}: ${m.dropped.length} blocks dropped`)
    else if (m.type === 'error') state(`error ${m.code}: ${m.message}`)
  }
  socket.onclose = e => {
    if (e.code !== 1000 && e.code !== 1005) state(`closed ${e.code} ${e.reason}`)
    $('live-start').disabled = false
    $('live-stop').disabled = true
  }
  $('live-start').disabled = true
  $('live-stop').disabled = false
}

function stopLive() {
  socket?.close()
  socket = null
}

$('host').textContent = location.host
$('signin').onsubmit = signIn
$('signout').onclick = signOut
$('query').onsubmit = run
$('add-filter').onclick = addFilter
$('prev').onclick = previous
$('live-start').onclick = startLive
$('live-stop').onclick = stopLive

/**
 * The explorer page in a real browser (headless Chromium) against the Node server over
 * a lake ingested from a real devnet (anvil), with the live service following that
 * devnet: sign in, a filtered query whose table must equal the API's JSON, two pages
 * through X-Next-From-Block, a CSV download equal to the API's CSV, live rows that must
 * equal the node's own logs, and a screenshot that is not blank.
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runIngest } from '../../src/ingest/run.ts'
import { addressTopic, Chainlet, startLiveServer, TOPIC0, type Json, type LiveServer } from '../live/helpers.ts'
import { basic } from '../support/basic.ts'
import { DEVNET } from '../support/chains.ts'
import { removeTempDirs, tempStore } from '../support/stores.ts'
import { launchChromium, pictureStats } from './browser.ts'

const STORED_TO = 24
const ALICE = basic('alice', 'secret')

let chain: Chainlet
let server: LiveServer
let browser: Browser
let page: Page
let downloads: string

/** Mines `n` blocks, each with one to three emitter calls from accounts 1..3. */
async function mineSome(n: number): Promise<number> {
  let head = 0
  for (let i = 0; i < n; i++)
    head = await chain.mine(
      Array.from({ length: 1 + (i % 3) }, (_, k) => [1 + ((i + k) % 3), `0x${(i * 16 + k).toString(16).padStart(4, '0')}`]),
    )
  return head
}

/** A record as the page shows it: every value as text, null as empty. */
const shown = (record: Json, columns: readonly string[]): Record<string, string> =>
  Object.fromEntries(columns.map(c => [c, record[c] === null || record[c] === undefined ? '' : String(record[c])]))

/** The rows of a table on the page, as records keyed by its header. */
const tableOf = (selector: string): Promise<Record<string, string>[]> =>
  page.$eval(selector, table => {
    const names = [...table.querySelectorAll('thead th')].map(th => th.textContent!)
    return [...table.querySelectorAll('tbody tr')].map(tr =>
      Object.fromEntries([...tr.querySelectorAll('td')].map((td, i) => [names[i], td.textContent!])),
    )
  })

const text = (selector: string): Promise<string> => page.$eval(selector, e => e.textContent ?? '')

/** What the API answers the URL the page shows it requested. */
async function apiFor(shownUrl: string, format?: string): Promise<Response> {
  const url = new URL(shownUrl.replace(/^GET /, ''))
  if (format) url.searchParams.set('format', format)
  const res = await fetch(url, { headers: { authorization: ALICE } })
  expect(res.status).toBe(200)
  return res
}

/** Runs a query (a click) and waits for the page to show the URL it requested and its table. */
async function clickAndWait(selector: string): Promise<string> {
  const before = await text('#url')
  const rowsBefore = await page.$$eval('#results tbody tr', rows => rows.map(r => r.textContent).join('|')).catch(() => '')
  await page.click(selector)
  await page.waitForFunction(
    (u, r) =>
      document.getElementById('url')!.textContent !== u &&
      [...document.querySelectorAll('#results tbody tr')].map(row => row.textContent).join('|') !== r,
    {},
    before,
    rowsBefore,
  )
  return text('#url')
}

beforeAll(async () => {
  chain = await Chainlet.start()
  await mineSome(STORED_TO + 2)
  const store = (await tempStore()).store
  await runIngest({ chain: DEVNET, rpcUrl: chain.url, from: 0, to: STORED_TO, store, partitionBlocks: 8 })
  server = await startLiveServer({ store, follow: [{ chain: DEVNET, rpcUrl: chain.url, options: { finalityDepth: 3, compactBlocks: 2 } }] })
  browser = await launchChromium()
  page = await browser.newPage()
  await page.setViewport({ width: 1400, height: 1000 })
  downloads = await mkdtemp(join(tmpdir(), 'explorer-downloads-'))
  const cdp = await page.createCDPSession()
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads })
})
afterAll(async () => {
  await browser?.close()
  await server?.close()
  await chain?.stop()
  await removeTempDirs()
})

describe('the explorer page in Chromium', () => {
  const caller = () => addressTopic(chain.address(1))

  it('refuses wrong credentials, then signs in and shows every chain of the host', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await page.goto(server.url + '/')
    await page.type('#user', 'alice')
    await page.type('#password', 'wrong')
    await page.click('#signin-button')
    await page.waitForFunction(() => document.getElementById('signin-error')!.textContent !== '')
    expect(await text('#signin-error')).toMatch(/^401 /)
    await page.$eval('#password', e => ((e as HTMLInputElement).value = ''))
    await page.type('#password', 'secret')
    await page.click('#signin-button')
    await page.waitForSelector('#app:not([hidden])')
    const status = await tableOf('#status')
    const api = (await (await fetch(`${server.url}/v1/api/status?format=json`, { headers: { authorization: ALICE } })).json()) as Json[]
    expect(status.map(r => [r.chain, r.status, r.latest_block])).toEqual(
      api.map(r => [r.chain_code, r.status, r.latest_block_height === null ? '' : String(r.latest_block_height)]),
    )
    expect(status.find(r => r.chain === 'DEVNET')!.status).toBe('Ok')
    // The password field is emptied once signed in; the credentials live only in the script.
    expect(await page.$eval('#password', e => (e as HTMLInputElement).value)).toBe('')
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([0, 0, ''])
    expect(errors).toEqual([])
  })

  it('builds the query form from the OpenAPI document', async () => {
    const doc = (await (await fetch(`${server.url}/v1/api/openapi.json`)).json()) as Json
    const datasets = Object.keys(doc.paths)
      .filter(p => !/(status|openapi\.json)$/.test(p))
      .map(p => p.slice('/v1/api/'.length))
    expect(await page.$$eval('#dataset option', os => os.map(o => (o as HTMLOptionElement).value))).toEqual(datasets)
    expect(await page.$$eval('#downloads button', bs => bs.map(b => b.textContent))).toEqual(
      doc.paths['/v1/api/logs'].get.parameters.find((p: Json) => p.name === 'format').schema.enum,
    )
  })

  it('runs a filtered query: the table is the API JSON, the pushdown headers are shown', async () => {
    await page.select('#dataset', 'logs')
    await page.select('#chain', 'DEVNET')
    await page.type('#from_block', '0')
    await page.type('#to_block', String(STORED_TO))
    await page.$eval('#limit', e => ((e as HTMLInputElement).value = '3'))
    await page.click('#add-filter')
    await page.select('.filter-name', 'topic2')
    await page.type('.filter-value', caller())
    const url = await clickAndWait('#run')
    expect(url).toContain(`topic2=${caller()}`)
    const res = await apiFor(url)
    const records = (await res.json()) as Json[]
    expect(records.length).toBeGreaterThanOrEqual(3)
    expect(records.every(r => r.topic2 === caller())).toBe(true)
    const table = await tableOf('#results')
    expect(table).toEqual(records.map(r => shown(r, Object.keys(records[0]))))
    const headers = await page.$$eval('#headers dt', dts => dts.map(d => d.textContent))
    expect(headers).toEqual(expect.arrayContaining(['x-next-from-block', 'x-rows-scanned', 'x-row-groups-read', 'x-bytes-fetched']))
    const next = await page.$eval('#headers', dl => {
      const dt = [...dl.querySelectorAll('dt')].find(d => d.textContent === 'x-next-from-block')!
      return dt.nextElementSibling!.textContent
    })
    expect(next).toBe(res.headers.get('x-next-from-block'))
  })

  it('pages twice through X-Next-From-Block, each page the API JSON of the next range', async () => {
    const seen: string[] = []
    let previous = await text('#url')
    for (let i = 0; i < 2; i++) {
      const expectedFrom = (await apiFor(previous)).headers.get('x-next-from-block')!
      const url = await clickAndWait('#next')
      expect(new URL(url.replace(/^GET /, '')).searchParams.get('from_block')).toBe(expectedFrom)
      const records = (await (await apiFor(url)).json()) as Json[]
      expect(records.length).toBeGreaterThan(0)
      expect(await tableOf('#results')).toEqual(records.map(r => shown(r, Object.keys(records[0]))))
      seen.push(...records.map(r => r.block_number))
      previous = url
    }
    // Pages do not overlap: block numbers only go up.
    expect(seen.map(b => Number(b))).toEqual([...seen.map(b => Number(b))].sort((a, b) => a - b))
    expect(await page.$eval('#prev', b => (b as HTMLButtonElement).disabled)).toBe(false)
  })

  it('downloads the query as CSV: the same bytes as the API', async () => {
    await page.click('#downloads button[data-format="csv"]')
    let files: string[] = []
    for (let i = 0; i < 200 && !files.some(f => f.endsWith('.csv')); i++) {
      await new Promise(r => setTimeout(r, 50))
      files = (await readdir(downloads)).filter(f => !f.endsWith('.crdownload'))
    }
    const name = files.find(f => f.endsWith('.csv'))!
    expect(name).toBe('logs-DEVNET.csv')
    const url = new URL(`${server.url}/v1/api/logs`)
    for (const [k, v] of Object.entries({
      chains: 'DEVNET',
      from_block: '0',
      to_block: String(STORED_TO),
      topic2: caller(),
      format: 'csv',
      limit: '3',
    }))
      url.searchParams.set(k, v)
    const expected = await (await fetch(url, { headers: { authorization: ALICE } })).text()
    expect(expected.split('\n').length).toBeGreaterThan(3)
    expect(await readFile(join(downloads, name), 'utf8')).toBe(expected)
  })

  it('follows new blocks live: the rows of the filter arrive as the devnet mines them', async () => {
    await page.click('#live-start')
    await page.waitForSelector('#live-state[data-from]')
    const from = Number(await page.$eval('#live-state', e => (e as HTMLElement).dataset.from))
    const mined = await mineSome(3)
    const expected = await chain.logRecords(from, mined, { topics: [TOPIC0, null, caller()] })
    expect(expected.length).toBeGreaterThan(0)
    await page.waitForFunction(n => document.querySelectorAll('#live tbody tr').length >= n, {}, expected.length)
    await page.waitForFunction(m => document.getElementById('live-state')!.textContent!.startsWith(`block ${m} `), {}, mined)
    const live = await tableOf('#live')
    expect(live).toEqual([...expected].reverse().map(r => shown(r, Object.keys(expected[0]))))
    await page.click('#live-stop')
  })

  it('renders a page that is not blank', async () => {
    const png = await page.screenshot({ fullPage: true, type: 'png' })
    const stats = await pictureStats(browser, png)
    expect(stats.width).toBe(1400)
    expect(stats.colors).toBeGreaterThan(20)
    expect(stats.inkShare).toBeGreaterThan(0.05)
  })
})

/**
 * Headless Chromium for browser tests: Debian's `chromium` (`.ci/run` installs it when
 * missing; CHROMIUM_BIN overrides the path), driven by puppeteer-core over the DevTools
 * protocol.
 */
import { existsSync } from 'node:fs'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'

export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium'

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_BIN)`)
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--window-size=1400,1000'] })
}

/**
 * How much of a PNG screenshot is not its most common colour, and how many colours it
 * has: decoded by Chromium itself on a blank page.
 */
export async function pictureStats(browser: Browser, png: Uint8Array): Promise<{ colors: number; inkShare: number; width: number }> {
  const page: Page = await browser.newPage()
  try {
    return await page.evaluate(async (b64: string) => {
      const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0))
      const image = await createImageBitmap(new Blob([bytes], { type: 'image/png' }))
      const canvas = new OffscreenCanvas(image.width, image.height)
      const ctx = canvas.getContext('2d')!
      ctx.drawImage(image, 0, 0)
      const data = ctx.getImageData(0, 0, image.width, image.height).data
      const counts = new Map<number, number>()
      for (let i = 0; i < data.length; i += 4) {
        const key = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2]
        counts.set(key, (counts.get(key) ?? 0) + 1)
      }
      const pixels = data.length / 4
      return { colors: counts.size, inkShare: 1 - Math.max(...counts.values()) / pixels, width: image.width }
    }, Buffer.from(png).toString('base64'))
  } finally {
    await page.close()
  }
}

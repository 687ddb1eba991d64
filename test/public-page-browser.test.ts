/**
 * The public space page as HTML in a real browser (headless Chromium driven by playwright-core): it renders the
 * events, links the space's calendar feed, carries JSON-LD that parses, and axe-core finds no serious or critical
 * accessibility violation. Needs a `chromium` binary (Debian's package; `.ci/run` installs it, or set
 * CHROMIUM_PATH); without one the suite is skipped with a message, so `npm test` passes on a machine without it.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { chromium, type Browser } from 'playwright-core'
import { alicePublishedSpace } from '../src/modules/spaces/spaces.fixtures.ts'
import { useTestApp } from './helpers/build-app.ts'
import { chromiumOrSkip } from './helpers/chromium.ts'
import { expectStatus } from './helpers/requests.ts'

const { executable, skip } = chromiumOrSkip()

void describe('the public space page in headless Chromium', { skip, timeout: 60_000 }, () => {
  const t = useTestApp('pglite')
  let browser: Browser
  let pageUrl: string
  let spaceId: number

  before(async () => {
    const { alice, s } = await alicePublishedSpace(t, {
      title: 'Open <Garden>', description: 'All welcome', visibility: 40
    })
    spaceId = s.id as number
    for (const [title, start, cancelled] of [
      ['Seed swap', '2099-04-01T08:00:00Z', false],
      ['Pruning workshop', '2099-05-01T15:30:00Z', true]
    ] as const) {
      const id = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title, start_dt: start, timezone: 'America/New_York', address: '12 Garden Lane', visibility: 40
      })).json().id as number
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/publish`, 204)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${spaceId}/events`, 201, { event_id: id })
      if (cancelled) {
        await t.ctx.db.updateTable('events').set({ cancelled_at: new Date() }).where('id', '=', id).execute()
      }
    }
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = t.app.server.address() as AddressInfo
    pageUrl = `http://127.0.0.1:${port}/api/v1/public/spaces/${spaceId}`
    browser = await chromium.launch({ executablePath: executable, args: ['--no-sandbox', '--disable-gpu'] })
  })

  after(async () => {
    await browser?.close()
  })

  void it('renders the events, the calendar link and the JSON-LD; axe finds nothing serious', async () => {
    // the browser's own Accept (text/html first) picks the HTML of the JSON page's address
    const context = await browser.newContext({ bypassCSP: true })
    const page = await context.newPage()
    const res = await page.goto(pageUrl)
    assert.equal(res?.status(), 200)
    assert.match(String(res?.headers()['content-type']), /^text\/html/)

    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Open <Garden>')
    assert.equal(await page.getByRole('heading', { level: 2, name: 'Upcoming events' }).count(), 1)
    const events = page.getByRole('main').getByRole('listitem')
    assert.equal(await events.count(), 2)
    assert.equal(await page.getByRole('heading', { level: 3, name: 'Seed swap' }).count(), 1)
    // 08:00 UTC is 04:00 in New York (daylight saving time)
    assert.equal(await events.first().locator('time').first().getAttribute('datetime'), '2099-04-01T08:00:00.000Z')
    assert.match(await events.first().locator('time').first().innerText(), /04:00/)
    assert.match(await events.nth(1).innerText(), /Cancelled/)
    assert.equal(await page.getByRole('banner').count(), 1)
    assert.equal(await page.getByRole('contentinfo').count(), 1)

    const calendar = page.getByRole('link', { name: /^Add to calendar/ })
    assert.equal(await calendar.getAttribute('href'), `/api/v1/spaces/${spaceId}/calendar.ics`)

    const ld = JSON.parse(await page.locator('script[type="application/ld+json"]').textContent() ?? '')
    assert.deepEqual(
      ld['@graph'].map((e: Record<string, string>) => [e.name, e.eventStatus]),
      [['Seed swap', 'https://schema.org/EventScheduled'], ['Pruning workshop', 'https://schema.org/EventCancelled']]
    )

    const axe = fs.readFileSync(path.join(import.meta.dirname, '../node_modules/axe-core/axe.min.js'), 'utf8')
    await page.addScriptTag({ content: axe })
    const violations = await page.evaluate(async () => {
      const result = await (globalThis as unknown as {
        axe: { run: () => Promise<{ violations: Array<{ id: string, impact: string | null, help: string }> }> }
      }).axe.run()
      return result.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help }))
    })
    const serious = violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    assert.deepEqual(serious, [], JSON.stringify(violations))
    await context.close()
  })

  void it('keeps the CSP: no inline script runs on the page, and the page needs none', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const blocked: string[] = []
    page.on('console', m => { if (m.type() === 'error') blocked.push(m.text()) })
    const res = await page.goto(`${pageUrl}/page.html`)
    assert.equal(res?.status(), 200)
    assert.equal(blocked.length, 0, blocked.join('\n'))
    // (a string: the test is typechecked without the DOM's types)
    const ran = await page.evaluate(`(() => {
      const s = document.createElement('script')
      s.textContent = 'document.body.dataset.ran = "yes"'
      document.body.append(s)
      return document.body.dataset.ran ?? 'no'
    })()`)
    assert.equal(ran, 'no', 'an injected inline script is refused by the CSP')
    await context.close()
  })
})

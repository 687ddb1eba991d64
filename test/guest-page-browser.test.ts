/**
 * The public page of an event in a real browser (headless Chromium driven by playwright-core): axe-core finds no
 * accessibility violation of any impact on the page (with a registration question of every type), on the page
 * answering a field and an answer to correct, and on the page answering the registration, with JavaScript on and off;
 * the form, every question answered, works without JavaScript and the answers reach the attendee list; the CSP blocks
 * nothing the page needs; and a site on the allow list of the event's space frames the page while another site's
 * frame is refused (frame-ancestors). Needs a `chromium` binary (Debian's package; `.ci/run` installs it, or set
 * CHROMIUM_PATH); without one the suite is skipped with a message, so `npm test` passes on a machine without it.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core'
import { message } from '../src/platform/i18n/i18n.ts'
import { alicePublishedSpace } from '../src/modules/spaces/spaces.fixtures.ts'
import { useTestApp } from './helpers/build-app.ts'
import { chromiumOrSkip } from './helpers/chromium.ts'
import { expectStatus } from './helpers/requests.ts'

const { executable, skip } = chromiumOrSkip()

const TITLE = 'Seed <swap> & "friends"'
const CONSENT = 'I agree to be photographed <sometimes> & "filmed".'

/** The event's registration form: a question of every type (docs/guests.md, "Questions"). */
const QUESTIONS = [
  {
    id: 'diet',
    type: 'single_choice',
    label: 'Diet',
    required: true,
    help: 'For the <shared> lunch.',
    options: [{ id: 'any', label: 'Anything' }, { id: 'veg', label: 'Vegetarian' }]
  },
  {
    id: 'voices',
    type: 'multiple_choice',
    label: 'Voices',
    options: [{ id: 'alto', label: 'Alto' }, { id: 'soprano', label: 'Soprano' }, { id: 'tenor', label: 'Tenor' }]
  },
  { id: 'photos', type: 'checkbox', label: 'Photos', required: true, consent_text: CONSENT },
  { id: 'news', type: 'checkbox', label: 'Newsletter', help: 'A mail a month.' },
  { id: 'nick', type: 'short_text', label: 'Nickname', max_length: 30 },
  { id: 'note', type: 'long_text', label: 'Note', help: 'Anything else we should know?' },
  { id: 'age', type: 'number', label: 'Age', required: true, min: 0, max: 120 },
  { id: 'day', type: 'date', label: 'Arrival day', min_date: '2099-03-01', max_date: '2099-04-01' },
  { id: 'phone', type: 'phone', label: 'Phone' },
  { id: 'buddy', type: 'email', label: 'A friend’s address' }
]
const AXE = fs.readFileSync(path.join(import.meta.dirname, '../node_modules/axe-core/axe.min.js'), 'utf8')

/** A tiny site of its own (another origin) whose one page frames `src`. */
async function embeddingSite (src: string): Promise<{ origin: string, close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end('<!doctype html><html lang="en"><head><title>Organiser</title></head><body><main><h1>Our events</h1>' +
      `<iframe src="${src}" title="Register for ${TITLE.replace(/[<>&"]/g, '')}" width="600" height="800"></iframe>` +
      '</main></body></html>')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => { await new Promise<void>(resolve => { server.close(() => { resolve() }) }) }
  }
}

type Violation = { id: string, impact: string | null, nodes: string[] }

/** Every axe-core violation of the page, whatever its impact (axe's source evaluated: no script tag, any CSP). */
async function violations (page: Page): Promise<Violation[]> {
  // (a string: the test is typechecked without the DOM's types)
  return await page.evaluate(`(async () => {
    ${AXE}
    const result = await axe.run(document)
    return result.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html) }))
  })()`)
}

void describe('the public event page in headless Chromium', { skip, timeout: 120_000 }, () => {
  const t = useTestApp('pglite')
  let browser: Browser
  let alice: string
  let eventId: number
  let pageUrl: string
  let allowed: Awaited<ReturnType<typeof embeddingSite>>
  let other: Awaited<ReturnType<typeof embeddingSite>>

  before(async () => {
    const made = await alicePublishedSpace(t, { title: 'Open garden', visibility: 40 })
    alice = made.alice
    eventId = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
      title: TITLE,
      description: 'Bring seeds, take seeds.',
      start_dt: '2099-04-01T08:00:00Z',
      end_dt: '2099-04-01T10:00:00Z',
      timezone: 'America/New_York',
      address: '12 Garden Lane',
      visibility: 40
    })).json().id as number
    await expectStatus(t, alice, 'POST', `/api/v1/events/${eventId}/publish`, 204)
    await expectStatus(t, alice, 'PATCH', `/api/v1/events/${eventId}/registration`, 200,
      { public_registration: true, capacity: 30 })
    await expectStatus(t, alice, 'PUT', `/api/v1/events/${eventId}/registration/form`, 200, { questions: QUESTIONS })
    await expectStatus(t, alice, 'POST', `/api/v1/spaces/${made.s.id as number}/events`, 201, { event_id: eventId })
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = t.app.server.address() as AddressInfo
    pageUrl = `http://127.0.0.1:${port}/api/v1/public/events/${eventId}/page.html`
    allowed = await embeddingSite(pageUrl)
    other = await embeddingSite(pageUrl)
    await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${made.s.id as number}/embed-origins`, 200,
      { origins: [allowed.origin] })
    browser = await chromium.launch({ executablePath: executable, args: ['--no-sandbox', '--disable-gpu'] })
  })

  after(async () => {
    await browser?.close()
    await allowed?.close()
    await other?.close()
  })

  const listed = async (): Promise<Array<{ status: string, answers: Record<string, unknown> | null }>> =>
    (await expectStatus(t, alice, 'GET', `/api/v1/events/${eventId}/attendees?size=100`, 200)).json().items
  const registered = async (): Promise<string[]> => (await listed()).map(a => a.status)

  /** The answers `registerThroughPage` gives, as the attendee list shows them (a browser sends a newline as CRLF). */
  const ANSWERED = {
    diet: 'veg',
    voices: ['alto', 'tenor'],
    photos: { value: true, text: CONSENT },
    news: true,
    nick: 'Kim <K>',
    note: 'Line one\r\nLine "two"',
    age: 42,
    day: '2099-03-15',
    phone: '+4930901820',
    buddy: 'lee@example.org'
  }

  /**
   * The violations of what `page` shows. With JavaScript off, axe (which needs timers) runs on the same document in
   * a page of its own with JavaScript on: the page runs no script, so it is the same document either way.
   */
  async function violationsOf (page: Page, javaScript: boolean): Promise<Violation[]> {
    if (javaScript) return await violations(page)
    const context = await browser.newContext()
    const copy = await context.newPage()
    await copy.setContent(await page.content())
    try {
      return await violations(copy)
    } finally {
      await context.close()
    }
  }

  /** Registers through the page in a context of `options`: a field to correct first, then the registration. */
  async function registerThroughPage (options: BrowserContextOptions, lang: 'en' | 'de', email: string) {
    const context = await browser.newContext(options)
    const javaScript = options.javaScriptEnabled !== false
    const page = await context.newPage()
    const errors: string[] = []
    // a 400 answer is expected below; anything else the console says (a CSP refusal) is not
    page.on('console', m => { if (m.type() === 'error' && !/status of 400/.test(m.text())) errors.push(m.text()) })
    const res = await page.goto(`${pageUrl}?lang=${lang}`)
    assert.equal(res?.status(), 200)
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), TITLE)
    assert.deepEqual(await violationsOf(page, javaScript), [], 'the page')

    // every question answered, as a person does: by the labels (a required question's says so)
    const required = (label: string) => `${label} ${message(lang, 'page.form.required')}`
    const diet = page.getByRole('group', { name: required('Diet') })
    assert.equal(await diet.getByRole('radio').count(), 2)
    await diet.getByLabel('Vegetarian', { exact: true }).check()
    const voices = page.getByRole('group', { name: 'Voices', exact: true })
    for (const voice of ['Alto', 'Tenor']) await voices.getByLabel(voice, { exact: true }).check()
    await page.getByRole('group', { name: required('Photos') }).getByLabel(CONSENT, { exact: true }).check()
    await page.getByLabel('Newsletter', { exact: true }).check()
    await page.getByLabel('Nickname', { exact: true }).fill('Kim <K>')
    await page.getByLabel('Note', { exact: true }).fill('Line one\nLine "two"')
    await page.getByLabel(required('Age'), { exact: true }).fill('42')
    await page.getByLabel('Arrival day', { exact: true }).fill('2099-03-15')
    await page.getByLabel('A friend’s address', { exact: true }).fill('lee@example.org')
    // an address and a phone number the browser takes (type=email, type=tel) and the service does not: each
    // message next to its field, the first focused
    await page.getByLabel('Phone', { exact: true }).fill('12')
    await page.getByLabel(message(lang, 'page.form.name')).fill('Kim <Park>')
    await page.getByLabel(message(lang, 'page.form.email')).fill('kim@localhost')
    const [refused] = await Promise.all([
      page.waitForResponse(r => r.request().method() === 'POST'),
      page.getByRole('button', { name: message(lang, 'page.form.submit') }).click()
    ])
    assert.equal(refused.status(), 400)
    await page.waitForLoadState()
    const field = page.getByLabel(message(lang, 'page.form.email'))
    const phone = page.getByLabel('Phone', { exact: true })
    for (const [input, error] of [[field, 'error.email_invalid'], [phone, 'error.phone_invalid']] as const) {
      assert.equal(await input.getAttribute('aria-invalid'), 'true')
      const described = await input.getAttribute('aria-describedby')
      assert.equal(await page.locator(`#${described ?? ''}`).textContent(), message(lang, error))
    }
    if (javaScript) assert.equal(await page.evaluate('document.activeElement?.id'), await field.getAttribute('id'))
    // what was typed and chosen, kept
    assert.equal(await field.inputValue(), 'kim@localhost')
    assert.equal(await phone.inputValue(), '12')
    assert.equal(await page.getByLabel(message(lang, 'page.form.name')).inputValue(), 'Kim <Park>')
    assert.equal(await page.getByLabel('Vegetarian', { exact: true }).isChecked(), true)
    assert.deepEqual(await Promise.all(['Alto', 'Soprano', 'Tenor'].map(async v =>
      await page.getByLabel(v, { exact: true }).isChecked())), [true, false, true])
    assert.equal(await page.getByLabel(CONSENT, { exact: true }).isChecked(), true)
    assert.equal(await page.getByLabel('Newsletter', { exact: true }).isChecked(), true)
    assert.equal(await page.getByLabel('Nickname', { exact: true }).inputValue(), 'Kim <K>')
    assert.equal((await page.getByLabel('Note', { exact: true }).inputValue()).replace(/\r\n/g, '\n'),
      'Line one\nLine "two"')
    assert.equal(await page.getByLabel(required('Age'), { exact: true }).inputValue(), '42')
    assert.equal(await page.getByLabel('Arrival day', { exact: true }).inputValue(), '2099-03-15')
    assert.equal(await page.getByLabel('A friend’s address', { exact: true }).inputValue(), 'lee@example.org')
    assert.deepEqual(await violationsOf(page, javaScript), [], 'the page with a field and an answer to correct')

    await phone.fill('+49 30 901820')
    await field.fill(email)
    const [taken] = await Promise.all([
      page.waitForResponse(r => r.request().method() === 'POST'),
      page.getByRole('button', { name: message(lang, 'page.form.submit') }).click()
    ])
    assert.equal(taken.status(), 200)
    await page.waitForLoadState()
    const status = page.getByRole('status')
    assert.equal(await status.textContent(), message(lang, 'registration.accepted'))
    assert.ok(await status.isVisible())
    assert.deepEqual(await violationsOf(page, javaScript), [], 'the page after the registration')
    assert.deepEqual(errors, [], 'the browser reports nothing (no CSP violation)')
    await context.close()
  }

  void it('has no accessibility violation, and takes a registration with its answers, with JavaScript on',
    async () => {
      await registerThroughPage({}, 'en', `kim-${crypto.randomUUID()}@example.test`)
      assert.deepEqual(await registered(), ['awaiting_confirmation'])
      assert.deepEqual((await listed()).map(a => a.answers), [ANSWERED])
    })

  void it('has no accessibility violation, and takes a registration with its answers, with JavaScript off',
    async () => {
      await registerThroughPage({ javaScriptEnabled: false }, 'de', `lea-${crypto.randomUUID()}@example.test`)
      assert.deepEqual(await registered(), ['awaiting_confirmation', 'awaiting_confirmation'])
      assert.deepEqual((await listed()).map(a => a.answers), [ANSWERED, ANSWERED])
    })

  void it('runs no script: an injected inline script is refused by the CSP', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(pageUrl)
    const ran = await page.evaluate(`(() => {
      const s = document.createElement('script')
      s.textContent = 'document.body.dataset.ran = "yes"'
      document.body.append(s)
      return document.body.dataset.ran ?? 'no'
    })()`)
    assert.equal(ran, 'no')
    await context.close()
  })

  void it('is framed by a site on the allow list of its space, and refused in the frame of another', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${allowed.origin}/`)
    const frame = page.frameLocator('iframe')
    await frame.getByRole('heading', { level: 1 }).waitFor()
    assert.equal(await frame.getByRole('heading', { level: 1 }).textContent(), TITLE)
    assert.equal(await frame.locator(`form[action="/api/v1/public/events/${eventId}/page.html"]`).count(), 1)

    // a guest registers through the embedded form: its answer shows in the frame, the registration is taken
    const before = (await registered()).length
    const required = (label: string) => `${label} ${message('en', 'page.form.required')}`
    await frame.getByRole('group', { name: required('Diet') }).getByLabel('Vegetarian', { exact: true }).check()
    await frame.getByRole('group', { name: required('Photos') }).getByLabel(CONSENT, { exact: true }).check()
    await frame.getByLabel(required('Age'), { exact: true }).fill('30')
    await frame.getByLabel(message('en', 'page.form.name')).fill('Embedded Guest')
    await frame.getByLabel(message('en', 'page.form.email')).fill(`framed-${crypto.randomUUID()}@example.test`)
    await frame.getByRole('button', { name: message('en', 'page.form.submit') }).click()
    await frame.getByRole('status').waitFor()
    assert.equal(await frame.getByRole('status').textContent(), message('en', 'registration.accepted'))
    assert.equal((await registered()).length, before + 1)

    const refusals: string[] = []
    page.on('console', m => { if (/frame-ancestors/.test(m.text())) refusals.push(m.text()) })
    await page.goto(`${other.origin}/`)
    await page.waitForLoadState('load')
    // Chromium puts its error page in the frame: the event's page (and its form) is not shown there
    const framed = page.frames().find(f => f !== page.mainFrame())
    assert.ok(framed !== undefined)
    await framed.waitForLoadState('load')
    assert.match(framed.url(), /^chrome-error:/)
    assert.equal(await framed.locator(`form[action="/api/v1/public/events/${eventId}/page.html"]`).count(), 0)
    assert.equal(await framed.getByText(TITLE).count(), 0)
    await page.waitForTimeout(200)
    assert.ok(refusals.some(r => r.includes(`frame-ancestors ${allowed.origin}`)), refusals.join('\n'))
    await context.close()
  })
})

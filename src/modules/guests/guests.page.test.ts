/**
 * The public page of an event (docs/guests.md, "The public page"): JSON and HTML of a published public event only,
 * everything typed escaped, OpenGraph, canonical and JSON-LD that parse to what the event says, framing allowed from
 * the allow lists of its public spaces, and the registration form posted without JavaScript, with the questions of
 * the event's registration form: taken as the JSON route takes it, or answered with each problem next to its field
 * or question in the guest's language, what the guest typed and chose kept.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { message } from '../../platform/i18n/i18n.ts'
import { createSpace, publish } from '../spaces/spaces.fixtures.ts'

type Json = Record<string, any>

const HOUR = 3_600_000
const TITLE = 'Choir <script>alert(1)</script> & "friends"'
const ADDRESS = 'Town hall </script><b>1</b>'
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
const BASE = 'http://localhost:8080'
const FORM = 'application/x-www-form-urlencoded'

/** The JSON-LD data blocks of an HTML page, parsed. */
const jsonLd = (html: string): Json[] =>
  [...html.matchAll(/<script type="application\/ld\+json">([^<]*)<\/script>/g)].map(m => JSON.parse(m[1] ?? ''))

/** The content of a `<meta>` (property or name) of a page, with the escapes of an attribute undone. */
function metaOf (html: string, key: string): string | undefined {
  const m = new RegExp(`<meta (?:property|name)="${key}" content="([^"]*)">`).exec(html)
  return m?.[1]?.replace(/&quot;/g, '"').replace(/&#39;/g, '\'').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}

/** A form with a question of every type, its texts hostile (docs/guests.md, "Questions"). */
const QUESTIONS: Json[] = [
  {
    id: 'diet',
    type: 'single_choice',
    label: 'Diet <i>',
    required: true,
    help: 'Tell </p><script>x()</script> us',
    options: [{ id: 'any', label: 'Anything' }, { id: 'veg', label: 'Veg "green" <b>leafy</b>' }]
  },
  {
    id: 'topics',
    type: 'multiple_choice',
    label: 'Topics',
    options: [{ id: 'alto', label: 'Alto' }, { id: 'soprano', label: 'Soprano' }, { id: 'tenor', label: 'Tenor' }]
  },
  { id: 'photos', type: 'checkbox', label: 'Photos', required: true, consent_text: 'I agree to <photos> & "films".' },
  { id: 'news', type: 'checkbox', label: 'Newsletter' },
  { id: 'nick', type: 'short_text', label: 'Nickname', max_length: 30 },
  { id: 'note', type: 'long_text', label: 'Note', help: 'Anything else?' },
  { id: 'age', type: 'number', label: 'Age', required: true, min: 0, max: 120 },
  { id: 'day', type: 'date', label: 'Arrival', min_date: '2030-01-01', max_date: '2030-12-31' },
  { id: 'phone', type: 'phone', label: 'Phone' },
  { id: 'buddy', type: 'email', label: 'A friend\'s address' }
]

/** A published event of alice's, tomorrow, with its registration settings; public unless asked otherwise. */
async function publicEvent (t: TestApp, registration: Json = { public_registration: true },
  o: { visibility?: number, publish?: boolean, body?: Json } = {}) {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice', ['member'], { email: 'alice@example.org' })
  await t.ctx.db.insertInto('users')
    .values({ tenant_id: tenant.id, id: 'alice', display_name: 'Alice <Organizer>', email: 'alice@example.org' })
    .onConflict(oc => oc.columns(['tenant_id', 'id']).doUpdateSet({ display_name: 'Alice <Organizer>' }))
    .execute()
  const start = new Date(Math.floor((Date.now() + 24 * HOUR) / 1000) * 1000)
  const id = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
    title: TITLE,
    description: 'Songs of the season.\nBring a friend.',
    start_dt: start.toISOString(),
    end_dt: new Date(start.getTime() + 2 * HOUR).toISOString(),
    timezone: 'Europe/Berlin',
    address: ADDRESS,
    visibility: o.visibility ?? 40,
    ...o.body
  })).json().id as number
  if (o.publish !== false) await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/publish`, 204)
  await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, registration)
  return { tenant, alice, id, start }
}

for (const kind of databases()) {
  void describe(`${kind}: the public page of an event`, () => {
    const t = useTestApp(kind)

    const get = async (url: string, headers: Json = {}) => await t.app.inject({ method: 'GET', url, headers })
    const post = async (id: number, fields: Record<string, string> | Array<[string, string]>, headers: Json = {}) =>
      await t.app.inject({
        method: 'POST',
        url: `/api/v1/public/events/${id}/page.html`,
        payload: new URLSearchParams(fields).toString(),
        headers: { 'content-type': FORM, accept: BROWSER, ...headers }
      })
    const attendees = async (token: string, id: number): Promise<Json[]> =>
      (await expectStatus(t, token, 'GET', `/api/v1/events/${id}/attendees?size=100`, 200)).json().items

    void it('answers JSON, and HTML to a browser or at page.html, escaping what organisers typed, with ' +
      'OpenGraph, Twitter, canonical and JSON-LD tags', async () => {
      const { id, start } = await publicEvent(t, { public_registration: true, capacity: 10 })
      const url = `/api/v1/public/events/${id}`
      const pageUrl = `${BASE}${url}/page.html`

      const json = await get(url)
      assert.equal(json.statusCode, 200, json.body)
      assert.match(String(json.headers['content-type']), /^application\/json/)
      assert.match(String(json.headers.vary), /Accept/)
      assert.equal(json.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
      const { $schema: _schema, ...page } = json.json()
      assert.deepEqual(page, {
        id,
        title: TITLE,
        description: 'Songs of the season.\nBring a friend.',
        start_dt: start.toISOString(),
        end_dt: new Date(start.getTime() + 2 * HOUR).toISOString(),
        timezone: 'Europe/Berlin',
        address: ADDRESS,
        latitude: null,
        longitude: null,
        cancelled: false,
        organizer: { name: 'Alice <Organizer>' },
        spaces: [],
        registration: {
          open: true,
          reason: null,
          opens_at: null,
          closes_at: start.toISOString(),
          seats_left: 10,
          waitlist: false,
          double_opt_in: true
        },
        page_url: pageUrl,
        register_url: `${BASE}${url}/registrations`
      })
      assert.equal(json.body.includes('alice@example.org'), false, 'never an e-mail address')
      const unchanged = await get(url, { 'if-none-match': String(json.headers.etag) })
      assert.deepEqual([unchanged.statusCode, unchanged.body], [304, ''])

      const pages = [await get(url, { accept: BROWSER }), await get(`${url}/page.html`)]
      for (const res of pages) {
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
        const csp = String(res.headers['content-security-policy'])
        assert.match(csp, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; base-uri 'none'; /)
        assert.match(csp, /form-action 'self'; frame-ancestors 'none'$/)
        assert.equal(res.headers['x-content-type-options'], 'nosniff')
        assert.equal(res.headers['referrer-policy'], 'no-referrer')
        assert.equal(res.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
        assert.match(String(res.headers.vary), /Accept-Language/)
        const html = res.body
        assert.match(html, /^<!doctype html>\n<html lang="en">/)
        assert.equal(html.includes('<script>alert(1)'), false, 'no typed markup gets through')
        assert.equal(html.includes('<b>1</b>'), false)
        assert.ok(html.includes('<h1>Choir &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;friends&quot;</h1>'))
        assert.ok(html.includes('<dd>Alice &lt;Organizer&gt;</dd>'))
        assert.equal((html.match(/<script/g) ?? []).length, 1, 'the JSON-LD is the one script element')
        assert.equal(html.includes('alice@example.org'), false)
        assert.ok(html.includes(`<link rel="canonical" href="${pageUrl}">`))
        assert.deepEqual(
          ['og:type', 'og:title', 'og:url', 'og:description', 'twitter:card', 'twitter:title']
            .map(k => metaOf(html, k)),
          ['website', TITLE, pageUrl, 'Songs of the season.\nBring a friend.', 'summary', TITLE])
        assert.ok(html.includes(`<time datetime="${start.toISOString()}">`))
        assert.ok(html.includes(message('en', 'mail.seats_left', { count: 10 })))
        // the form: posted to the page itself, the honeypot present but hidden from people and assistive technology
        assert.ok(html.includes(`<form method="post" action="/api/v1/public/events/${id}/page.html"`))
        assert.match(html, /<div class="hp" aria-hidden="true"><label for="reg-website">[^<]+<\/label><input id=/)
        assert.match(html, /<input id="reg-website" name="website" type="text" tabindex="-1" autocomplete="off"/)
        assert.match(html, /<input type="hidden" name="locale" value="en">/)

        const [ld] = jsonLd(html)
        assert.deepEqual(ld, {
          '@context': 'https://schema.org',
          '@type': 'Event',
          name: TITLE,
          description: 'Songs of the season.\nBring a friend.',
          startDate: start.toISOString(),
          endDate: new Date(start.getTime() + 2 * HOUR).toISOString(),
          eventStatus: 'https://schema.org/EventScheduled',
          eventAttendanceMode: 'https://schema.org/OfflineEventAttendanceMode',
          location: { '@type': 'Place', name: ADDRESS, address: ADDRESS },
          organizer: { '@type': 'Person', name: 'Alice <Organizer>' },
          offers: {
            '@type': 'Offer',
            price: 0,
            priceCurrency: 'EUR',
            availability: 'https://schema.org/InStock',
            url: pageUrl
          },
          url: pageUrl
        })
      }
      const [html] = pages
      assert.notEqual(html?.headers.etag, json.headers.etag)
      const again = await get(`${url}/page.html`, { 'if-none-match': String(html?.headers.etag) })
      assert.deepEqual([again.statusCode, again.body], [304, ''])

      // the language: Accept-Language, or ?lang=
      const de = await get(`${url}/page.html`, { 'accept-language': 'de-AT,de;q=0.9' })
      assert.match(de.body, /^<!doctype html>\n<html lang="de">/)
      assert.ok(de.body.includes(`<label for="reg-name">${message('de', 'page.form.name')} ` +
        `<span class="req">${message('de', 'page.form.required')}</span></label>`))
      assert.notEqual(de.headers.etag, html?.headers.etag)
      const fr = await get(`${url}/page.html?lang=fr`, { 'accept-language': 'de' })
      assert.match(fr.body, /<html lang="fr">/)
      assert.equal((await get(`${url}/page.html?lang=xx`)).statusCode, 400)
    })

    void it('shows an online event as a VirtualLocation and a cancelled one as EventCancelled', async () => {
      const { alice, id } = await publicEvent(t, { public_registration: true, capacity: 1, waitlist_enabled: true },
        { body: { address: null } })
      // one seat, taken: a guest joins the waitlist
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, { double_opt_in: false })
      assert.equal((await post(id, { name: 'First', email: `f-${crypto.randomUUID()}@example.test` })).statusCode, 200)
      const full = await get(`/api/v1/public/events/${id}/page.html`)
      const [ld] = jsonLd(full.body)
      assert.deepEqual([ld?.eventAttendanceMode, ld?.location, ld?.offers.availability], [
        'https://schema.org/OnlineEventAttendanceMode',
        { '@type': 'VirtualLocation', url: `${BASE}/api/v1/public/events/${id}/page.html` },
        'https://schema.org/BackOrder'
      ])
      assert.ok(full.body.includes(message('en', 'page.waitlist')))
      assert.ok(full.body.includes(`<dd>${message('en', 'where.online')}</dd>`))
      assert.equal((await get(`/api/v1/public/events/${id}`)).json().registration.seats_left, 0)

      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/cancel`, 200, { reason: 'Storm' })
      const cancelled = await get(`/api/v1/public/events/${id}/page.html`)
      const [gone] = jsonLd(cancelled.body)
      assert.deepEqual([gone?.eventStatus, gone?.offers.availability],
        ['https://schema.org/EventCancelled', 'https://schema.org/SoldOut'])
      assert.ok(cancelled.body.includes(`<p class="cancelled">${message('en', 'error.event_cancelled')}</p>`))
      assert.equal(cancelled.body.includes('<form'), false)
      assert.deepEqual((await get(`/api/v1/public/events/${id}`)).json().registration.reason, 'cancelled')
    })

    void it('answers 404 for a private, draft, deleted or unknown event, on every address', async () => {
      const hidden = await publicEvent(t, { public_registration: true }, { visibility: 20 })
      const draft = await publicEvent(t, { public_registration: true }, { publish: false })
      const deleted = await publicEvent(t, { public_registration: true })
      await expectStatus(t, deleted.alice, 'DELETE', `/api/v1/events/${deleted.id}`, 204)
      for (const id of [hidden.id, draft.id, deleted.id, 999_999_999]) {
        for (const res of [
          await get(`/api/v1/public/events/${id}`),
          await get(`/api/v1/public/events/${id}`, { accept: BROWSER }),
          await get(`/api/v1/public/events/${id}/page.html`),
          await post(id, { name: 'Max', email: 'max@example.test', website: '' })
        ]) {
          assert.equal(res.statusCode, 404, `${id}: ${res.body}`)
          assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
          assert.equal(res.json().detail, message('en', 'error.event_not_found'))
        }
      }
      assert.equal((await attendees(hidden.alice, hidden.id)).length, 0)
    })

    void it('lets the sites on the allow lists of its public spaces frame the page (none by default), and links ' +
      'the page from the spaces\' public pages', async () => {
      const { tenant, alice, id } = await publicEvent(t)
      const spaces: number[] = []
      for (const visibility of [40, 40, 20]) {
        const s = await createSpace(t, alice, { title: `Space ${visibility} <i>`, visibility })
        await publish(t, alice, s.id)
        await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id as number}/events`, 201, { event_id: id })
        spaces.push(s.id)
      }
      const [a, b, hidden] = spaces as [number, number, number]
      const frameAncestors = async () => /frame-ancestors ([^;]+)$/
        .exec(String((await get(`/api/v1/public/events/${id}/page.html`)).headers['content-security-policy']))?.[1]
      assert.equal(await frameAncestors(), "'none'", 'nobody frames the page by default')

      const set = await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${a}/embed-origins`, 200,
        { origins: ['https://Www.Example.org/', 'http://localhost:3000', 'https://www.example.org'] })
      assert.deepEqual(set.json().origins, ['https://www.example.org', 'http://localhost:3000'])
      await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${b}/embed-origins`, 200,
        { origins: ['https://events.example.net:8443', 'https://www.example.org'] })
      await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${hidden}/embed-origins`, 200,
        { origins: ['https://private.example.com'] })
      assert.equal(await frameAncestors(),
        'https://www.example.org http://localhost:3000 https://events.example.net:8443',
        'the union of the lists of the public spaces, each origin once; a members-only space has no say')
      const got = await expectStatus(t, alice, 'GET', `/api/v1/spaces/${b}/embed-origins`, 200)
      assert.deepEqual(got.json().origins, ['https://events.example.net:8443', 'https://www.example.org'])

      // what a manager may set: origins only, https (http on localhost), at most 20
      for (const [origins, location] of [
        [['https://www.example.org/events'], 'body.origins[0]'],
        [['https://ok.example.org', 'http://www.example.org'], 'body.origins[1]'],
        [['https://*.example.org'], 'body.origins[0]'],
        [['https://a.example.org;script-src *'], 'body.origins[0]'],
        [Array.from({ length: 21 }, (_v, i) => `https://s${i}.example.org`), 'body.origins']
      ] as const) {
        const refused = await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${a}/embed-origins`, 400, { origins })
        assert.equal(refused.json().errors[0].location, location, JSON.stringify(origins))
      }
      // a member who sees the space but does not manage it, and a caller of another tenant
      const carol = await tenant.user('carol')
      await expectStatus(t, carol, 'GET', `/api/v1/spaces/${a}/embed-origins`, 200)
      await expectStatus(t, carol, 'PUT', `/api/v1/spaces/${a}/embed-origins`, 403, { origins: [] })
      const bob = await newTenant(t).user('bob')
      await expectStatus(t, bob, 'PUT', `/api/v1/spaces/${a}/embed-origins`, 404, { origins: [] })

      // the JSON page names the public spaces only, with their pages
      const page = (await get(`/api/v1/public/events/${id}`)).json()
      assert.deepEqual(page.spaces, [a, b].map(s =>
        ({ id: s, title: 'Space 40 <i>', page_url: `${BASE}/api/v1/public/spaces/${s}/page.html` })))
      const html = (await get(`/api/v1/public/events/${id}/page.html`)).body
      assert.ok(html.includes(`<li><a href="/api/v1/public/spaces/${a}/page.html">Space 40 &lt;i&gt;</a></li>`))

      // the space's public page links the event's page
      const spacePage = (await get(`/api/v1/public/spaces/${a}`)).json()
      assert.deepEqual(spacePage.upcoming_events.map((e: Json) => [e.id, e.page_url]),
        [[id, `${BASE}/api/v1/public/events/${id}/page.html`]])
      const spaceHtml = (await get(`/api/v1/public/spaces/${a}/page.html`)).body
      assert.ok(spaceHtml.includes(`<a href="/api/v1/public/events/${id}/page.html">Choir &lt;script&gt;`))

      // back to none
      await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${a}/embed-origins`, 200, { origins: [] })
      await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${b}/embed-origins`, 200, { origins: [] })
      assert.equal(await frameAncestors(), "'none'")
    })

    void it('takes a registration from the form without JavaScript, as the JSON route does', async () => {
      const { alice, id } = await publicEvent(t, { public_registration: true, capacity: 5 })
      const kim = `kim-${crypto.randomUUID()}@example.test`
      const res = await post(id, { name: 'Kim Park', email: kim, website: '', locale: 'en' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
      assert.equal(res.headers['cache-control'], 'no-store')
      assert.match(String(res.headers['content-security-policy']), /form-action 'self'/)
      assert.ok(res.body.includes(`<p class="success" role="status">${message('en', 'registration.accepted')}</p>`))
      assert.equal(res.body.includes('<form'), false)
      assert.equal(res.body.includes(kim), false, 'the address is not shown back')
      const listed = await attendees(alice, id)
      assert.deepEqual(listed.map(a => [a.status, a.source, a.locale]),
        [['awaiting_confirmation', 'registration', 'en']])
      const contact = (await expectStatus(t, alice, 'GET', `/api/v1/contacts/${listed[0]?.contact_id as string}`, 200))
        .json()
      assert.deepEqual([contact.first_name, contact.last_name, contact.email], ['Kim', 'Park', kim])
      // the same address again: the same answer (only the mail tells)
      const again = await post(id, { name: 'Kim', email: kim, website: '', locale: 'en' })
      assert.equal(again.statusCode, 200)
      assert.ok(again.body.includes(message('en', 'registration.accepted')))
      assert.equal((await attendees(alice, id)).length, 1)
    })

    void it('answers a field to correct with the page again: the message next to the field, in the guest\'s ' +
      'language, what they typed kept; a filled honeypot is answered as a success and stores nothing', async () => {
      const { alice, id } = await publicEvent(t)
      const bad = await post(id, { name: 'Jürgen "J" <b>Bold</b>', email: 'not-an-address', website: '' },
        { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(bad.headers['content-type'], 'text/html; charset=utf-8')
      assert.equal(bad.headers['cache-control'], 'no-store')
      const html = bad.body
      assert.match(html, /<html lang="de">/)
      assert.match(html, new RegExp('<input id="reg-email" name="email" type="email" [^>]*value="not-an-address" ' +
        'aria-invalid="true" aria-describedby="reg-email-error" autofocus>' +
        `<p id="reg-email-error" class="error">${message('de', 'error.email_invalid')}</p>`))
      assert.ok(html.includes('value="Jürgen &quot;J&quot; &lt;b&gt;Bold&lt;/b&gt;"'), 'the typed name, escaped')
      assert.equal(html.includes('<b>Bold</b>'), false)
      assert.equal((html.match(/aria-invalid="true"/g) ?? []).length, 1, 'only the field at fault')
      assert.equal(html.includes('role="alert"'), false)
      // the language of the page the form was on wins over Accept-Language
      const es = await post(id, { name: '', email: 'x@example.test', locale: 'es' }, { 'accept-language': 'de' })
      assert.equal(es.statusCode, 400)
      assert.match(es.body, /<html lang="es">/)
      assert.ok(es.body.includes(`<p id="reg-name-error" class="error">${message('es', 'error.required')}</p>`))
      assert.ok(es.body.includes('value="x@example.test"'))

      const bot = `bot-${crypto.randomUUID()}@example.test`
      const trapped = await post(id, { name: 'Bot', email: bot, website: 'http://spam.example' })
      assert.equal(trapped.statusCode, 200)
      assert.ok(trapped.body.includes(message('en', 'registration.accepted')))
      assert.equal((await attendees(alice, id)).length, 0, 'nothing stored')

      // a field that is none of the form's is ignored (an answer field's name is `answers.<question id>`)
      const unknown = await post(id, {
        name: 'A', email: `a-${crypto.randomUUID()}@example.test`, extra: 'x', answers: 'y', 'answers.Bad': 'z'
      })
      assert.equal(unknown.statusCode, 200, unknown.body)
      assert.equal((await attendees(alice, id)).length, 1)
      // not a form of the page: problems, as any API route answers them
      const many = await post(id, [['name', 'A'], ['email', 'a@example.test'],
        ...Array.from({ length: 61 }, (_v, i): [string, string] => [`answers.q${i}`, 'x'])])
      assert.deepEqual([many.statusCode, many.headers['content-type']],
        [400, 'application/problem+json; charset=utf-8'])
      assert.deepEqual(many.json().errors, [{ location: 'body', message: 'at most 60 answer fields' }])
      const repeated = await post(id, [['name', 'A'], ['email', 'a@example.test'],
        ...Array.from({ length: 51 }, (): [string, string] => ['answers.q', 'x'])])
      assert.deepEqual([repeated.statusCode, repeated.headers['content-type']],
        [400, 'application/problem+json; charset=utf-8'])
      const asJson = await t.app.inject({
        method: 'POST',
        url: `/api/v1/public/events/${id}/page.html`,
        payload: { name: 'A', email: 'a@example.test' }
      })
      assert.equal(asJson.statusCode, 415)
      const big = await post(id, { name: 'x'.repeat(20_000), email: 'a@example.test' })
      assert.equal(big.statusCode, 413)
    })

    void it('asks the questions of the event\'s registration form, one field per question by its type, every ' +
      'text escaped; a post with the answers registers the guest with them', async () => {
      const { alice, id } = await publicEvent(t)
      const url = `/api/v1/public/events/${id}/page.html`
      const before = await get(url)
      await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/registration/form`, 200, { questions: QUESTIONS })
      const res = await get(url)
      assert.equal(res.statusCode, 200)
      assert.notEqual(res.headers.etag, before.headers.etag, 'the questions are part of the page\'s version')
      const html = res.body
      const req = `<span class="req">${message('en', 'page.form.required')}</span>`
      const pieces = [
        `<fieldset class="field" aria-describedby="reg-q0-help"><legend>Diet &lt;i&gt; ${req}</legend>` +
          '<p id="reg-q0-help" class="help">Tell &lt;/p&gt;&lt;script&gt;x()&lt;/script&gt; us</p>' +
          '<div class="opt"><input id="reg-q0-o0" name="answers.diet" type="radio" value="any" required>' +
          '<label for="reg-q0-o0">Anything</label></div>' +
          '<div class="opt"><input id="reg-q0-o1" name="answers.diet" type="radio" value="veg" required>' +
          '<label for="reg-q0-o1">Veg &quot;green&quot; &lt;b&gt;leafy&lt;/b&gt;</label></div></fieldset>',
        '<fieldset class="field"><legend>Topics</legend><div class="opt"><input id="reg-q1-o0" ' +
          'name="answers.topics" type="checkbox" value="alto"><label for="reg-q1-o0">Alto</label></div>',
        `<fieldset class="field"><legend>Photos ${req}</legend><div class="opt"><input id="reg-q2" ` +
          'name="answers.photos" type="checkbox" value="on" required><label for="reg-q2">I agree to ' +
          '&lt;photos&gt; &amp; &quot;films&quot;.</label></div></fieldset>',
        '<div class="field"><div class="opt"><input id="reg-q3" name="answers.news" type="checkbox" value="on">' +
          '<label for="reg-q3">Newsletter</label></div></div>',
        '<div class="field"><label for="reg-q4">Nickname</label><input id="reg-q4" name="answers.nick" type="text" ' +
          'maxlength="30" value=""></div>',
        '<div class="field"><label for="reg-q5">Note</label><p id="reg-q5-help" class="help">Anything else?</p>' +
          '<textarea id="reg-q5" name="answers.note" rows="4" maxlength="5000" aria-describedby="reg-q5-help">\n' +
          '</textarea></div>',
        `<label for="reg-q6">Age ${req}</label><input id="reg-q6" name="answers.age" type="number" min="0" ` +
          'max="120" step="any" required value="">',
        '<label for="reg-q7">Arrival</label><input id="reg-q7" name="answers.day" type="date" min="2030-01-01" ' +
          'max="2030-12-31" value="">',
        '<label for="reg-q8">Phone</label><input id="reg-q8" name="answers.phone" type="tel" autocomplete="tel" ' +
          'value="">',
        '<label for="reg-q9">A friend&#39;s address</label><input id="reg-q9" name="answers.buddy" type="email" ' +
          'spellcheck="false" value="">'
      ]
      let at = html.indexOf('<input id="reg-email"')
      for (const piece of pieces) {
        const found = html.indexOf(piece)
        assert.ok(found > at, piece)
        at = found
      }
      assert.ok(html.indexOf('<div class="hp"') > at, 'the questions before the honeypot and the button')
      assert.equal((html.match(/<script/g) ?? []).length, 1, 'the JSON-LD is the one script element')
      for (const typed of ['<b>leafy', '<i>', '<photos>']) assert.equal(html.includes(typed), false, typed)

      // the answers, as a browser posts them: a multiple choice repeated, a ticked box `on`, empty fields empty
      const answers: Array<[string, string]> = [['answers.diet', 'veg'], ['answers.topics', 'alto'],
        ['answers.topics', 'tenor'], ['answers.photos', 'on'], ['answers.nick', 'Kimmy'],
        ['answers.note', 'Line one\nLine two'], ['answers.age', '42'], ['answers.day', '2030-05-01'],
        ['answers.phone', '+49 30 901820'], ['answers.buddy', 'lee@example.org']]
      const kim = `kim-${crypto.randomUUID()}@example.test`
      const ok = await post(id, [['name', 'Kim Park'], ['email', kim], ['website', ''], ['locale', 'en'], ...answers])
      assert.equal(ok.statusCode, 200, ok.body)
      assert.ok(ok.body.includes(`<p class="success" role="status">${message('en', 'registration.accepted')}</p>`))
      const least = await post(id, [['name', 'Lee'], ['email', `lee-${crypto.randomUUID()}@example.test`],
        ['website', ''], ['answers.diet', 'any'], ['answers.photos', 'on'], ['answers.nick', ''],
        ['answers.note', ''], ['answers.age', '0'], ['answers.day', ''], ['answers.phone', ''], ['answers.buddy', '']])
      assert.equal(least.statusCode, 200, least.body)
      const listed = await attendees(alice, id)
      assert.deepEqual(listed.map(a => a.answers), [{
        diet: 'veg',
        topics: ['alto', 'tenor'],
        photos: { value: true, text: 'I agree to <photos> & "films".' },
        nick: 'Kimmy',
        note: 'Line one\nLine two',
        age: 42,
        day: '2030-05-01',
        phone: '+4930901820',
        buddy: 'lee@example.org'
      }, { diet: 'any', photos: { value: true, text: 'I agree to <photos> & "films".' }, age: 0 }])

      // a question whose id names a property of every object is read as any other
      const odd = { id: 'constructor', type: 'multiple_choice', label: 'Odd', options: [{ id: 'x', label: 'X' }] }
      await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/registration/form`, 200,
        { questions: [...QUESTIONS, odd] })
      const none = await post(id, { name: 'Ola', email: `ola-${crypto.randomUUID()}@example.test` })
      assert.equal(none.statusCode, 400, none.body)
      assert.ok(none.body.includes(`<p id="reg-q0-error" class="error">${message('en', 'error.required')}</p>`))
      assert.ok(none.body.includes('name="answers.constructor" type="checkbox" value="x">'))
      const picked = await post(id, [['name', 'Ola'], ['email', 'not-an-address'], ['answers.constructor', 'x']])
      assert.equal(picked.statusCode, 400, picked.body)
      assert.ok(picked.body.includes('name="answers.constructor" type="checkbox" value="x" checked>'))
      assert.equal((await attendees(alice, id)).length, 2)
    })

    void it('answers the answers to correct with the page again: each message next to its question in the ' +
      'guest\'s language, the first focused, everything typed and chosen kept, nothing stored', async () => {
      const { alice, id } = await publicEvent(t)
      await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/registration/form`, 200, { questions: QUESTIONS })
      const lea = `lea-${crypto.randomUUID()}@example.test`
      // no diet chosen, the consent not given
      const bad = await post(id, [['name', 'Lea'], ['email', lea], ['website', ''], ['answers.topics', 'soprano'],
        ['answers.topics', 'tenor'], ['answers.news', 'on'], ['answers.nick', 'Lea <b>'],
        ['answers.note', '\nHallo\n"Welt"'], ['answers.age', '42'], ['answers.day', '2030-02-03'],
        ['answers.phone', '+49 30 901820'], ['answers.buddy', 'x@example.org']],
      { 'accept-language': 'de-DE,de;q=0.9' })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(bad.headers['content-type'], 'text/html; charset=utf-8')
      assert.equal(bad.headers['cache-control'], 'no-store')
      const html = bad.body
      assert.match(html, /<html lang="de">/)
      assert.ok(html.includes('<fieldset class="field" aria-describedby="reg-q0-help reg-q0-error"><legend>Diet ' +
        `&lt;i&gt; <span class="req">${message('de', 'page.form.required')}</span></legend>` +
        '<p id="reg-q0-help" class="help">Tell &lt;/p&gt;&lt;script&gt;x()&lt;/script&gt; us</p>' +
        `<p id="reg-q0-error" class="error">${message('de', 'error.required')}</p>` +
        '<div class="opt"><input id="reg-q0-o0" name="answers.diet" type="radio" value="any" required ' +
        'aria-invalid="true" autofocus>'))
      assert.ok(html.includes('<input id="reg-q0-o1" name="answers.diet" type="radio" value="veg" required ' +
        'aria-invalid="true">'))
      assert.ok(html.includes('<input id="reg-q2" name="answers.photos" type="checkbox" value="on" required ' +
        'aria-invalid="true" aria-describedby="reg-q2-error"><label for="reg-q2">I agree to &lt;photos&gt; &amp; ' +
        '&quot;films&quot;.</label></div><p id="reg-q2-error" class="error">' +
        `${message('de', 'error.consent_required')}</p></fieldset>`))
      assert.equal((html.match(/ autofocus/g) ?? []).length, 1, 'the first question to correct takes the focus')
      assert.equal((html.match(/aria-invalid="true"/g) ?? []).length, 3, 'the two radios and the consent')
      assert.equal(html.includes('role="alert"'), false)
      // what the guest typed and chose, kept
      for (const kept of [
        'value="Lea"', `value="${lea}"`,
        'name="answers.topics" type="checkbox" value="alto">',
        'name="answers.topics" type="checkbox" value="soprano" checked>',
        'name="answers.topics" type="checkbox" value="tenor" checked>',
        'name="answers.news" type="checkbox" value="on" checked>',
        'name="answers.nick" type="text" maxlength="30" value="Lea &lt;b&gt;">',
        'aria-describedby="reg-q5-help">\n\nHallo\n&quot;Welt&quot;</textarea>',
        'name="answers.age" type="number" min="0" max="120" step="any" required value="42">',
        'value="2030-02-03">', 'value="+49 30 901820">', 'value="x@example.org">'
      ]) assert.ok(html.includes(kept), kept)
      assert.equal(html.includes('<b>'), false)
      assert.equal((await attendees(alice, id)).length, 0, 'nothing stored')

      // a name to correct and an answer refused: both shown, the name focused first
      const both = await post(id, [['name', ''], ['email', lea], ['locale', 'fr'], ['answers.diet', 'veg'],
        ['answers.photos', 'on'], ['answers.age', '42'], ['answers.phone', '12']])
      assert.equal(both.statusCode, 400, both.body)
      assert.ok(both.body.includes('aria-invalid="true" aria-describedby="reg-name-error" autofocus><p ' +
        `id="reg-name-error" class="error">${message('fr', 'error.required')}</p>`))
      assert.ok(both.body.includes('<input id="reg-q8" name="answers.phone" type="tel" autocomplete="tel" ' +
        'value="12" aria-invalid="true" aria-describedby="reg-q8-error">' +
        `<p id="reg-q8-error" class="error">${message('fr', 'error.phone_invalid')}</p>`))
      assert.equal((both.body.match(/ autofocus/g) ?? []).length, 1)
      assert.ok(both.body.includes('value="veg" checked required>'))

      // an answer to a question the form does not have (a page read before a change): above the form
      const gone = await post(id, [['name', 'Lea'], ['email', lea], ['answers.diet', 'veg'], ['answers.photos', 'on'],
        ['answers.age', '42'], ['answers.gone', 'x']])
      assert.equal(gone.statusCode, 400, gone.body)
      assert.ok(gone.body.includes(`<p class="problem" role="alert">${message('en', 'error.unknown_question')}</p>`))
      assert.ok(gone.body.includes('<form'))
      assert.equal((await attendees(alice, id)).length, 0, 'nothing stored')
    })

    void it('shows why an event takes no registration instead of the form, and a post answers 409 with the ' +
      'message', async () => {
      const { alice, id } = await publicEvent(t, { public_registration: true, capacity: 1 })
      const form = async (lang = 'en') => (await get(`/api/v1/public/events/${id}/page.html?lang=${lang}`)).body
      assert.ok((await form()).includes('<form'))

      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_closes_at: new Date(Date.now() - HOUR).toISOString() })
      let html = await form('de')
      assert.ok(html.includes(`<p class="closed">${message('de', 'error.registration_closed')}</p>`))
      assert.equal(html.includes('<form'), false)
      const refused = await post(id, { name: 'Max', email: `max-${crypto.randomUUID()}@example.test`, locale: 'fr' })
      assert.equal(refused.statusCode, 409)
      assert.ok(refused.body.includes(`<p class="problem" role="alert">${message('fr', 'error.registration_closed')}`))
      assert.equal(refused.body.includes('<form'), false)
      assert.equal((await attendees(alice, id)).length, 0)
      const closed = (await get(`/api/v1/public/events/${id}`)).json().registration
      assert.deepEqual([closed.open, closed.reason], [false, 'closed'])

      const opens = new Date(Date.now() + 6 * HOUR)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_closes_at: null, registration_opens_at: opens.toISOString() })
      html = await form()
      assert.ok(html.includes('<p class="closed">Registration for this event has not opened yet; it opens on '))
      assert.equal(jsonLd(html)[0]?.offers.availability, 'https://schema.org/PreOrder')
      assert.equal(jsonLd(html)[0]?.offers.validFrom, opens.toISOString())

      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_opens_at: null, double_opt_in: false })
      assert.equal((await post(id, { name: 'One', email: `one-${crypto.randomUUID()}@example.test` })).statusCode, 200)
      html = await form()
      assert.ok(html.includes(`<p class="closed">${message('en', 'error.event_full')}</p>`))
      assert.equal(jsonLd(html)[0]?.offers.availability, 'https://schema.org/SoldOut')

      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, { public_registration: false })
      html = await form()
      assert.ok(html.includes(`<p class="closed">${message('en', 'error.registration_off')}</p>`))
      assert.equal(jsonLd(html)[0]?.offers, undefined, 'no offer without public registration')
    })
  })
}

void describe('the public page of an event: too many attempts', () => {
  const t = useTestApp('pglite', { env: { GUEST_LIMIT_PER_ADDRESS: '2', GUEST_LIMIT_PER_EVENT: '100' } })
  void it('answers 429 with the page again, the message in the guest\'s language and Retry-After', async () => {
    const { alice, id } = await publicEvent(t)
    const statuses: number[] = []
    let last = ''
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/v1/public/events/${id}/page.html`,
        payload: new URLSearchParams({ name: 'Ann', email: `ann-${i}@example.test`, website: '', locale: 'fr' })
          .toString(),
        headers: { 'content-type': FORM }
      })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) {
        assert.ok(Number(res.headers['retry-after']) > 0)
        last = res.body
      }
    }
    assert.deepEqual(statuses, [200, 200, 429])
    assert.ok(last.includes(`<p class="problem" role="alert">${message('fr', 'error.too_many_requests')}</p>`))
    assert.ok(last.includes('<form'), 'the form stays, to try again later')
    assert.ok(last.includes('value="ann-2@example.test"'))
    assert.equal((await attendeesOf(t, alice, id)).length, 2)
  })
})

async function attendeesOf (t: TestApp, token: string, id: number): Promise<Json[]> {
  return (await expectStatus(t, token, 'GET', `/api/v1/events/${id}/attendees?size=100`, 200)).json().items
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { alicePublishedSpace, createSpace, publish } from './spaces.fixtures.ts'
import { prefersHtml } from './spaces.public-html.ts'

type Json = Record<string, any>

const NASTY = '<script>alert(1)</script> & "quotes"'
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

/** A published public event linked to the space. */
async function linkedEvent (t: TestApp, token: string, spaceId: number, body: Json): Promise<number> {
  const id =
    (await expectStatus(t, token, 'POST', '/api/v1/events', 201, { visibility: 40, ...body })).json().id as number
  await expectStatus(t, token, 'POST', `/api/v1/events/${id}/publish`, 204)
  await expectStatus(t, token, 'POST', `/api/v1/spaces/${spaceId}/events`, 201, { event_id: id })
  return id
}

/** The JSON-LD data blocks of an HTML page, parsed. */
function jsonLd (html: string): Json[] {
  return [...html.matchAll(/<script type="application\/ld\+json">([^<]*)<\/script>/g)].map(m => JSON.parse(m[1] ?? ''))
}

void describe('prefersHtml', () => {
  void it('prefers HTML only when Accept ranks text/html above JSON', () => {
    const cases: Array<[string | undefined, boolean]> = [
      [undefined, false], ['', false], ['*/*', false], ['application/json', false],
      ['text/html', true], [BROWSER_ACCEPT, true], ['application/json, text/html', false],
      ['text/html;q=0.5, application/json', false], ['text/*, application/json;q=0.9', true],
      ['text/html;q=0', false], ['text/plain', false]
    ]
    for (const [accept, expected] of cases) assert.equal(prefersHtml(accept), expected, String(accept))
  })
})

for (const kind of databases()) {
  void describe(`${kind}: public space page as HTML`, () => {
    const t = useTestApp(kind)

    void it('answers HTML when Accept prefers it, JSON otherwise, escaping what managers typed', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, {
        title: NASTY, description: `Line ${NASTY}`, visibility: 40
      })
      const soon = await linkedEvent(t, alice, s.id, {
        title: `Picnic ${NASTY}`,
        start_dt: '2099-06-01T16:00:00Z',
        end_dt: '2099-06-01T18:00:00Z',
        timezone: 'Europe/Paris',
        address: 'Park </script><b>x</b>',
        latitude: 48.85,
        longitude: 2.35
      })
      const off = await linkedEvent(t, alice, s.id, {
        title: 'Called off', start_dt: '2099-07-01T10:00:00Z', timezone: 'UTC'
      })
      await t.ctx.db.updateTable('events').set({ cancelled_at: new Date() })
        .where('tenant_id', '=', tenant.id).where('id', '=', off).execute()
      const url = `/api/v1/public/spaces/${s.id}`

      for (const accept of [undefined, '*/*', 'application/json']) {
        const res = await t.app.inject({ method: 'GET', url, headers: accept === undefined ? {} : { accept } })
        assert.equal(res.statusCode, 200)
        assert.match(String(res.headers['content-type']), /^application\/json/, String(accept))
        assert.equal(res.json().space.title, NASTY)
        assert.equal(res.json().upcoming_events[0].cancelled_at, undefined, 'the HTML fields stay out of the JSON')
        assert.match(String(res.headers.vary), /Accept/)
      }

      const pages = [
        await t.app.inject({ method: 'GET', url, headers: { accept: BROWSER_ACCEPT } }),
        await t.app.inject({ method: 'GET', url: `${url}/page.html` })
      ]
      for (const res of pages) {
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
        assert.match(String(res.headers['content-security-policy']), /^default-src 'none'; style-src 'sha256-/)
        assert.equal(res.headers['x-content-type-options'], 'nosniff')
        assert.equal(res.headers['referrer-policy'], 'no-referrer')
        assert.match(String(res.headers['cache-control']), /^public, max-age=60/)
        const html = res.body
        assert.match(html, /^<!doctype html>\n<html lang="en">/)
        assert.equal(html.includes('<script>alert(1)'), false, 'no typed markup gets through')
        assert.equal(html.includes('<b>x</b>'), false)
        assert.ok(html.includes('<h1>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;</h1>'), html)
        assert.equal((html.match(/<h1>/g) ?? []).length, 1)
        assert.ok(html.includes(`href="/api/v1/spaces/${s.id}/calendar.ics"`))
        assert.ok(html.includes('<time datetime="2099-06-01T16:00:00.000Z">Mon, 1 Jun 2099, 18:00</time>'),
          'in Paris time')
        assert.equal((html.match(/<script/g) ?? []).length, 1, 'the JSON-LD is the one script element')

        const [ld] = jsonLd(html)
        assert.ok(ld !== undefined)
        assert.equal(ld['@context'], 'https://schema.org')
        const events = ld['@graph'] as Json[]
        assert.deepEqual(events.map(e => e.name), [`Picnic ${NASTY}`, 'Called off'])
        assert.deepEqual(events[0], {
          '@type': 'Event',
          name: `Picnic ${NASTY}`,
          startDate: '2099-06-01T16:00:00.000Z',
          endDate: '2099-06-01T18:00:00.000Z',
          eventStatus: 'https://schema.org/EventScheduled',
          location: {
            '@type': 'Place',
            name: 'Park </script><b>x</b>',
            address: 'Park </script><b>x</b>',
            geo: { '@type': 'GeoCoordinates', latitude: 48.85, longitude: 2.35 }
          },
          url: `http://localhost:8080/api/v1/public/spaces/${s.id}/page.html#event-${soon}`
        })
        assert.equal(events[1]?.eventStatus, 'https://schema.org/EventCancelled')
        assert.ok(html.includes('<p class="cancelled">Cancelled</p>'))
      }

      // ETag and 304, distinct from the JSON page's
      const [html] = pages
      const json = await t.app.inject({ method: 'GET', url })
      assert.notEqual(html?.headers.etag, json.headers.etag)
      const again = await t.app.inject({
        method: 'GET', url: `${url}/page.html`, headers: { 'if-none-match': String(html?.headers.etag) }
      })
      assert.equal(again.statusCode, 304)
      assert.equal(again.body, '')
    })

    void it('answers 404 for a private or draft space, as the JSON page does', async () => {
      const { alice } = await alicePublishedSpace(t, { visibility: 40 })
      const members = await createSpace(t, alice, { visibility: 20 })
      await publish(t, alice, members.id)
      const draft = await createSpace(t, alice, { visibility: 40 })
      for (const id of [members.id, draft.id, 999_999_999]) {
        for (const req of [
          { url: `/api/v1/public/spaces/${id as number}`, headers: { accept: 'text/html' } },
          { url: `/api/v1/public/spaces/${id as number}/page.html`, headers: {} }
        ]) {
          const res = await t.app.inject({ method: 'GET', ...req })
          assert.equal(res.statusCode, 404, req.url)
          assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
        }
      }
    })
  })
}

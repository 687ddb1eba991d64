/**
 * `POST /events/{id}/unpublish` (docs/events.md, "Unpublish"): a published event goes back to draft, off the public
 * space page (kept in memory: the write drops it), the space's calendar feed and its own public page, keeping its
 * attendees; it is published again with the publish route; `cancel_in_feeds` keeps it in the feeds as
 * STATUS:CANCELLED (parsed with ical.js) until then. Who may (403/404/409, nothing changed), an open draft clone.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import ICAL from 'ical.js'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { createContact } from '../attendees/attendees.fixtures.ts'
import { createSpace, publish as publishSpace } from '../spaces/spaces.fixtures.ts'
import {
  activityKinds, addManager, createEvent, getEvent, outboxTopics, publishEvent, type Json
} from './events.fixtures.ts'
import { agreedInstances } from '../../../test/helpers/calendar-parsers.ts'

const DAY = 86_400_000
const at = (ms: number): string => new Date(ms).toISOString()
const START = Math.floor((Date.now() + 10 * DAY) / 60_000) * 60_000

/** The VEVENTs of a feed by summary: status and sequence (node-ical reading the same instances as ical.js). */
function vevents (raw: string): Map<string, { status: string, sequence: number }> {
  agreedInstances(raw)
  const cal = new ICAL.Component(ICAL.parse(raw))
  return new Map(cal.getAllSubcomponents('vevent').map(v => [
    String(v.getFirstPropertyValue('summary')),
    { status: String(v.getFirstPropertyValue('status')), sequence: Number(v.getFirstPropertyValue('sequence')) }
  ]))
}

async function feed (t: TestApp, url: string) {
  const res = await t.app.inject({ method: 'GET', url })
  assert.equal(res.statusCode, 200, res.body)
  return vevents(res.body)
}

/** The anonymous public page of a space: the titles of its upcoming events and its count. */
async function publicPage (t: TestApp, spaceId: number) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${spaceId}` })
  assert.equal(res.statusCode, 200, res.body)
  const page = res.json()
  return { titles: (page.upcoming_events as Json[]).map(e => e.title), count: page.stats.events_count as number }
}

/** alice's published public space and, in it, her published public event with a confirmed attendee. */
async function publishedInSpace (t: TestApp, title = 'Summer concert') {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice')
  const space = await createSpace(t, alice, { title: 'Choir', visibility: 40 })
  await publishSpace(t, alice, space.id)
  const event = await createEvent(t, alice, {
    title, visibility: 40, start_dt: at(START), end_dt: at(START + 7_200_000), timezone: 'Europe/Berlin'
  })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/spaces`, 201, { space_id: space.id })
  const contact = await createContact(t, alice, { email: 'ann@example.test' })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/attendees`, 201,
    { contact_id: contact, status: 'confirmed' })
  await publishEvent(t, alice, event.id)
  return {
    tenant,
    alice,
    space: space.id as number,
    id: event.id as number,
    feedUrl: `/api/v1/spaces/${space.id as number}/calendar.ics`
  }
}

const unpublishUrl = (id: number): string => `/api/v1/events/${id}/unpublish`

for (const kind of databases()) {
  // the anonymous page and feed kept in memory for a minute: only the write dropping them shows a change at once
  void describe(`${kind}: event unpublish (public answers kept in memory)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '60000' } })

    void it('takes the event off the public space page, the space feed and its own page; keeps its attendees; ' +
      'publishing it again brings it back', async () => {
      const { tenant, alice, space, id, feedUrl } = await publishedInSpace(t)
      assert.deepEqual(await publicPage(t, space), { titles: ['Summer concert'], count: 1 })
      assert.equal((await feed(t, feedUrl)).get('Summer concert')?.status, 'CONFIRMED')
      await expectStatus(t, alice, 'GET', `/api/v1/public/events/${id}`, 200)

      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204)

      assert.deepEqual(await publicPage(t, space), { titles: [], count: 0 }, 'the kept page was dropped by the write')
      assert.equal((await feed(t, feedUrl)).size, 0, 'the kept feed was dropped by the write')
      await expectStatus(t, alice, 'GET', `/api/v1/public/events/${id}`, 404)
      const got = (await getEvent(t, alice, id)).json()
      assert.deepEqual([got.status, got.version, got.spaces.map((s: Json) => s.id)], ['draft', 1, [space]])
      assert.ok(Date.parse(got.published_at) > 0, 'published_at keeps the last publish')
      const attendees = await getJson(t, alice, `/api/v1/events/${id}/attendees`)
      assert.deepEqual((attendees.items as Json[]).map(a => a.status), ['confirmed'])
      // a draft is edited in place
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}`, 200, { title: 'Autumn concert' })
      assert.deepEqual((await activityKinds(t, alice, id)).slice(0, 2), ['edited', 'unpublished'])
      assert.deepEqual((await outboxTopics(t, tenant.id, 'event.')).slice(-2), ['event.unpublished', 'event.updated'])

      await publishEvent(t, alice, id)
      assert.deepEqual(await publicPage(t, space), { titles: ['Autumn concert'], count: 1 })
      assert.equal((await feed(t, feedUrl)).get('Autumn concert')?.status, 'CONFIRMED')
      await expectStatus(t, alice, 'GET', `/api/v1/public/events/${id}`, 200)
      const again = (await getEvent(t, alice, id)).json()
      assert.deepEqual([again.status, again.version, again.confirmed_count], ['published', 2, 1])
    })

    void it('cancel_in_feeds: the feeds that showed it keep it as cancelled until it is published again', async () => {
      const { alice, space, id, feedUrl } = await publishedInSpace(t, 'Open rehearsal')
      const token = (await expectStatus(t, alice, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })).json()
      const personal = new URL(token.url as string).pathname + new URL(token.url as string).search
      const before = await t.app.inject({ method: 'GET', url: feedUrl })
      const shown = vevents(before.body).get('Open rehearsal')
      assert.equal(shown?.status, 'CONFIRMED')

      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204, { cancel_in_feeds: true })
      const cancelled = (await feed(t, feedUrl)).get('Open rehearsal')
      assert.equal(cancelled?.status, 'CANCELLED')
      assert.ok((cancelled?.sequence ?? 0) > (shown?.sequence ?? 0), 'a new SEQUENCE')
      assert.equal((await feed(t, personal)).get('Open rehearsal')?.status, 'CANCELLED')
      const revalidated = await t.app.inject({
        method: 'GET', url: feedUrl, headers: { 'if-none-match': String(before.headers.etag) }
      })
      assert.equal(revalidated.statusCode, 200, 'the old ETag no longer matches')
      // still off the public pages
      assert.deepEqual(await publicPage(t, space), { titles: [], count: 0 })
      await expectStatus(t, alice, 'GET', `/api/v1/public/events/${id}`, 404)
      assert.equal((await getEvent(t, alice, id)).json().status, 'draft')

      await publishEvent(t, alice, id)
      assert.equal((await feed(t, feedUrl)).get('Open rehearsal')?.status, 'CONFIRMED')
      // unpublished again without it: it leaves the feeds
      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204, { cancel_in_feeds: false })
      assert.equal((await feed(t, feedUrl)).size, 0)
      assert.equal((await feed(t, personal)).size, 0)
    })
  })

  void describe(`${kind}: event unpublish, refusals`, () => {
    const t = useTestApp(kind)

    void it('refuses callers without event:publish (403), other tenants (404), and changes nothing', async () => {
      const { tenant, alice, space, id } = await publishedInSpace(t)
      const bob = await tenant.user('bob')
      const carl = await tenant.user('carl')
      const vera = await tenant.user('vera', ['viewer'])
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await addManager(t, tenant.id, id, 'carl', { role: 'event_manager:attendees' })
      await expectStatuses(t, [
        [vera, 'POST', unpublishUrl(id), 403],
        [bob, 'POST', unpublishUrl(id), 403],
        [carl, 'POST', unpublishUrl(id), 403, { cancel_in_feeds: true }],
        [mallory, 'POST', unpublishUrl(id), 404],
        [alice, 'POST', unpublishUrl(999_999_999), 404]
      ])
      const bad = await expectStatus(t, alice, 'POST', unpublishUrl(id), 400, { cancel_in_feeds: 'yes' })
      assert.ok(bad.json().errors.some((x: Json) => x.location === 'body.cancel_in_feeds'), bad.body)
      const stale = await t.as(alice, { method: 'POST', url: unpublishUrl(id), headers: { 'if-match': '"0"' } })
      assert.equal(stale.statusCode, 412, stale.body)
      const got = (await getEvent(t, alice, id)).json()
      assert.deepEqual([got.status, got.version], ['published', 1])
      assert.deepEqual(await publicPage(t, space), { titles: ['Summer concert'], count: 1 })
      assert.ok(!(await outboxTopics(t, tenant.id)).includes('event.unpublished'))

      // a manager holding event:publish may
      await addManager(t, tenant.id, id, 'bob', { permissions: ['event:publish'] })
      await expectStatus(t, bob, 'POST', unpublishUrl(id), 204)
      assert.equal((await getEvent(t, alice, id)).json().status, 'draft')
    })

    void it('409 unless published: a draft, an event unpublished already, an archived one, a draft clone\'s id; ' +
      'a deleted event is 404', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const draft = await createEvent(t, alice)
      await expectStatus(t, alice, 'POST', unpublishUrl(draft.id), 409)
      const e = await createEvent(t, alice)
      await publishEvent(t, alice, e.id)
      const clone = (await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/edit`, 200)).json()
      await expectStatus(t, alice, 'POST', unpublishUrl(clone.id), 409)
      await expectStatus(t, alice, 'POST', unpublishUrl(e.id), 204)
      await expectStatus(t, alice, 'POST', unpublishUrl(e.id), 409)
      const archived = await createEvent(t, alice)
      await publishEvent(t, alice, archived.id)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${archived.id as number}/archive`, 204)
      await expectStatus(t, alice, 'POST', unpublishUrl(archived.id), 409)
      assert.equal((await getEvent(t, alice, archived.id)).json().status, 'archived')
      const deleted = await createEvent(t, alice)
      await publishEvent(t, alice, deleted.id)
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${deleted.id as number}`, 204)
      await expectStatus(t, alice, 'POST', unpublishUrl(deleted.id), 404)
    })

    void it('an open draft clone is kept as the content of the unpublished event', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { title: 'Published title', description: 'v1' })
      await publishEvent(t, alice, e.id)
      const clone = (await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/edit`, 200)).json()
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id as number}`, 200, { title: 'Pending title' })

      await expectStatus(t, alice, 'POST', unpublishUrl(e.id), 204)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.deepEqual([got.status, got.title, got.description], ['draft', 'Pending title', 'v1'])
      await expectStatuses(t, [
        [alice, 'GET', `/api/v1/events/${e.id as number}/draft`, 404],
        [alice, 'GET', `/api/v1/events/${clone.id as number}`, 404]
      ])
      const written = (await outboxTopics(t, tenant.id, 'event.unpublished')).length
      assert.equal(written, 1)
      await publishEvent(t, alice, e.id)
      const again = (await getEvent(t, alice, e.id)).json()
      assert.deepEqual([again.status, again.title, again.version], ['published', 'Pending title', 2])
    })
  })
}

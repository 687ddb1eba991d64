/**
 * `POST /spaces/{id}/unpublish` (docs/spaces.md, "Unpublish"): a published space goes back to draft, off its public
 * page (kept in memory: the write drops it); its anonymous feed answers its subscribers with no event, or with its
 * events cancelled when asked (read by ical.js); seen again only by who manages it, with its members, managers and
 * events kept; publishing it again brings its page and feed back under the same handle. Pending changes become its
 * content. Who may (403/404/409/400, nothing changed).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { agreedInstances } from '../../../test/helpers/calendar-parsers.ts'
import { createSpace, publish } from './spaces.fixtures.ts'

type Json = Record<string, any>

const DAY = 86_400_000

const unpublishUrl = (id: number): string => `/api/v1/spaces/${id}/unpublish`
const anonymous = async (t: TestApp, url: string) => await t.app.inject({ method: 'GET', url })

/** alice's published public space with bob as a member and a published public event of hers in it. */
async function publicSpace (t: TestApp) {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice')
  const bob = await tenant.user('bob')
  const s = await createSpace(t, alice, { title: 'Open garden', visibility: 40 })
  await publish(t, alice, s.id)
  await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id as number}/members`, 201,
    { user_id: 'bob', role: 'space_member' })
  const e = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
    title: 'Planting day', visibility: 40, start_dt: new Date(Date.now() + 5 * DAY).toISOString()
  })).json()
  await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/spaces`, 201, { space_id: s.id })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/publish`, 204)
  const handle = (await getJson(t, alice, `/api/v1/spaces/${s.id as number}`)).public_handle as string
  return { tenant, alice, bob, id: s.id as number, eventId: e.id as number, handle }
}

for (const kind of databases()) {
  // the anonymous page and feed kept in memory for a minute: only the write dropping them shows a change at once
  void describe(`${kind}: space unpublish (public answers kept in memory)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '60000' } })

    void it('takes the space off its public page and feed, keeps its people and events; ' +
      'publishing it again brings the page back under its handle', async () => {
      const { tenant, alice, bob, id, eventId, handle } = await publicSpace(t)
      const page = `/api/v1/public/spaces/${id}`
      const feed = `/api/v1/spaces/${id}/calendar.ics`
      assert.equal((await anonymous(t, page)).json().upcoming_events.length, 1)
      assert.equal((await anonymous(t, `/api/v1/public/spaces/${handle}`)).statusCode, 200)
      assert.equal((await anonymous(t, feed)).statusCode, 200)
      await getJson(t, bob, `/api/v1/spaces/${id}`)

      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204)

      // at once, though kept for a minute: the write dropped the tenant's kept answers; the feed's subscribers get a
      // calendar without the space's events, so they leave their calendars (a 404 would leave them there)
      assert.equal((await anonymous(t, page)).statusCode, 404)
      assert.equal((await anonymous(t, `/api/v1/public/spaces/${handle}`)).statusCode, 404)
      const emptied = await anonymous(t, feed)
      assert.equal(emptied.statusCode, 200)
      assert.deepEqual(agreedInstances(emptied.body), [])
      const got = await getJson(t, alice, `/api/v1/spaces/${id}`)
      assert.deepEqual([got.status, got.version, got.public_handle, got.has_draft], ['draft', 1, handle, false])
      // a member sees a draft no more; what he belongs to is kept
      await expectStatus(t, bob, 'GET', `/api/v1/spaces/${id}`, 404)
      const members = await getJson(t, alice, `/api/v1/spaces/${id}/members`)
      assert.deepEqual((members.items as Json[]).map(m => m.user_id), ['bob'])
      const events = await getJson(t, alice, `/api/v1/spaces/${id}/events`)
      assert.deepEqual((events.items as Json[]).map(e => e.event_id), [eventId])
      // the space's events stay published
      assert.equal((await getJson(t, alice, `/api/v1/events/${eventId}`)).status, 'published')
      assert.equal((await anonymous(t, `/api/v1/public/events/${eventId}`)).statusCode, 200)

      await publish(t, alice, id)
      assert.equal((await anonymous(t, `/api/v1/public/spaces/${handle}`)).json().upcoming_events.length, 1)
      assert.deepEqual(agreedInstances((await anonymous(t, feed)).body).map(i => [i.summary, i.status]),
        [['Planting day', 'CONFIRMED']])
      await getJson(t, bob, `/api/v1/spaces/${id}`)
      const again = await getJson(t, alice, `/api/v1/spaces/${id}`)
      assert.deepEqual([again.status, again.version, again.public_handle], ['published', 2, handle])
      const written = (await outboxEvents(t, tenant.id, 'space.')).filter(e => e.aggregate_id === String(id))
        .map(e => [e.topic, e.payload])
      assert.deepEqual(written.slice(-2), [
        ['space.unpublished', { space_id: id, version: 1, fields: [], cancel_in_feeds: false }],
        ['space.published', { space_id: id, version: 2, first_publish: false, fields: [], notify: false }]
      ])
    })
  })

  void describe(`${kind}: space unpublish, rules`, () => {
    const t = useTestApp(kind)

    void it('with cancel_in_feeds its feed shows its events cancelled until it is published again', async () => {
      const { alice, id } = await publicSpace(t)
      const feed = `/api/v1/spaces/${id}/calendar.ics`
      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204, { cancel_in_feeds: true })
      const withdrawn = await anonymous(t, feed)
      assert.equal(withdrawn.statusCode, 200)
      assert.deepEqual(agreedInstances(withdrawn.body).map(i => [i.summary, i.status]),
        [['Planting day', 'CANCELLED']])
      assert.equal((await anonymous(t, `/api/v1/public/spaces/${id}`)).statusCode, 404)
      // an edit of the draft keeps it so (its address stays in the directory)
      await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${id}`, 200, { title: 'Closed garden' })
      assert.deepEqual(agreedInstances((await anonymous(t, feed)).body).map(i => i.status), ['CANCELLED'])
      await publish(t, alice, id)
      assert.deepEqual(agreedInstances((await anonymous(t, feed)).body).map(i => [i.summary, i.status]),
        [['Planting day', 'CONFIRMED']])
      // made private while unpublished: its feed is gone
      await expectStatus(t, alice, 'POST', unpublishUrl(id), 204, { cancel_in_feeds: true })
      await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${id}`, 200, { visibility: 20 })
      assert.equal((await anonymous(t, feed)).statusCode, 404)
    })

    void it('pending changes become the content of the unpublished space', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice, { title: 'Before', visibility: 40 })
      await publish(t, alice, s.id)
      await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${s.id as number}`, 200,
        { title: 'After', visibility: 20 })
      await expectStatus(t, alice, 'POST', unpublishUrl(s.id), 204)
      const got = await getJson(t, alice, `/api/v1/spaces/${s.id as number}`)
      assert.deepEqual([got.status, got.title, got.visibility, got.has_draft], ['draft', 'After', 20, false])
      await expectStatus(t, alice, 'GET', `/api/v1/spaces/${s.id as number}/draft`, 200)
      const [event] = await outboxEvents(t, tenant.id, 'space.unpublished')
      assert.deepEqual(event?.payload,
        { space_id: s.id, version: 1, fields: ['title', 'visibility'], cancel_in_feeds: false })
      // a draft is changed in place, and published as it is
      await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${s.id as number}`, 200, { title: 'Later' })
      await publish(t, alice, s.id)
      const again = await getJson(t, alice, `/api/v1/spaces/${s.id as number}`)
      assert.deepEqual([again.status, again.title, again.visibility, again.version], ['published', 'Later', 20, 2])
    })

    void it('refuses: no space:publish (403), not seen (404), not published (409), bad body (400); ' +
      'nothing changed', async () => {
      const { tenant, alice, bob, id } = await publicSpace(t)
      const carl = await tenant.user('carl')
      const dora = await tenant.user('dora')
      const vera = await tenant.user('vera', ['viewer'])
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${id}/managers`, 201,
        { user_id: 'carl', permissions: ['space:edit', 'space:events'] })
      const hidden = await createSpace(t, alice, { visibility: 10 })
      await publish(t, alice, hidden.id)
      await expectStatuses(t, [
        [vera, 'POST', unpublishUrl(id), 403],
        [bob, 'POST', unpublishUrl(id), 403],
        [carl, 'POST', unpublishUrl(id), 403],
        [dora, 'POST', unpublishUrl(hidden.id), 404],
        [mallory, 'POST', unpublishUrl(id), 404],
        [alice, 'POST', unpublishUrl(999_999_999), 404]
      ])
      for (const payload of [{ cancel_in_feeds: 'no' }, { notify: true }]) {
        const res = await expectStatus(t, alice, 'POST', unpublishUrl(id), 400, payload)
        const location = Object.keys(payload)[0] ?? ''
        assert.ok(res.json().errors.some((x: Json) => x.location === `body.${location}`), res.body)
      }
      assert.equal((await getJson(t, alice, `/api/v1/spaces/${id}`)).status, 'published')
      assert.equal((await anonymous(t, `/api/v1/public/spaces/${id}`)).statusCode, 200)
      assert.deepEqual(await outboxEvents(t, tenant.id, 'space.unpublished'), [])

      // a manager holding space:publish may; then it is a draft: 409
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${id}/managers`, 201,
        { user_id: 'dora', permissions: ['space:publish'] })
      await expectStatus(t, dora, 'POST', unpublishUrl(id), 204, { cancel_in_feeds: false })
      await expectStatus(t, dora, 'POST', unpublishUrl(id), 409)
      const draft = await createSpace(t, alice)
      await expectStatus(t, alice, 'POST', unpublishUrl(draft.id), 409)
      const archived = await createSpace(t, alice)
      await publish(t, alice, archived.id)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${archived.id as number}/archive`, 204)
      await expectStatus(t, alice, 'POST', unpublishUrl(archived.id), 409)
    })
  })
}

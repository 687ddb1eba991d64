import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import { addManager, createContact, createEvent, insertContacts, type Json } from './attendees.fixtures.ts'

for (const kind of databases()) {
  void describe(`${kind}: event attendees`, () => {
    const t = useTestApp(kind)

    const list = async (token: string, id: number, query = '') =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/attendees${query}` })

    void it('adds an attendee, refuses a duplicate and unknown or invisible contacts, lists with paging', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const contact = await createContact(t, alice)
      const url = `/api/v1/events/${event.id}/attendees`
      const a = (await expectStatus(t, alice, 'POST', url, 201, { contact_id: contact, notes: 'VIP' })).json()
      assert.equal(a.$schema, 'http://localhost:8080/schemas/Attendee.json')
      assert.deepEqual({ ...a, id: 0, invited_at: '', created_at: '', updated_at: '' }, {
        $schema: a.$schema,
        id: 0,
        event_id: event.id,
        series_id: null,
        contact_id: contact,
        org_id: null,
        status: 'invited',
        notes: 'VIP',
        is_checked_in: false,
        checked_in_at: null,
        invited_at: '',
        responded_at: null,
        created_at: '',
        updated_at: '',
        waitlist_position: null,
        approved_at: null,
        approved_by: null,
        checked_in_by: null,
        check_in_method: null,
        checked_out_at: null,
        checked_out_by: null,
        check_in_token_issued_at: null,
        check_in_token_revoked_at: null,
        source: 'organiser',
        invitation_sent_at: null,
        guest_responded_at: null,
        locale: null,
        updates_unsubscribed_at: null
      })

      const dup = await expectStatus(t, alice, 'POST', url, 409, { contact_id: contact, status: 'confirmed' })
      assert.equal(dup.json().errors[0].location, 'body.contact_id')

      const unknown = crypto.randomUUID()
      const bad = await expectStatus(t, alice, 'POST', url, 400, { contact_id: unknown })
      assert.deepEqual(bad.json().errors, [{ location: 'body.contact_id', message: 'unknown contact', value: unknown }])

      // bob's personal contact is invisible to alice
      const bob = await tenant.user('bob')
      await expectStatus(t, alice, 'POST', url, 400, { contact_id: await createContact(t, bob) })

      const badStatus = await expectStatus(t, alice, 'POST', url, 400, { contact_id: contact, status: 'maybe' })
      assert.equal(badStatus.json().errors[0].location, 'body.status')

      const more = await insertContacts(t, tenant.id, 'alice', 4)
      for (const c of more) await expectStatus(t, alice, 'POST', url, 201, { contact_id: c, status: 'confirmed' })
      const page = await list(alice, event.id, '?page=2&size=2')
      assert.equal(page.statusCode, 200, page.body)
      const pageBody = page.json() as Json
      assert.equal(typeof pageBody.next_cursor, 'string', 'a third page follows')
      assert.deepEqual(
        { ...pageBody, items: pageBody.items.length, next_cursor: 'x' },
        {
          $schema: 'http://localhost:8080/schemas/PagedBodyAttendee.json',
          items: 2,
          page: 2,
          size: 2,
          total: 5,
          next_cursor: 'x'
        }
      )
      const confirmed = await list(alice, event.id, '?status=confirmed&size=100')
      assert.equal(confirmed.json().total, 4)

      const topics = await outboxEvents(t, tenant.id, 'attendee.')
      assert.equal(topics.length, 5)
      assert.deepEqual({ topic: topics[0]?.topic, payload: topics[0]?.payload }, {
        topic: 'attendee.added',
        payload: { event_id: event.id, contact_id: contact, status: 'invited', template: 'generic' }
      })
    })

    void it('updates a status (responded_at), removes, checks in idempotently', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const contact = await createContact(t, alice)
      const url = `/api/v1/events/${event.id}/attendees`
      await t.as(alice, { method: 'POST', url, payload: { contact_id: contact } })

      const patched = await expectStatus(t, alice, 'PATCH', `${url}/${contact}`, 200, { status: 'tentative' })
      assert.equal(patched.json().status, 'tentative')
      assert.ok(patched.json().responded_at !== null)
      await expectStatus(t, alice, 'PATCH', `${url}/${crypto.randomUUID()}`, 404, { status: 'confirmed' })
      const noStatus = await expectStatus(t, alice, 'PATCH', `${url}/${contact}`, 400, {})
      assert.equal(noStatus.json().errors[0].location, 'body.status')

      await expectStatus(t, alice, 'POST', `${url}/${contact}/check-in`, 204)
      const after1 = (await list(alice, event.id)).json().items[0]
      assert.equal(after1.status, 'checked_in')
      assert.equal(after1.is_checked_in, true)
      assert.ok(after1.checked_in_at !== null)
      await expectStatus(t, alice, 'POST', `${url}/${contact}/check-in`, 204, {})
      const after2 = (await list(alice, event.id)).json().items[0]
      assert.equal(after2.checked_in_at, after1.checked_in_at)
      await expectStatuses(t, [
        [alice, 'POST', `${url}/${crypto.randomUUID()}/check-in`, 404],
        [alice, 'DELETE', `${url}/${contact}`, 204]
      ])
      assert.equal((await list(alice, event.id)).json().total, 0)
      await expectStatus(t, alice, 'DELETE', `${url}/${contact}`, 404)

      assert.deepEqual(
        (await outboxEvents(t, tenant.id, 'attendee.')).map(r => r.topic),
        ['attendee.added', 'attendee.status_changed', 'attendee.checked_in', 'attendee.removed']
      )
    })

    void it('bulk adds hundreds, updates and removes in one call; an unknown contact applies nothing', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const ids = await insertContacts(t, tenant.id, 'alice', 300)
      const bulk = `/api/v1/events/${event.id}/attendees/bulk`
      await expectStatus(t, alice, 'POST', bulk, 204, { contact_ids: ids.slice(0, 250), status: 'confirmed' })
      assert.equal((await list(alice, event.id, '?status=confirmed')).json().total, 250)

      // already attending ones are left alone; one unknown id refuses the whole call
      const unknown = crypto.randomUUID()
      const badAdd = await expectStatus(t, alice, 'POST', bulk, 400, {
        contact_ids: [...ids.slice(200, 300), unknown]
      })
      assert.deepEqual(badAdd.json().errors, [
        { location: 'body.contact_ids[100]', message: 'unknown contact', value: unknown }
      ])
      assert.equal((await list(alice, event.id)).json().total, 250)
      await expectStatus(t, alice, 'POST', bulk, 204, { contact_ids: ids.slice(200, 300) })
      assert.equal((await list(alice, event.id)).json().total, 300)
      assert.equal((await list(alice, event.id, '?status=invited')).json().total, 50)

      await expectStatus(t, alice, 'PATCH', `${bulk}/status`, 204, {
        contact_ids: ids.slice(0, 100),
        status: 'declined'
      })
      assert.equal((await list(alice, event.id, '?status=declined')).json().total, 100)
      const declined = (await list(alice, event.id, '?status=declined&size=1')).json().items[0]
      assert.ok(declined.responded_at !== null)

      const stranger = (await insertContacts(t, tenant.id, 'alice', 1))[0]
      const badStatus = await expectStatus(t, alice, 'PATCH', `${bulk}/status`, 400, {
        contact_ids: [ids[150], stranger],
        status: 'tentative'
      })
      assert.equal(badStatus.json().errors[0].location, 'body.contact_ids[1]')
      assert.equal((await list(alice, event.id, '?status=tentative')).json().total, 0)

      const tooMany = await expectStatus(t, alice, 'POST', bulk, 400, {
        contact_ids: Array.from({ length: 1001 }, () => crypto.randomUUID())
      })
      assert.equal(tooMany.json().errors[0].location, 'body.contact_ids')

      await expectStatus(t, alice, 'DELETE', bulk, 204, { contact_ids: ids.slice(0, 150), status: 'declined' })
      assert.equal((await list(alice, event.id)).json().total, 200)
      await expectStatus(t, alice, 'DELETE', bulk, 400, { contact_ids: [ids[250], unknown] })
      assert.equal((await list(alice, event.id)).json().total, 200)
    })

    void it('bulk calls record one domain event per attendee changed: added in the order given, ' +
      'status changes with the previous status, removals', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const ids = await insertContacts(t, tenant.id, 'alice', 600)
      const bulk = async (method: 'POST' | 'PATCH' | 'DELETE', path: string, payload: Json) =>
        await expectStatus(t, alice, method, `/api/v1/events/${event.id}/attendees/bulk${path}`, 204, payload)
      const events = async (topic: string) => (await outboxEvents(t, tenant.id, topic)).map(e => e.payload)

      await bulk('POST', '', { contact_ids: ids.slice(0, 40), status: 'confirmed' })
      // 40 already attend: 560 new attendees, 560 events after the first 40, in the order of the request
      await bulk('POST', '', { contact_ids: [...ids].reverse() })
      const added = await events('attendee.added')
      assert.equal(added.length, 600)
      assert.deepEqual(
        added.map(p => p.contact_id),
        [...ids.slice(0, 40), ...ids.slice(40).reverse()]
      )
      assert.deepEqual(
        added.map(p => p.status),
        [...Array(40).fill('confirmed'), ...Array(560).fill('invited')]
      )
      assert.deepEqual(added[0], { event_id: event.id, contact_id: ids[0], status: 'confirmed', template: 'generic' })

      // only attendees whose status changes get an event
      await bulk('PATCH', '/status', { contact_ids: ids.slice(20, 60), status: 'confirmed' })
      const changed = await events('attendee.status_changed')
      assert.deepEqual(
        changed.map(p => [p.contact_id, p.previous_status, p.status]).sort(),
        ids
          .slice(40, 60)
          .map(id => [id, 'invited', 'confirmed'])
          .sort()
      )

      await bulk('DELETE', '', { contact_ids: ids.slice(0, 500), status: 'invited' })
      const removed = await events('attendee.removed')
      assert.equal(removed.length, 440)
      assert.deepEqual(removed.map(p => p.contact_id).sort(), ids.slice(60, 500).sort())
      assert.ok(removed.every(p => p.status === 'invited' && p.event_id === event.id))
      assert.equal((await list(alice, event.id)).json().total, 160)
    })

    void it('enforces event-manager permissions, tenant roles and tenant isolation', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const [contact, other] = await insertContacts(t, tenant.id, 'alice', 2, 'org-1')
      const url = `/api/v1/events/${event.id}/attendees`
      await t.as(alice, { method: 'POST', url, payload: { contact_id: contact } })

      // checkin role: read and check in, nothing else
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-1' })
      await addManager(t, tenant.id, event.id, 'carol', { role: 'event_manager:checkin' })
      await expectStatuses(t, [
        [carol, 'GET', url, 200],
        [carol, 'POST', url, 403, { contact_id: other }],
        [carol, 'PATCH', `${url}/${contact}`, 403, { status: 'confirmed' }],
        [carol, 'DELETE', `${url}/bulk`, 403, { contact_ids: [contact] }],
        [carol, 'POST', `${url}/${contact}/check-in`, 204]
      ])

      // a manager with only event:edit cannot even read the attendees
      const dan = await tenant.user('dan')
      await addManager(t, tenant.id, event.id, 'dan', { permissions: ['event:edit'] })
      await expectStatuses(t, [
        [dan, 'GET', url, 403],
        [dan, 'POST', `${url}/${contact}/check-in`, 403]
      ])

      // attendees role: writes allowed
      const erin = await tenant.user('erin', ['member'], { orgId: 'org-1' })
      await addManager(t, tenant.id, event.id, 'erin', { permissions: ['attendees:read', 'attendees:write'] })
      await expectStatus(t, erin, 'POST', url, 201, { contact_id: other })

      // a viewer lacks events:write; someone who cannot see the event gets 404; another tenant gets 404 too
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await expectStatuses(t, [
        [await tenant.user('vic', ['viewer']), 'POST', url, 403, { contact_id: contact }],
        [await tenant.user('sam'), 'GET', url, 404],
        [mallory, 'GET', url, 404],
        [mallory, 'DELETE', `${url}/${contact}`, 404]
      ])
      // nothing changed
      const items = (await list(alice, event.id)).json().items as Json[]
      assert.equal(items.length, 2)
      assert.equal(items.find(i => i.contact_id === contact)?.status, 'checked_in')

      // an archived event is read-only
      await expectStatuses(t, [
        [alice, 'POST', `/api/v1/events/${event.id}/archive`, 204],
        [alice, 'DELETE', `${url}/${contact}`, 409]
      ])
      assert.equal((await list(alice, event.id)).json().total, 2)
    })

    void it('pages attendees by cursor as by page (bulk rows share created_at), per status, ' +
      "and refuses another event's cursor", async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const other = await createEvent(t, alice, { template: 'generic' })
      const ids = await insertContacts(t, tenant.id, 'alice', 23)
      const url = (id: number) => `/api/v1/events/${id}/attendees`
      await expectStatuses(t, [
        [alice, 'POST', `${url(event.id)}/bulk`, 204, { contact_ids: ids.slice(0, 15), status: 'confirmed' }],
        [alice, 'POST', `${url(event.id)}/bulk`, 204, { contact_ids: ids.slice(15) }],
        [alice, 'POST', `${url(other.id)}/bulk`, 204, { contact_ids: ids.slice(0, 4) }]
      ])
      for (const q of ['', '&status=confirmed', '&status=invited']) {
        const all = ((await list(alice, event.id, `?size=100${q}`)).json().items as Json[]).map(i => i.id)
        const walked = (await itemsByCursor(t, alice, `${url(event.id)}?size=4${q}`)).map(i => i.id)
        assert.deepEqual(walked, all, q)
        assert.equal(new Set(walked).size, q === '' ? 23 : q.endsWith('confirmed') ? 15 : 8)
      }
      const first = (await list(alice, event.id, '?size=4')).json()
      for (const [id, query] of [
        [other.id, '?size=4'],
        [event.id, '?size=4&status=confirmed']
      ] as const) {
        const res = await refusedCursor(t, alice, `${url(id)}${query}`, first.next_cursor)
        assert.ok(
          res.json().errors.some((e: Json) => e.location === 'query.cursor'),
          res.body
        )
      }
    })
  })
}

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import {
  addManager,
  createContact,
  createEvent,
  insertContacts,
  topicsWithPayload,
  type Json
} from './event-collab.fixtures.ts'

for (const kind of databases()) {
  void describe(`${kind}: event attendees`, () => {
    const t = useTestApp(kind)

    async function setup () {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice, { template: 'generic' })
      return { tenant, alice, event }
    }
    const list = async (token: string, id: number, query = '') =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/attendees${query}` })

    void it('adds an attendee, refuses a duplicate and unknown or invisible contacts, lists with paging', async () => {
      const { tenant, alice, event } = await setup()
      const contact = await createContact(t, alice)
      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: contact, notes: 'VIP' }
      })
      assert.equal(res.statusCode, 201, res.body)
      const a = res.json()
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
        updated_at: ''
      })

      const dup = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: contact, status: 'confirmed' }
      })
      assert.equal(dup.statusCode, 409, dup.body)
      assert.equal(dup.json().errors[0].location, 'body.contact_id')

      const unknown = crypto.randomUUID()
      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: unknown }
      })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.deepEqual(bad.json().errors, [{ location: 'body.contact_id', message: 'unknown contact', value: unknown }])

      // bob's personal contact is invisible to alice
      const bob = await tenant.user('bob')
      const bobs = await createContact(t, bob)
      const hidden = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: bobs }
      })
      assert.equal(hidden.statusCode, 400, hidden.body)

      const badStatus = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: contact, status: 'maybe' }
      })
      assert.equal(badStatus.statusCode, 400)
      assert.equal(badStatus.json().errors[0].location, 'body.status')

      const more = await insertContacts(t, tenant.id, 'alice', 4)
      for (const c of more) {
        const r = await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/attendees`,
          payload: { contact_id: c, status: 'confirmed' }
        })
        assert.equal(r.statusCode, 201, r.body)
      }
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

      const topics = await topicsWithPayload(t, tenant.id, 'attendee.')
      assert.equal(topics.length, 5)
      assert.deepEqual(topics[0], {
        topic: 'attendee.added',
        payload: { event_id: event.id, contact_id: contact, status: 'invited', template: 'generic' }
      })
    })

    void it('updates a status (responded_at), removes, checks in idempotently', async () => {
      const { tenant, alice, event } = await setup()
      const contact = await createContact(t, alice)
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: contact }
      })

      const patched = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${event.id}/attendees/${contact}`,
        payload: { status: 'tentative' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().status, 'tentative')
      assert.ok(patched.json().responded_at !== null)
      const missing = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${event.id}/attendees/${crypto.randomUUID()}`,
        payload: { status: 'confirmed' }
      })
      assert.equal(missing.statusCode, 404)
      const noStatus = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${event.id}/attendees/${contact}`,
        payload: {}
      })
      assert.equal(noStatus.statusCode, 400)
      assert.equal(noStatus.json().errors[0].location, 'body.status')

      const first = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/${contact}/check-in`
      })
      assert.equal(first.statusCode, 204, first.body)
      const after1 = (await list(alice, event.id)).json().items[0]
      assert.equal(after1.status, 'checked_in')
      assert.equal(after1.is_checked_in, true)
      assert.ok(after1.checked_in_at !== null)
      const second = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/${contact}/check-in`,
        payload: {}
      })
      assert.equal(second.statusCode, 204)
      const after2 = (await list(alice, event.id)).json().items[0]
      assert.equal(after2.checked_in_at, after1.checked_in_at)
      const notAttending = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/${crypto.randomUUID()}/check-in`
      })
      assert.equal(notAttending.statusCode, 404)

      const del = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/attendees/${contact}` })
      assert.equal(del.statusCode, 204)
      assert.equal((await list(alice, event.id)).json().total, 0)
      const again = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/attendees/${contact}` })
      assert.equal(again.statusCode, 404)

      const topics = (await topicsWithPayload(t, tenant.id, 'attendee.')).map(r => r.topic)
      assert.deepEqual(topics, ['attendee.added', 'attendee.status_changed', 'attendee.checked_in', 'attendee.removed'])
    })

    void it('bulk adds hundreds, updates and removes in one call; an unknown contact applies nothing', async () => {
      const { tenant, alice, event } = await setup()
      const ids = await insertContacts(t, tenant.id, 'alice', 300)
      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: ids.slice(0, 250), status: 'confirmed' }
      })
      assert.equal(add.statusCode, 204, add.body)
      assert.equal((await list(alice, event.id, '?status=confirmed')).json().total, 250)

      // already attending ones are left alone; one unknown id refuses the whole call
      const unknown = crypto.randomUUID()
      const badAdd = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: [...ids.slice(200, 300), unknown] }
      })
      assert.equal(badAdd.statusCode, 400, badAdd.body)
      assert.deepEqual(badAdd.json().errors, [
        { location: 'body.contact_ids[100]', message: 'unknown contact', value: unknown }
      ])
      assert.equal((await list(alice, event.id)).json().total, 250)
      const readd = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: ids.slice(200, 300) }
      })
      assert.equal(readd.statusCode, 204)
      assert.equal((await list(alice, event.id)).json().total, 300)
      assert.equal((await list(alice, event.id, '?status=invited')).json().total, 50)

      const status = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${event.id}/attendees/bulk/status`,
        payload: { contact_ids: ids.slice(0, 100), status: 'declined' }
      })
      assert.equal(status.statusCode, 204, status.body)
      assert.equal((await list(alice, event.id, '?status=declined')).json().total, 100)
      const declined = (await list(alice, event.id, '?status=declined&size=1')).json().items[0]
      assert.ok(declined.responded_at !== null)

      const stranger = (await insertContacts(t, tenant.id, 'alice', 1))[0]
      const badStatus = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${event.id}/attendees/bulk/status`,
        payload: { contact_ids: [ids[150], stranger], status: 'tentative' }
      })
      assert.equal(badStatus.statusCode, 400, badStatus.body)
      assert.equal(badStatus.json().errors[0].location, 'body.contact_ids[1]')
      assert.equal((await list(alice, event.id, '?status=tentative')).json().total, 0)

      const tooMany = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: Array.from({ length: 1001 }, () => crypto.randomUUID()) }
      })
      assert.equal(tooMany.statusCode, 400)
      assert.equal(tooMany.json().errors[0].location, 'body.contact_ids')

      const remove = await t.as(alice, {
        method: 'DELETE',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: ids.slice(0, 150), status: 'declined' }
      })
      assert.equal(remove.statusCode, 204, remove.body)
      assert.equal((await list(alice, event.id)).json().total, 200)
      const badRemove = await t.as(alice, {
        method: 'DELETE',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: [ids[250], unknown] }
      })
      assert.equal(badRemove.statusCode, 400)
      assert.equal((await list(alice, event.id)).json().total, 200)
    })

    void it('bulk calls record one domain event per attendee changed: added in the order given, status changes with the previous status, removals', async () => {
      const { tenant, alice, event } = await setup()
      const ids = await insertContacts(t, tenant.id, 'alice', 600)
      const bulk = async (method: 'POST' | 'PATCH' | 'DELETE', path: string, payload: Json) => {
        const res = await t.as(alice, { method, url: `/api/v1/events/${event.id}/attendees/bulk${path}`, payload })
        assert.equal(res.statusCode, 204, res.body)
      }
      const events = async (topic: string) => (await topicsWithPayload(t, tenant.id, topic)).map(e => e.payload)

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
      const { tenant, alice, event } = await setup()
      const [contact, other] = await insertContacts(t, tenant.id, 'alice', 2, 'org-1')
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: contact }
      })

      // checkin role: read and check in, nothing else
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-1' })
      await addManager(t, tenant.id, event.id, 'carol', { role: 'event_manager:checkin' })
      assert.equal((await list(carol, event.id)).statusCode, 200)
      const addByCarol = await t.as(carol, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees`,
        payload: { contact_id: other }
      })
      assert.equal(addByCarol.statusCode, 403, addByCarol.body)
      assert.equal(
        (
          await t.as(carol, {
            method: 'PATCH',
            url: `/api/v1/events/${event.id}/attendees/${contact}`,
            payload: { status: 'confirmed' }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(carol, {
            method: 'DELETE',
            url: `/api/v1/events/${event.id}/attendees/bulk`,
            payload: { contact_ids: [contact] }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (await t.as(carol, { method: 'POST', url: `/api/v1/events/${event.id}/attendees/${contact}/check-in` }))
          .statusCode,
        204
      )

      // a manager with only event:edit cannot even read the attendees
      const dan = await tenant.user('dan')
      await addManager(t, tenant.id, event.id, 'dan', { permissions: ['event:edit'] })
      assert.equal((await list(dan, event.id)).statusCode, 403)
      assert.equal(
        (await t.as(dan, { method: 'POST', url: `/api/v1/events/${event.id}/attendees/${contact}/check-in` }))
          .statusCode,
        403
      )

      // attendees role: writes allowed
      const erin = await tenant.user('erin', ['member'], { orgId: 'org-1' })
      await addManager(t, tenant.id, event.id, 'erin', { permissions: ['attendees:read', 'attendees:write'] })
      assert.equal(
        (
          await t.as(erin, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees`,
            payload: { contact_id: other }
          })
        ).statusCode,
        201
      )

      // a viewer lacks events:write; someone who cannot see the event gets 404
      const viewer = await tenant.user('vic', ['viewer'])
      assert.equal(
        (
          await t.as(viewer, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees`,
            payload: { contact_id: contact }
          })
        ).statusCode,
        403
      )
      const stranger = await tenant.user('sam')
      assert.equal((await list(stranger, event.id)).statusCode, 404)

      // another tenant: 404 and nothing changed
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal((await list(mallory, event.id)).statusCode, 404)
      const del = await t.as(mallory, { method: 'DELETE', url: `/api/v1/events/${event.id}/attendees/${contact}` })
      assert.equal(del.statusCode, 404)
      const items = (await list(alice, event.id)).json().items as Json[]
      assert.equal(items.length, 2)
      assert.equal(items.find(i => i.contact_id === contact)?.status, 'checked_in')

      // an archived event is read-only
      assert.equal((await t.as(alice, { method: 'POST', url: `/api/v1/events/${event.id}/archive` })).statusCode, 204)
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/attendees/${contact}` })).statusCode,
        409
      )
      assert.equal((await list(alice, event.id)).json().total, 2)
    })

    void it("pages attendees by cursor as by page (bulk rows share created_at), per status, and refuses another event's cursor", async () => {
      const { tenant, alice, event } = await setup()
      const other = await createEvent(t, alice, { template: 'generic' })
      const ids = await insertContacts(t, tenant.id, 'alice', 23)
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees/bulk`,
            payload: { contact_ids: ids.slice(0, 15), status: 'confirmed' }
          })
        ).statusCode,
        204
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees/bulk`,
            payload: { contact_ids: ids.slice(15) }
          })
        ).statusCode,
        204
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${other.id}/attendees/bulk`,
            payload: { contact_ids: ids.slice(0, 4) }
          })
        ).statusCode,
        204
      )
      for (const q of ['', '&status=confirmed', '&status=invited']) {
        const all = ((await list(alice, event.id, `?size=100${q}`)).json().items as Json[]).map(i => i.id)
        const walked: number[] = []
        let cursor: string | null = null
        do {
          const body: Json = (
            await list(alice, event.id, `?size=4${q}${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          ).json()
          walked.push(...(body.items as Json[]).map(i => i.id))
          cursor = body.next_cursor
        } while (cursor !== null)
        assert.deepEqual(walked, all, q)
        assert.equal(new Set(walked).size, q === '' ? 23 : q.endsWith('confirmed') ? 15 : 8)
      }
      const first = (await list(alice, event.id, '?size=4')).json()
      for (const [id, query] of [
        [other.id, '?size=4'],
        [event.id, '?size=4&status=confirmed']
      ] as const) {
        const res = await list(alice, id, `${query}&cursor=${encodeURIComponent(first.next_cursor)}`)
        assert.equal(res.statusCode, 400, res.body)
        assert.ok(
          res.json().errors.some((e: Json) => e.location === 'query.cursor'),
          res.body
        )
      }
    })
  })
}

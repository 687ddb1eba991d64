/**
 * Registration as organizers see it: capacity and waitlist (positions, promotions, 409 without a waitlist),
 * approval, no-shows, cancellation, a series' settings followed by its occurrences, and 50 confirmations racing
 * for 10 seats. Every assertion reads the result back through the API (or the outbox and notification rows the
 * change wrote).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { addContact, addManager, createEvent, insertContacts, publishEvent, type Json } from './attendees.fixtures.ts'

const HOUR = 3_600_000

for (const kind of databases()) {
  void describe(`${kind}: event registration`, () => {
    const t = useTestApp(kind)

    /** A published event of alice's with `n` contacts of hers; registration settings set when given. */
    async function setup (n: number, registration?: Json, body: Json = {}) {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice, {
        start_dt: new Date(Date.now() + 24 * HOUR).toISOString(),
        end_dt: new Date(Date.now() + 26 * HOUR).toISOString(),
        ...body
      })
      await publishEvent(t, alice, event.id)
      if (registration !== undefined) {
        await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200, registration)
      }
      const contacts = await insertContacts(t, tenant.id, 'alice', n)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await sql`update contacts set email = 'c' || first_name || '@example.test' where tenant_id = ${tenant.id}`
          .execute(trx)
      })
      return { tenant, alice, event, contacts, url: `/api/v1/events/${event.id}/attendees` }
    }

    const attendees = async (token: string, eventId: number): Promise<Json[]> =>
      (await expectStatus(t, token, 'GET', `/api/v1/events/${eventId}/attendees?size=100`, 200)).json().items

    const byContact = (rows: Json[]) => new Map(rows.map(r => [r.contact_id as string, r]))

    const eventFigures = async (token: string, id: number) => {
      const e = (await expectStatus(t, token, 'GET', `/api/v1/events/${id}`, 200)).json()
      return {
        capacity: e.capacity,
        confirmed: e.confirmed_count,
        waitlist: e.waitlist_count,
        pending: e.pending_count,
        seats_left: e.seats_left
      }
    }

    void it('waitlists confirmations past capacity in order and promotes the first when a seat frees', async () => {
      const { tenant, alice, event, contacts, url } = await setup(5, { capacity: 2, waitlist_enabled: true })
      const [c0, c1, c2, c3, c4] = contacts as [string, string, string, string, string]
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1, c2, c3], status: 'confirmed' })
      let rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([c0, c1, c2, c3].map(c => [rows.get(c)?.status, rows.get(c)?.waitlist_position]), [
        ['confirmed', null], ['confirmed', null], ['waitlisted', 1], ['waitlisted', 2]
      ])
      assert.deepEqual(await eventFigures(alice, event.id),
        { capacity: 2, confirmed: 2, waitlist: 2, pending: 0, seats_left: 0 })

      // a single add past capacity says where it landed
      const added = (await expectStatus(t, alice, 'POST', url, 201, { contact_id: c4, status: 'confirmed' })).json()
      assert.deepEqual([added.status, added.waitlist_position], ['waitlisted', 3])

      // a confirmed attendee declines: the first waitlisted takes the seat, the others move up
      await expectStatus(t, alice, 'PATCH', `${url}/${c0}`, 200, { status: 'declined' })
      rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([c2, c3, c4].map(c => [rows.get(c)?.status, rows.get(c)?.waitlist_position]), [
        ['confirmed', null], ['waitlisted', 1], ['waitlisted', 2]
      ])
      const promoted = await outboxEvents(t, tenant.id, 'attendee.promoted')
      assert.deepEqual(promoted.map(p => [p.payload.contact_id, p.payload.previous_position]), [[c2, 1]])
      const notices = await notificationsTo(t, tenant.id, 'cC2@example.test')
      assert.deepEqual(notices.map(n => n.kind), ['attendee.promoted'])

      // removing a confirmed attendee frees a seat too
      await expectStatus(t, alice, 'DELETE', `${url}/${c1}`, 204)
      rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([c3, c4].map(c => [rows.get(c)?.status, rows.get(c)?.waitlist_position]), [
        ['confirmed', null], ['waitlisted', 1]
      ])

      // a waitlisted attendee who leaves closes the gap; capacity grown promotes at once
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200, { capacity: 2 })
      const grown = (await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200,
        { capacity: 3 })).json()
      assert.equal(grown.promoted, 1)
      assert.deepEqual(await eventFigures(alice, event.id),
        { capacity: 3, confirmed: 3, waitlist: 0, pending: 0, seats_left: 0 })
    })

    void it('promotes on a bulk decline, queues a newcomer behind whoever waits, ' +
      'keeps the place on a PATCH of notes', async () => {
      const { alice, event, contacts, url } = await setup(3, { capacity: 1, waitlist_enabled: true })
      const [c0, c1, c2] = contacts as [string, string, string]
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1], status: 'confirmed' })
      await expectStatus(t, alice, 'POST', url, 201, { contact_id: c2 })
      await expectStatus(t, alice, 'PATCH', `${url}/bulk/status`, 204, { contact_ids: [c0], status: 'declined' })
      let rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([rows.get(c1)?.status, rows.get(c1)?.waitlist_position], ['confirmed', null])

      await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 200, { status: 'confirmed' })
      await expectStatus(t, alice, 'PATCH', `${url}/${c0}`, 200, { status: 'confirmed' })
      rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([c2, c0].map(c => [rows.get(c)?.status, rows.get(c)?.waitlist_position]),
        [['waitlisted', 1], ['waitlisted', 2]])

      // the notes of a waitlisted attendee change with the status it has; its place is kept
      const noted = (await expectStatus(t, alice, 'PATCH', `${url}/${c0}`, 200,
        { status: 'waitlisted', notes: 'aisle seat' })).json()
      assert.deepEqual([noted.status, noted.waitlist_position, noted.notes], ['waitlisted', 2, 'aisle seat'])
      // leaving the line closes the gap
      await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 200, { status: 'tentative' })
      rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([rows.get(c0)?.status, rows.get(c0)?.waitlist_position], ['waitlisted', 1])
    })

    void it('refuses a confirmation past capacity without a waitlist, and a bulk add that does not fit, ' +
      'applying nothing', async () => {
      const { alice, event, contacts, url } = await setup(4, { capacity: 2 })
      const [c0, c1, c2, c3] = contacts as [string, string, string, string]
      const full = await expectStatus(t, alice, 'POST', `${url}/bulk`, 409,
        { contact_ids: [c0, c1, c2], status: 'confirmed' })
      assert.equal(full.json().errors[0].location, 'body.contact_ids[2]')
      assert.match(full.json().detail, /full \(capacity 2\) and has no waitlist/)
      assert.equal((await attendees(alice, event.id)).length, 0, 'nothing was applied')

      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1, c2] })
      await expectStatus(t, alice, 'PATCH', `${url}/bulk/status`, 204, { contact_ids: [c0, c1], status: 'confirmed' })
      const one = await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 409, { status: 'confirmed' })
      assert.equal(one.json().errors[0].location, 'body.status')
      assert.equal(byContact(await attendees(alice, event.id)).get(c2)?.status, 'invited')
      await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 400, { status: 'waitlisted' })

      // capacity below the confirmed count: allowed, nobody demoted, and the answer says so
      const lowered = (await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200,
        { capacity: 1 })).json()
      assert.equal(lowered.over_capacity, 1)
      assert.match(lowered.notice, /nobody was demoted/)
      assert.equal((await attendees(alice, event.id)).filter(a => a.status === 'confirmed').length, 2)
      await expectStatus(t, alice, 'POST', url, 409, { contact_id: c3, status: 'confirmed' })
    })

    void it('holds registrations for approval; approval respects capacity; ' +
      'the attendee and the managers are told', async () => {
      const { tenant, alice, event, contacts, url } = await setup(4,
        { capacity: 1, waitlist_enabled: true, requires_approval: true })
      const [c0, c1, c2, c3] = contacts as [string, string, string, string]
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1, c2], status: 'confirmed' })
      assert.deepEqual((await attendees(alice, event.id)).map(a => a.status), ['pending', 'pending', 'pending'])
      // alice has no stored profile here: her notice is kept undeliverable, addressed to her user id
      const toManagers = await notificationsTo(t, tenant.id, 'user:alice')
      assert.deepEqual(toManagers.map(n => [n.kind, n.subject]),
        [['registration.pending', '3 registration(s) to approve: Launch party']])

      const approved = (await expectStatus(t, alice, 'POST', `${url}/${c0}/approve`, 200)).json()
      assert.deepEqual([approved.status, approved.approved_by], ['confirmed', 'alice'])
      const bulk = (await expectStatus(t, alice, 'POST', `${url}/bulk/approve`, 200, { contact_ids: [c1] })).json()
      assert.deepEqual(bulk.items.map((a: Json) => [a.status, a.waitlist_position]), [['waitlisted', 1]])
      await expectStatus(t, alice, 'POST', `${url}/${c2}/decline`, 200)

      const refused = await expectStatus(t, alice, 'POST', `${url}/${c2}/approve`, 409)
      assert.match(refused.json().errors[0].message, /declined registration cannot be approved/)
      await expectStatus(t, alice, 'POST', `${url}/${c0}/approve`, 409)
      const mixed = await expectStatus(t, alice, 'POST', `${url}/bulk/approve`, 409, { contact_ids: [c3, c0] })
      assert.equal(mixed.json().errors[0].location, 'body.contact_ids[1]')

      const told = await notificationsTo(t, tenant.id, 'cC0@example.test')
      assert.deepEqual(told.map(n => n.kind), ['attendee.approved'])
      assert.deepEqual((await notificationsTo(t, tenant.id, 'cC1@example.test')).map(n => n.kind),
        ['attendee.waitlisted'])
      assert.deepEqual((await notificationsTo(t, tenant.id, 'cC2@example.test')).map(n => n.kind),
        ['attendee.declined'])

      // a member without attendees:write may not approve; a viewer neither; another tenant does not see the event
      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, event.id, 'bob', { role: 'event_manager:checkin' })
      await expectStatus(t, bob, 'POST', `${url}/${c3}/approve`, 403)
      await expectStatus(t, await tenant.user('vera', ['viewer']), 'POST', `${url}/${c3}/approve`, 403)
      await expectStatus(t, await newTenant(t).user('mallory'), 'POST', `${url}/${c3}/approve`, 404)
      assert.equal(byContact(await attendees(alice, event.id)).get(c3), undefined)
    })

    void it('marks no-shows only after the event, and counts them', async () => {
      const past = {
        start_dt: new Date(Date.now() - 5 * HOUR).toISOString(),
        end_dt: new Date(Date.now() - 3 * HOUR).toISOString()
      }
      const { alice, event, contacts, url } = await setup(3, undefined, past)
      const [c0, c1, c2] = contacts as [string, string, string]
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1, c2], status: 'confirmed' })
      await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 200, { status: 'checked_in' })
      await expectStatus(t, alice, 'PATCH', `${url}/${c2}`, 409, { status: 'no_show' })
      const marked = (await expectStatus(t, alice, 'POST', `${url}/no-shows`, 200)).json()
      assert.equal(marked.marked, 2)
      const rows = byContact(await attendees(alice, event.id))
      assert.deepEqual([c0, c1, c2].map(c => rows.get(c)?.status), ['no_show', 'no_show', 'checked_in'])
      const e = (await expectStatus(t, alice, 'GET', `/api/v1/events/${event.id}`, 200)).json()
      assert.equal(e.no_show_count, 2)

      const future = await setup(1)
      await expectStatus(t, future.alice, 'POST', `${future.url}/bulk`, 204,
        { contact_ids: future.contacts, status: 'confirmed' })
      const early = await expectStatus(t, future.alice, 'POST', `${future.url}/no-shows`, 409)
      assert.match(early.json().detail, /once the event has ended/)
      await expectStatus(t, future.alice, 'PATCH', `${future.url}/${future.contacts[0] ?? ''}`, 409, {
        status: 'no_show'
      })
    })

    void it('cancels an event: readable, marked, closed to registrations, every attendee told once', async () => {
      const { tenant, alice, event, contacts, url } = await setup(3)
      const [c0, c1, c2] = contacts as [string, string, string]
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c0, c1], status: 'confirmed' })
      await expectStatus(t, alice, 'PATCH', `${url}/${c1}`, 200, { status: 'declined' })
      await expectStatus(t, await tenant.user('vera', ['viewer']), 'POST', `/api/v1/events/${event.id}/cancel`, 403,
        { reason: 'x' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/cancel`, 400, { reason: '' })
      const res = (await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/cancel`, 200,
        { reason: 'Venue flooded' })).json()
      assert.deepEqual(res, { $schema: res.$schema, cancelled: [event.id], notified: 1 })

      const e = (await expectStatus(t, alice, 'GET', `/api/v1/events/${event.id}`, 200)).json()
      assert.equal(e.cancellation_reason, 'Venue flooded')
      assert.equal(typeof e.cancelled_at, 'string')
      const listed = (await expectStatus(t, alice, 'GET', '/api/v1/events?size=10', 200)).json().items as Json[]
      assert.equal(listed.find(i => i.id === event.id)?.cancellation_reason, 'Venue flooded')

      await expectStatus(t, alice, 'POST', url, 409, { contact_id: c2 })
      await expectStatus(t, alice, 'PATCH', `${url}/${c1}`, 409, { status: 'confirmed' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/cancel`, 409, { reason: 'again' })
      assert.deepEqual((await notificationsTo(t, tenant.id, 'cC0@example.test')).map(n => n.kind), ['event.cancelled'])
      assert.deepEqual(await notificationsTo(t, tenant.id, 'cC1@example.test'), [], 'who declined is not told')
      const cancelled = await outboxEvents(t, tenant.id, 'event.cancelled')
      assert.deepEqual(cancelled.map(c => [c.payload.event_id, c.payload.reason]), [[event.id, 'Venue flooded']])
    })

    void it("lets a series' settings reach its occurrences unless one sets its own; " +
      'cancels the rest of a series', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const created = (await expectStatus(t, alice, 'POST', '/api/v1/events/with-series', 201, {
        title: 'Weekly class',
        start_dt: new Date(Date.now() + 24 * HOUR).toISOString(),
        end_dt: new Date(Date.now() + 25 * HOUR).toISOString(),
        series: { freq: 'daily', ends_on: 'after_n', end_count: 3 }
      })).json()
      const anchor = created.event.id as number
      await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor}/series/publish`, 204)
      const occurrences = (await expectStatus(t, alice, 'GET', `/api/v1/events/${anchor}/series/occurrences`, 200))
        .json().items as Json[]
      const [o0, o1, o2] = occurrences.map(o => o.id as number) as [number, number, number]

      const s = (await expectStatus(t, alice, 'PATCH', `/api/v1/events/${anchor}/series/registration`, 200,
        { capacity: 20, requires_approval: true })).json()
      assert.deepEqual([s.capacity, s.requires_approval, s.occurrences_following], [20, true, 3])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${o1}/registration`, 200, { capacity: 5 })
      const figures = async (id: number) => {
        const r = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/registration`, 200)).json()
        return [r.capacity, r.requires_approval, r.registration_inherited]
      }
      assert.deepEqual(await figures(o0), [20, true, true])
      assert.deepEqual(await figures(o1), [5, false, false])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${o1}/registration`, 200, { inherit: true })
      assert.deepEqual(await figures(o1), [20, true, true])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${o1}/registration`, 400, { inherit: true, capacity: 3 })

      // one contact attends both occurrences cancelled: told once in `notified`, one mail per occurrence
      const pupil = await addContact(t, alice, 'pupil@example.test')
      for (const o of [o1, o2]) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${o}/attendees`, 201, { contact_id: pupil })
      }
      const cancel = (await expectStatus(t, alice, 'POST', `/api/v1/events/${o1}/cancel`, 200,
        { reason: 'Teacher away', scope: 'future' })).json()
      assert.deepEqual(cancel.cancelled, [o1, o2])
      assert.equal(cancel.notified, 1)
      assert.deepEqual((await notificationsTo(t, tenant.id, 'pupil@example.test')).map(n => n.kind),
        ['event.cancelled', 'event.cancelled'])
      const still = (await expectStatus(t, alice, 'GET', `/api/v1/events/${o0}`, 200)).json()
      assert.equal(still.cancelled_at, null)
    })

    if (kind === 'pg') {
      void it('gives exactly 10 seats to 50 confirmations racing for them, and waitlists the rest 1..40', async () => {
        const { alice, event, contacts, url } = await setup(50, { capacity: 10, waitlist_enabled: true })
        const answers = await Promise.all(contacts.map(async c =>
          await t.as(alice, { method: 'POST', url, payload: { contact_id: c, status: 'confirmed' } })))
        assert.deepEqual([...new Set(answers.map(a => a.statusCode))], [201])
        const rows = await attendees(alice, event.id)
        assert.equal(rows.filter(r => r.status === 'confirmed').length, 10)
        const positions = rows.filter(r => r.status === 'waitlisted').map(r => r.waitlist_position as number)
        assert.deepEqual(positions.sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1))
        // the order of the answers is the order of the waitlist: each answer named its own position
        const named = answers.map(a => a.json()).filter(a => a.status === 'waitlisted').map(a => a.waitlist_position)
        assert.deepEqual(named.sort((a, b) => a - b), positions)
      })
    }
  })
}

/** The notifications queued to an address (kind from the payload), oldest first. */
async function notificationsTo (t: TestApp, tenantId: string, recipient: string) {
  return await withTenant(t.ctx.db, { tenantId }, async trx => {
    const rows = await trx.selectFrom('notification_outbox').select(['subject', 'payload'])
      .where('tenant_id', '=', tenantId).where('recipient', '=', recipient).orderBy('id').execute()
    return rows.map(r => ({ subject: r.subject, kind: (r.payload as Json).kind }))
  })
}

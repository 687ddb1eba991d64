/**
 * Check-in as a door uses it (docs/check-in.md): who, how and when, seen through the attendee list; one activity row
 * and one domain event per real change, none for a repeat; refusals, the same by status (PATCH, bulk status, add:
 * one transition table); undo; check-out and re-entry; check-in tokens and their QR payload; who may do what.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { insertRow, updateRows } from '../../../test/helpers/rows.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import { addManager, createContact, createEvent, publishEvent, type Json } from './attendees.fixtures.ts'
import { transitionsMarkdown } from './attendees.transitions.ts'

type Status = 'invited' | 'confirmed' | 'declined' | 'tentative' | 'checked_in' | 'pending' | 'waitlisted' | 'no_show'

for (const kind of databases()) {
  void describe(`${kind}: event check-in`, () => {
    const t = useTestApp(kind)

    const base = (eventId: number) => `/api/v1/events/${eventId}/attendees`

    /** The attendees of an event by contact id, as the list shows them. */
    async function attendees (token: string, eventId: number): Promise<Map<string, Json>> {
      const res = await expectStatus(t, token, 'GET', `${base(eventId)}?size=100`, 200)
      return new Map((res.json().items as Json[]).map(i => [i.contact_id as string, i]))
    }

    /** An attendee as the list shows it, less the guest's answers (which check-in answers never carry). */
    async function attendee (token: string, eventId: number, contactId: string): Promise<Json> {
      const found = (await attendees(token, eventId)).get(contactId)
      assert.ok(found !== undefined, `${contactId} attends ${eventId}`)
      const { answers: _answers, answers_updated_at: _answered, ...shown } = found
      return shown
    }

    /** The event's activity rows of one kind, newest first. */
    async function activity (token: string, eventId: number, kind: string): Promise<Json[]> {
      const res = await expectStatus(t, token, 'GET', `/api/v1/events/${eventId}/activity?kind=${kind}`, 200)
      return res.json().items as Json[]
    }

    /** A contact of alice attending the event with a status, added through the API. */
    async function attending (alice: string, eventId: number, status: Status = 'confirmed'): Promise<string> {
      const contact = await createContact(t, alice)
      await expectStatus(t, alice, 'POST', base(eventId), 201, { contact_id: contact, status })
      return contact
    }

    /** A contact of alice attending with a status the add route does not give (waitlisted, pending), through SQL. */
    async function attendingAs (tenantId: string, alice: string, eventId: number, status: Status): Promise<string> {
      const contact = await createContact(t, alice)
      await insertRow(t, tenantId, 'attendees', {
        event_id: eventId,
        contact_id: contact,
        status,
        waitlist_position: status === 'waitlisted' ? 1 : null
      })
      return contact
    }

    const checkIn = async (token: string, eventId: number, contactId: string, o: {
      body?: Json, prefer?: boolean
    } = {}): Promise<LightMyRequestResponse> => await t.as(token, {
      method: 'POST',
      url: `${base(eventId)}/${contactId}/check-in`,
      ...(o.prefer === true ? { headers: { prefer: 'return=representation' } } : {}),
      ...(o.body !== undefined ? { payload: o.body } : {})
    })

    const byToken = async (token: string, eventId: number, body: Json): Promise<LightMyRequestResponse> =>
      await t.as(token, { method: 'POST', url: `/api/v1/events/${eventId}/check-in/token`, payload: body })

    async function issueToken (token: string, eventId: number, contactId: string): Promise<Json> {
      return (await expectStatus(t, token, 'POST', `${base(eventId)}/${contactId}/check-in-token`, 201)).json()
    }

    void it('records who, how and when, seen through the list; a repeat says so and changes nothing', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const contact = await attending(alice, id, 'confirmed')

      const first = await checkIn(alice, id, contact, { body: { method: 'scan' } })
      assert.equal(first.statusCode, 204, first.body)
      assert.equal(first.headers['check-in-result'], 'checked-in')
      const seen = await attendee(alice, id, contact)
      assert.deepEqual(
        [seen.status, seen.is_checked_in, seen.checked_in_by, seen.check_in_method, seen.checked_out_at],
        ['checked_in', true, 'alice', 'scan', null]
      )
      assert.ok(Date.now() - Date.parse(seen.checked_in_at) < 60_000)

      // a repeat: 200 with Prefer, 204 without, both "already", nothing changed
      const again = await checkIn(alice, id, contact, { prefer: true, body: { method: 'manual' } })
      assert.equal(again.statusCode, 200, again.body)
      assert.equal(again.headers['check-in-result'], 'already-checked-in')
      assert.equal(again.headers['preference-applied'], 'return=representation')
      const body = again.json()
      assert.equal(body.$schema, 'http://localhost:8080/schemas/CheckInResult.json')
      assert.equal(body.already_checked_in, true)
      assert.deepEqual(body.attendee, seen)
      const third = await checkIn(alice, id, contact)
      assert.equal(third.statusCode, 204)
      assert.equal(third.headers['check-in-result'], 'already-checked-in')
      assert.deepEqual(await attendee(alice, id, contact), seen)

      const rows = await activity(alice, id, 'attendee.checked_in')
      assert.deepEqual(rows.map(r => [r.actor_id, r.payload]), [
        ['alice', { contact_id: contact, method: 'scan', previous_status: 'confirmed' }]
      ])
      const events = (await outboxEvents(t, tenant.id, 'attendee.checked_in')).map(e => e.payload as Json)
      assert.equal(events.length, 1)
      assert.deepEqual({ ...events[0], checked_in_at: Date.parse(events[0]?.checked_in_at) }, {
        event_id: id,
        contact_id: contact,
        status: 'checked_in',
        template: 'generic',
        previous_status: 'confirmed',
        checked_in_at: Date.parse(seen.checked_in_at),
        method: 'scan',
        checked_in_by: 'alice'
      })

      // a first check-in asking for the representation; manual by default
      const other = await attending(alice, id, 'invited')
      const fresh = await checkIn(alice, id, other, { prefer: true })
      assert.equal(fresh.statusCode, 200, fresh.body)
      assert.equal(fresh.headers['check-in-result'], 'checked-in')
      assert.equal(fresh.json().already_checked_in, false)
      assert.deepEqual(fresh.json().attendee, await attendee(alice, id, other))
      assert.equal(fresh.json().attendee.check_in_method, 'manual')

      // an Idempotency-Key: the repeat replays the first answer
      const keyed = async (url: string, payload: Json) => await t.as(alice, {
        method: 'POST', url, headers: { 'idempotency-key': `k-${url}` }, payload
      })
      const walkIn = await attending(alice, id, 'declined')
      const k1 = await keyed(`${base(id)}/${walkIn}/check-in`, {})
      const k2 = await keyed(`${base(id)}/${walkIn}/check-in`, {})
      assert.deepEqual([k1.statusCode, k2.statusCode, k2.headers['idempotent-replayed']], [204, 204, 'true'])
      const tk = await issueToken(alice, id, await attending(alice, id, 'confirmed'))
      const s1 = await keyed(`/api/v1/events/${id}/check-in/token`, { token: tk.token })
      const s2 = await keyed(`/api/v1/events/${id}/check-in/token`, { token: tk.token })
      assert.deepEqual([s1.statusCode, s2.statusCode, s2.headers['idempotent-replayed']], [200, 200, 'true'])
      assert.deepEqual([s1.json().already_checked_in, s2.json().already_checked_in], [false, false])

      await expectStatuses(t, [
        [alice, 'POST', `${base(id)}/${crypto.randomUUID()}/check-in`, 404],
        [alice, 'POST', `${base(id)}/${other}/check-in`, 400, { method: 'teleport' }]
      ])
      assert.equal((await activity(alice, id, 'attendee.checked_in')).length, 4)
    })

    void it('refuses waitlisted and pending attendees and a cancelled event (409, nothing changed)', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const waitlisted = await attendingAs(tenant.id, alice, id, 'waitlisted')
      const pending = await attendingAs(tenant.id, alice, id, 'pending')
      const before = await attendees(alice, id)

      const w = await checkIn(alice, id, waitlisted)
      assert.equal(w.statusCode, 409, w.body)
      assert.match(w.json().detail, /waitlisted.*no seat/)
      assert.deepEqual(w.json().errors, [
        { location: 'path.contact_id', message: 'waitlisted: holds no seat', value: waitlisted }
      ])
      const p = await checkIn(alice, id, pending, { prefer: true })
      assert.equal(p.statusCode, 409, p.body)
      assert.match(p.json().detail, /awaits approval/)
      assert.equal(p.json().errors[0].location, 'path.contact_id')
      assert.deepEqual(await attendees(alice, id), before)

      // a cancelled event: nobody checks in, not even a confirmed attendee
      const confirmed = await attending(alice, id, 'confirmed')
      await updateRows(t, tenant.id, 'events', { cancelled_at: new Date() }, { id })
      const c = await checkIn(alice, id, confirmed)
      assert.equal(c.statusCode, 409, c.body)
      assert.match(c.json().detail, /cancelled/)
      assert.equal(c.json().errors[0].location, 'path.id')
      assert.equal((await attendee(alice, id, confirmed)).status, 'confirmed')

      assert.deepEqual(await activity(alice, id, 'attendee.checked_in'), [])
      assert.deepEqual(await outboxEvents(t, tenant.id, 'attendee.checked_in'), [])
    })

    /** The answer to a PATCH of one attendee's status. */
    const patchStatus = async (token: string, eventId: number, contactId: string, status: Status) =>
      await t.as(token, { method: 'PATCH', url: `${base(eventId)}/${contactId}`, payload: { status } })

    /** Asserts two refusals are the same problem: status, detail and errors. */
    function sameProblem (byStatus: LightMyRequestResponse, byDoor: LightMyRequestResponse): void {
      assert.equal(byStatus.statusCode, 409, byStatus.body)
      assert.equal(byDoor.statusCode, 409, byDoor.body)
      const [a, b] = [byStatus.json(), byDoor.json()]
      assert.deepEqual([a.status, a.detail], [b.status, b.detail])
      assert.deepEqual(a.errors, b.errors)
    }

    void it('refuses a check-in by PATCH of a pending or waitlisted attendee as check-in does ' +
      '(409, unchanged)', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const pending = await attendingAs(tenant.id, alice, id, 'pending')
      const waitlisted = await attendingAs(tenant.id, alice, id, 'waitlisted')
      const before = await attendees(alice, id)

      const p = await patchStatus(alice, id, pending, 'checked_in')
      sameProblem(p, await checkIn(alice, id, pending))
      assert.equal(p.json().detail, 'the attendee awaits approval: approve the registration before checking them in')
      assert.deepEqual(p.json().errors,
        [{ location: 'path.contact_id', message: 'pending: awaits approval', value: pending }])
      const w = await patchStatus(alice, id, waitlisted, 'checked_in')
      sameProblem(w, await checkIn(alice, id, waitlisted))
      assert.equal(w.json().detail,
        'the attendee is waitlisted and holds no seat: confirm them before checking them in')
      assert.deepEqual(w.json().errors,
        [{ location: 'path.contact_id', message: 'waitlisted: holds no seat', value: waitlisted }])

      const after = await attendees(alice, id)
      assert.deepEqual(after, before)
      assert.deepEqual([after.get(pending)?.status, after.get(waitlisted)?.status], ['pending', 'waitlisted'])
      assert.deepEqual(await outboxEvents(t, tenant.id, 'attendee.status_changed'), [])
    })

    void it('refuses a bulk status checked_in naming the pending or waitlisted attendee among valid ones; ' +
      'applies nothing', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const confirmed = await attending(alice, id, 'confirmed')
      const invited = await attending(alice, id, 'invited')
      const pending = await attendingAs(tenant.id, alice, id, 'pending')
      const waitlisted = await attendingAs(tenant.id, alice, id, 'waitlisted')
      // full, with a waitlist: the waitlisted attendee keeps waiting throughout
      await updateRows(t, tenant.id, 'events', { capacity: 1, waitlist_enabled: true }, { id })
      const before = await attendees(alice, id)
      const bulk = `${base(id)}/bulk/status`

      const one = await expectStatus(t, alice, 'PATCH', bulk, 409, {
        contact_ids: [confirmed, pending, invited], status: 'checked_in'
      })
      assert.deepEqual(one.json().errors, [
        { location: 'body.contact_ids[1]', message: 'pending: awaits approval', value: pending }
      ])
      assert.equal(one.json().detail,
        'the attendee awaits approval: approve the registration before checking them in; nothing was applied')
      const two = await expectStatus(t, alice, 'PATCH', bulk, 409, {
        contact_ids: [waitlisted, confirmed, pending], status: 'checked_in'
      })
      assert.deepEqual(two.json().errors, [
        { location: 'body.contact_ids[0]', message: 'waitlisted: holds no seat', value: waitlisted },
        { location: 'body.contact_ids[2]', message: 'pending: awaits approval', value: pending }
      ])
      assert.match(two.json().detail, /^2 request\(s\) refused \(the attendee is waitlisted.*nothing was applied$/)

      assert.deepEqual(await attendees(alice, id), before)
      assert.deepEqual(await outboxEvents(t, tenant.id, 'attendee.status_changed'), [])
      // the valid ones alone: checked in (past capacity: they are at the door)
      await expectStatus(t, alice, 'PATCH', bulk, 204, { contact_ids: [confirmed, invited], status: 'checked_in' })
      const after = await attendees(alice, id)
      assert.deepEqual([confirmed, invited, pending, waitlisted].map(c => after.get(c)?.status),
        ['checked_in', 'checked_in', 'pending', 'waitlisted'])
    })

    void it('refuses a check-in by status on a cancelled event as check-in does: PATCH, bulk status, add', async () => {
      const { alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      await publishEvent(t, alice, id)
      const confirmed = await attending(alice, id, 'confirmed')
      const invited = await attending(alice, id, 'invited')
      const inside = await attending(alice, id, 'confirmed')
      await expectStatus(t, alice, 'POST', `${base(id)}/${inside}/check-in`, 204)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/cancel`, 200, { reason: 'Storm', notify: false })
      const before = await attendees(alice, id)

      const patched = await patchStatus(alice, id, confirmed, 'checked_in')
      sameProblem(patched, await checkIn(alice, id, confirmed))
      assert.equal(patched.json().detail, 'the event was cancelled: nobody checks in')
      assert.deepEqual(patched.json().errors, [{ location: 'path.id', message: 'event cancelled', value: id }])
      // a repeat by status is refused as a repeat at the door is
      sameProblem(await patchStatus(alice, id, inside, 'checked_in'), await checkIn(alice, id, inside))

      const bulk = await expectStatus(t, alice, 'PATCH', `${base(id)}/bulk/status`, 409, {
        contact_ids: [invited, confirmed], status: 'checked_in'
      })
      assert.deepEqual(bulk.json().errors, [{ location: 'path.id', message: 'event cancelled', value: id }])
      assert.match(bulk.json().detail, /nobody checks in.*nothing was applied/)
      const walkIn = await createContact(t, alice)
      const added = await t.as(alice, {
        method: 'POST', url: base(id), payload: { contact_id: walkIn, status: 'checked_in' }
      })
      sameProblem(added, await checkIn(alice, id, confirmed))
      const bulkAdd = await expectStatus(t, alice, 'POST', `${base(id)}/bulk`, 409, {
        contact_ids: [walkIn], status: 'checked_in'
      })
      assert.equal(bulkAdd.json().detail, 'the event was cancelled: nobody checks in')

      assert.deepEqual(await attendees(alice, id), before)
      assert.equal((await attendee(alice, id, confirmed)).status, 'confirmed')
      assert.equal((await attendees(alice, id)).has(walkIn), false)
      assert.equal((await activity(alice, id, 'attendee.checked_in')).length, 1)
      // what a cancelled event still takes: a decline, the undo of a check-in
      await expectStatus(t, alice, 'PATCH', `${base(id)}/${confirmed}`, 200, { status: 'declined' })
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${inside}/check-in`, 204)
      const after = await attendees(alice, id)
      assert.deepEqual([confirmed, inside].map(c => after.get(c)?.status), ['declined', 'confirmed'])
    })

    void it('checks in walk-ins and late arrivals (no_show, declined, invited, tentative); ' +
      'undo restores each', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const statuses: Status[] = ['no_show', 'declined', 'invited', 'tentative']
      const contacts = await Promise.all(statuses.map(async s => await attendingAs(tenant.id, alice, id, s)))
      for (const c of contacts) await expectStatus(t, alice, 'POST', `${base(id)}/${c}/check-in`, 204)
      const inside = await attendees(alice, id)
      assert.deepEqual(contacts.map(c => inside.get(c)?.status), statuses.map(() => 'checked_in'))

      for (const c of contacts) await expectStatus(t, alice, 'DELETE', `${base(id)}/${c}/check-in`, 204)
      const after = await attendees(alice, id)
      assert.deepEqual(contacts.map(c => after.get(c)?.status), statuses)
      for (const c of contacts) {
        const a = after.get(c) as Json
        assert.deepEqual(
          [a.is_checked_in, a.checked_in_at, a.checked_in_by, a.check_in_method, a.checked_out_at],
          [false, null, null, null, null]
        )
      }
      const undone = await activity(alice, id, 'attendee.check_in_undone')
      assert.equal(undone.length, 4)
      assert.deepEqual(
        { ...undone[0]?.payload, checked_in_at: typeof undone[0]?.payload.checked_in_at },
        { contact_id: contacts[3], restored_status: 'tentative', checked_in_at: 'string' }
      )
      const events = (await outboxEvents(t, tenant.id, 'attendee.check_in_undone')).map(e => e.payload as Json)
      assert.deepEqual(
        events.map(p => [p.contact_id, p.status, p.previous_status]),
        contacts.map((c, i) => [c, statuses[i], 'checked_in'])
      )

      // undo of what is not checked in: 409, nothing recorded
      const not = await t.as(alice, { method: 'DELETE', url: `${base(id)}/${contacts[0] ?? ''}/check-in` })
      assert.equal(not.statusCode, 409, not.body)
      assert.deepEqual(not.json().errors,
        [{ location: 'path.contact_id', message: 'not checked in', value: contacts[0] }])
      assert.equal((await activity(alice, id, 'attendee.check_in_undone')).length, 4)
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${crypto.randomUUID()}/check-in`, 404)

      // checked in by another path (no status recorded to return to): back to confirmed
      const old = await createContact(t, alice)
      await insertRow(t, tenant.id, 'attendees', {
        event_id: id, contact_id: old, status: 'checked_in', is_checked_in: true, checked_in_at: new Date()
      })
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${old}/check-in`, 204)
      assert.equal((await attendee(alice, id, old)).status, 'confirmed')
    })

    void it('takes a seat, even past capacity; an undo that frees it promotes the first waitlisted', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      await updateRows(t, tenant.id, 'events', { capacity: 1, waitlist_enabled: true }, { id })
      const walkIn = await attendingAs(tenant.id, alice, id, 'invited')
      const waiting = await attendingAs(tenant.id, alice, id, 'waitlisted')
      // the walk-in takes the only seat; a confirmed attendee checked in goes past capacity
      await expectStatus(t, alice, 'POST', `${base(id)}/${walkIn}/check-in`, 204)
      const seated = await attendingAs(tenant.id, alice, id, 'confirmed')
      await expectStatus(t, alice, 'POST', `${base(id)}/${seated}/check-in`, 204)
      // undone back to confirmed: the seat stays taken, nobody promoted
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${seated}/check-in`, 204)
      assert.equal((await attendee(alice, id, waiting)).status, 'waitlisted')
      await expectStatus(t, alice, 'PATCH', `${base(id)}/${seated}`, 200, { status: 'declined' })
      assert.equal((await attendee(alice, id, waiting)).status, 'waitlisted')

      // the walk-in undone: back to invited, the seat goes to the waitlist
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${walkIn}/check-in`, 204)
      const promoted = await attendee(alice, id, waiting)
      assert.deepEqual([promoted.status, promoted.waitlist_position], ['confirmed', null])
      assert.deepEqual(
        (await outboxEvents(t, tenant.id, 'attendee.promoted')).map(e => (e.payload as Json).contact_id),
        [waiting]
      )
    })

    void it('checks out (status stays checked_in), lets back in (re-entry), each change one activity row', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const contact = await attending(alice, id, 'tentative')
      const out = `${base(id)}/${contact}/check-out`

      const early = await expectStatus(t, alice, 'POST', out, 409)
      assert.deepEqual(early.json().errors,
        [{ location: 'path.contact_id', message: 'not checked in', value: contact }])

      await expectStatus(t, alice, 'POST', `${base(id)}/${contact}/check-in`, 204, { method: 'api' })
      const arrived = await attendee(alice, id, contact)
      const first = await expectStatus(t, alice, 'POST', out, 204)
      assert.equal(first.headers['check-out-result'], 'checked-out')
      const left = await attendee(alice, id, contact)
      assert.deepEqual([left.status, left.is_checked_in, left.checked_out_by], ['checked_in', true, 'alice'])
      assert.ok(left.checked_out_at !== null)
      const second = await expectStatus(t, alice, 'POST', out, 204)
      assert.equal(second.headers['check-out-result'], 'already-checked-out')
      assert.deepEqual(await attendee(alice, id, contact), left)
      assert.equal((await activity(alice, id, 'attendee.checked_out')).length, 1)

      // back in: not "already", the check-out cleared, the arrival kept
      const back = await checkIn(alice, id, contact, { prefer: true })
      assert.equal(back.statusCode, 200, back.body)
      assert.equal(back.headers['check-in-result'], 'checked-in')
      assert.equal(back.json().already_checked_in, false)
      const inside = await attendee(alice, id, contact)
      assert.deepEqual(
        [inside.status, inside.checked_out_at, inside.checked_out_by, inside.checked_in_at, inside.check_in_method],
        ['checked_in', null, null, arrived.checked_in_at, 'api']
      )
      const entries = await activity(alice, id, 'attendee.checked_in')
      assert.deepEqual(entries.map(r => r.payload), [
        { contact_id: contact, method: 'manual', previous_status: 'checked_in', re_entry: true },
        { contact_id: contact, method: 'api', previous_status: 'tentative' }
      ])
      assert.equal((await checkIn(alice, id, contact)).headers['check-in-result'], 'already-checked-in')
      assert.equal((await activity(alice, id, 'attendee.checked_in')).length, 2)

      // undo after a re-entry: back to the status before the first check-in
      await expectStatus(t, alice, 'DELETE', `${base(id)}/${contact}/check-in`, 204)
      assert.equal((await attendee(alice, id, contact)).status, 'tentative')
      assert.deepEqual((await outboxEvents(t, tenant.id, 'attendee.')).map(e => e.topic), [
        'attendee.added',
        'attendee.checked_in',
        'attendee.checked_out',
        'attendee.checked_in',
        'attendee.check_in_undone'
      ])
      const [outEvent] = await outboxEvents(t, tenant.id, 'attendee.checked_out')
      assert.deepEqual(Object.keys(outEvent?.payload as Json).sort(), [
        'checked_in_at', 'checked_out_at', 'checked_out_by', 'contact_id', 'event_id', 'status', 'template'
      ])
    })

    void it('issues check-in tokens (only the hash stored) and checks in by token or QR payload', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const contact = await attending(alice, id, 'confirmed')
      const tokenUrl = `${base(id)}/${contact}/check-in-token`

      await expectStatus(t, alice, 'DELETE', tokenUrl, 404)
      const issued = await issueToken(alice, id, contact)
      assert.match(issued.token, /^[\w-]{43}$/)
      assert.equal(issued.qr_payload, `collab-checkin:v1:${id}:${issued.token}`)
      assert.equal(issued.$schema, 'http://localhost:8080/schemas/CheckInToken.json')
      assert.equal((await attendee(alice, id, contact)).check_in_token_issued_at, issued.issued_at)
      const stored = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx =>
        await trx.selectFrom('attendees').select('check_in_token_hash').where('contact_id', '=', contact)
          .executeTakeFirstOrThrow()
      )
      assert.equal(stored.check_in_token_hash, crypto.createHash('sha256').update(issued.token).digest('hex'))

      const scanned = await byToken(alice, id, { token: issued.token })
      assert.equal(scanned.statusCode, 200, scanned.body)
      assert.equal(scanned.headers['check-in-result'], 'checked-in')
      assert.equal(scanned.json().already_checked_in, false)
      assert.deepEqual(
        [scanned.json().attendee.contact_id, scanned.json().attendee.check_in_method],
        [contact, 'scan']
      )
      const qr = await byToken(alice, id, { token: `${String(issued.qr_payload)}\n` })
      assert.equal(qr.statusCode, 200, qr.body)
      assert.equal(qr.json().already_checked_in, true)
      assert.equal(qr.headers['check-in-result'], 'already-checked-in')
      assert.equal((await activity(alice, id, 'attendee.checked_in')).length, 1)

      // rotation: the earlier token no longer checks in; the new one does, with the method asked for
      const other = await attending(alice, id, 'invited')
      const old = await issueToken(alice, id, other)
      const rotated = await issueToken(alice, id, other)
      const stale = await byToken(alice, id, { token: old.token })
      assert.equal(stale.statusCode, 404, stale.body)
      assert.equal(stale.json().detail, 'no attendee of this event holds this token')
      assert.deepEqual(stale.json().errors, [{ location: 'body.token', message: 'unknown token' }])
      const viaApi = await byToken(alice, id, { token: rotated.qr_payload, method: 'api' })
      assert.equal(viaApi.statusCode, 200, viaApi.body)
      assert.equal(viaApi.json().attendee.check_in_method, 'api')

      // a QR payload naming another event, a malformed one, an unknown token, one too long
      await expectStatuses(t, [
        [alice, 'POST', `/api/v1/events/${id}/check-in/token`, 404,
          { token: `collab-checkin:v1:${id + 1000}:${issued.token}` }],
        [alice, 'POST', `/api/v1/events/${id}/check-in/token`, 404, { token: `collab-checkin:v1:x:${issued.token}` }],
        [alice, 'POST', `/api/v1/events/${id}/check-in/token`, 404,
          { token: crypto.randomBytes(32).toString('base64url') }],
        [alice, 'POST', `/api/v1/events/${id}/check-in/token`, 400, { token: 'x'.repeat(201) }],
        [alice, 'POST', `/api/v1/events/${id}/check-in/token`, 400, { token: '' }]
      ])
    })

    void it('revoked tokens answer 410; tokens of another event or tenant 404; refusals hold by token', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const contact = await attending(alice, id, 'confirmed')
      const tokenUrl = `${base(id)}/${contact}/check-in-token`
      const issued = await issueToken(alice, id, contact)

      await expectStatus(t, alice, 'DELETE', tokenUrl, 204)
      const revokedAt = (await attendee(alice, id, contact)).check_in_token_revoked_at
      assert.ok(revokedAt !== null)
      await expectStatus(t, alice, 'DELETE', tokenUrl, 204)
      assert.equal((await attendee(alice, id, contact)).check_in_token_revoked_at, revokedAt)
      const revoked = await byToken(alice, id, { token: issued.token })
      assert.equal(revoked.statusCode, 410, revoked.body)
      assert.deepEqual(revoked.json().errors, [{ location: 'body.token', message: 'revoked token' }])
      assert.equal((await attendee(alice, id, contact)).status, 'confirmed')
      // a new token works again
      const renewed = await issueToken(alice, id, contact)
      assert.equal((await attendee(alice, id, contact)).check_in_token_revoked_at, null)
      assert.equal((await byToken(alice, id, { token: renewed.token })).statusCode, 200)

      // a token of alice's other event, used at this one: 404 (and it still works at its own event)
      const second = (await createEvent(t, alice, { title: 'Second' })).id as number
      const guest = await attending(alice, second, 'confirmed')
      const elsewhere = await issueToken(alice, second, guest)
      const wrong = await byToken(alice, id, { token: elsewhere.token })
      assert.equal(wrong.statusCode, 404, wrong.body)
      assert.deepEqual([wrong.json().detail, wrong.json().errors], [
        'no attendee of this event holds this token', [{ location: 'body.token', message: 'unknown token' }]
      ])
      assert.equal((await byToken(alice, id, { token: elsewhere.qr_payload })).statusCode, 404)
      assert.equal((await byToken(alice, second, { token: elsewhere.qr_payload })).statusCode, 200)

      // another tenant's caller, at an event of their own, with alice's token: 404; at alice's event: 404
      const other = newTenant(t)
      const mallory = await other.user('mallory', ['admin'])
      const theirs = (await createEvent(t, mallory, { title: 'Theirs' })).id as number
      const fresh = await issueToken(alice, id, await attending(alice, id, 'confirmed'))
      assert.equal((await byToken(mallory, theirs, { token: fresh.token })).statusCode, 404)
      assert.equal((await byToken(mallory, id, { token: fresh.token })).statusCode, 404)
      assert.equal((await attendees(alice, id)).size, 2)

      // the refusals of a check-in hold by token, naming the token
      const waiting = await attendingAs(tenant.id, alice, id, 'waitlisted')
      const wt = await issueToken(alice, id, waiting)
      const refused = await byToken(alice, id, { token: wt.token })
      assert.equal(refused.statusCode, 409, refused.body)
      assert.deepEqual(refused.json().errors, [{ location: 'body.token', message: 'waitlisted: holds no seat' }])
    })

    void it('needs attendees:checkin to check in, undo, check out, by token; attendees:write for tokens', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { template: 'generic' })
      const id = event.id as number
      const url = base(id)
      const [a, b, c] = [
        await attending(alice, id, 'confirmed'),
        await attending(alice, id, 'confirmed'),
        await attending(alice, id, 'confirmed')
      ]
      const tb = await issueToken(alice, id, b)
      const tokenRoute = `/api/v1/events/${id}/check-in/token`

      // the check-in role: check in, undo, check out, by token; no tokens
      const carol = await tenant.user('carol')
      await addManager(t, tenant.id, id, 'carol', { role: 'event_manager:checkin' })
      await expectStatuses(t, [
        [carol, 'POST', `${url}/${a}/check-in`, 204],
        [carol, 'POST', `${url}/${a}/check-out`, 204],
        [carol, 'DELETE', `${url}/${a}/check-in`, 204],
        [carol, 'POST', tokenRoute, 200, { token: tb.token }],
        [carol, 'POST', `${url}/${c}/check-in-token`, 403],
        [carol, 'DELETE', `${url}/${b}/check-in-token`, 403]
      ])
      assert.equal((await activity(alice, id, 'attendee.checked_in'))[0]?.actor_id, 'carol')

      // a manager who may only read the attendees, and a tenant viewer: 403 on everything
      const dan = await tenant.user('dan')
      await addManager(t, tenant.id, id, 'dan', { permissions: ['attendees:read'] })
      const vic = await tenant.user('vic', ['viewer'])
      for (const who of [dan, vic]) {
        await expectStatuses(t, [
          [who, 'POST', `${url}/${c}/check-in`, 403],
          [who, 'POST', `${url}/${b}/check-out`, 403],
          [who, 'DELETE', `${url}/${b}/check-in`, 403],
          [who, 'POST', tokenRoute, 403, { token: tb.token }],
          [who, 'POST', `${url}/${c}/check-in-token`, 403],
          [who, 'DELETE', `${url}/${b}/check-in-token`, 403]
        ])
      }
      assert.equal((await attendee(alice, id, c)).status, 'confirmed')
      assert.equal((await attendee(alice, id, b)).checked_out_at, null)

      // attendees:write without attendees:checkin: tokens yes, check-in no
      const erin = await tenant.user('erin')
      await addManager(t, tenant.id, id, 'erin', { permissions: ['attendees:read', 'attendees:write'] })
      await expectStatuses(t, [
        [erin, 'POST', `${url}/${c}/check-in-token`, 201],
        [erin, 'DELETE', `${url}/${c}/check-in-token`, 204],
        [erin, 'POST', `${url}/${c}/check-in`, 403]
      ])

      // someone who cannot see the event, another tenant: 404
      const mallory = await newTenant(t).user('mallory', ['admin'])
      for (const who of [await tenant.user('sam'), mallory]) {
        await expectStatuses(t, [
          [who, 'POST', `${url}/${c}/check-in`, 404],
          [who, 'POST', tokenRoute, 404, { token: tb.token }],
          [who, 'POST', `${url}/${c}/check-in-token`, 404]
        ])
      }
    })
  })
}

void describe('attendee transition table', () => {
  void it('is the table docs/event-collaboration.md shows', () => {
    const doc = fs.readFileSync(new URL('../../../docs/event-collaboration.md', import.meta.url), 'utf8')
    const shown = doc.split('<!-- transition-table:start -->')[1]?.split('<!-- transition-table:end -->')[0]?.trim()
    assert.equal(shown, transitionsMarkdown(),
      'regenerate the table of docs/event-collaboration.md from transitionsMarkdown()')
  })
})

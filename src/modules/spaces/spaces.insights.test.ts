import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { alicePublishedSpace, createSpace } from './spaces.fixtures.ts'

type Json = Record<string, any>

async function createEvent (t: TestApp, token: string, body: Json): Promise<number> {
  const res = await expectStatus(t, token, 'POST', '/api/v1/events', 201, body)
  const id = res.json().id as number
  await expectStatus(t, token, 'POST', `/api/v1/events/${id}/publish`, 204)
  return id
}

async function link (t: TestApp, token: string, spaceId: number, eventId: number): Promise<void> {
  await expectStatus(t, token, 'POST', `/api/v1/spaces/${spaceId}/events`, 201, { event_id: eventId })
}

const WEEK = 7 * 24 * 3600 * 1000
const DAY = 24 * 3600 * 1000
/** Monday 00:00 UTC of the current week. */
function weekStart (): number {
  const now = new Date()
  const d = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return d - ((new Date(d).getUTCDay() + 6) % 7) * DAY
}

for (const kind of databases()) {
  void describe(`${kind}: space events, activity and analytics`, () => {
    const t = useTestApp(kind)

    void it('links events to a space, lists and unlinks them; the activity follows', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const bob = await tenant.user('bob')
      const e1 = await createEvent(t, alice, {
        title: 'Kick-off',
        start_dt: '2099-03-01T10:00:00Z',
        end_dt: '2099-03-01T12:00:00Z',
        visibility: 40
      })
      const e2 = await createEvent(t, alice, { title: 'Retro', start_dt: '2020-03-01T10:00:00Z', visibility: 40 })
      const hidden = await createEvent(t, bob, { title: 'Bob private', visibility: 10 })

      await link(t, alice, s.id, e1)
      await link(t, alice, s.id, e2)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/events`, 409, { event_id: e1 })
      const invisible = await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/events`, 400, { event_id: hidden })
      assert.equal(invisible.json().errors[0].location, 'body.event_id')
      await expectStatus(t, bob, 'POST', `/api/v1/spaces/${s.id}/events`, 403, { event_id: hidden })

      const list = await expectStatus(t, bob, 'GET', `/api/v1/spaces/${s.id}/events`, 200)
      assert.deepEqual(
        list.json().items.map((x: Json) => [x.event_id, x.event.title]),
        [
          [e1, 'Kick-off'],
          [e2, 'Retro']
        ]
      )
      assert.equal(list.json().total, 2)

      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'bob', role: 'space_member' }
      })
      const activity = await expectStatus(t, bob, 'GET', `/api/v1/spaces/${s.id}/activity`, 200)
      const items = activity.json().items as Json[]
      assert.deepEqual(items.map(a => [a.type, a.message, a.title]), [
        ['member', 'joined the space', 'bob'],
        ['event', 'event added to the space', 'Retro'],
        ['event', 'event added to the space', 'Kick-off'],
        ['event', 'event published', 'Retro'],
        ['event', 'event published', 'Kick-off']
      ])
      assert.equal(items[1]?.resource_id, String(e2))
      const sorted = [...items].sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at))
      assert.deepEqual(items.map(a => a.created_at), sorted.map(a => a.created_at))
      const page2 = await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}/activity?page=2&size=2` })
      assert.deepEqual([page2.json().total, page2.json().items.map((a: Json) => a.title)], [5, ['Kick-off', 'Retro']])

      // the public page shows the upcoming public event
      const page = await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${s.id}` })
      assert.deepEqual(
        page.json().upcoming_events.map((e: Json) => [e.id, e.title, e.start_dt]),
        [[e1, 'Kick-off', '2099-03-01T10:00:00.000Z']]
      )
      assert.equal(page.json().stats.events_count, 2)

      await expectStatuses(t, [
        [alice, 'DELETE', `/api/v1/spaces/${s.id}/events/${e1}`, 204],
        [alice, 'DELETE', `/api/v1/spaces/${s.id}/events/${e1}`, 404]
      ])
      const after = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/events` })
      assert.deepEqual(after.json().items.map((x: Json) => x.event_id), [e2])
      const topics = await t.ctx.db
        .selectFrom('outbox')
        .select('topic')
        .where('tenant_id', '=', tenant.id)
        .where('topic', 'like', 'space.event%')
        .orderBy('id')
        .execute()
      assert.deepEqual(topics.map(r => r.topic), ['space.event_added', 'space.event_added', 'space.event_removed'])
    })

    void it('computes member growth, attention and summary from hand-built data', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const bob = await tenant.user('bob')
      await expectStatus(t, bob, 'GET', `/api/v1/spaces/${s.id}/analytics`, 403)

      const ws = weekStart()
      // A joined 20 weeks ago; B 5 weeks ago (+1 day); C 8 weeks ago (+1 day) and left 3 weeks ago (+1 day)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        await trx
          .insertInto('space_members')
          .values([
            { tenant_id: tenant.id, space_id: s.id, user_id: 'A', created_at: new Date(ws - 20 * WEEK) },
            { tenant_id: tenant.id, space_id: s.id, user_id: 'B', created_at: new Date(ws - 5 * WEEK + DAY) },
            {
              tenant_id: tenant.id,
              space_id: s.id,
              user_id: 'C',
              created_at: new Date(ws - 8 * WEEK + DAY),
              is_active: false,
              removed_at: new Date(ws - 3 * WEEK + DAY)
            }
          ])
          .execute()
      })
      const past = await createEvent(t, alice, { title: 'Past', start_dt: '2020-01-01T10:00:00Z', visibility: 20 })
      const soon = await createEvent(t, alice, { title: 'Soon', start_dt: '2099-01-01T10:00:00Z', visibility: 20 })
      await link(t, alice, s.id, past)
      await link(t, alice, s.id, soon)

      const res = await expectStatus(t, alice, 'GET', `/api/v1/spaces/${s.id}/analytics`, 200)
      const a = res.json()
      assert.equal(a.$schema, 'http://localhost:8080/schemas/SpaceAnalyticsResult.json')
      assert.deepEqual(a.member_growth.map((b: Json) => b.members), [1, 1, 1, 2, 2, 2, 3, 3, 2, 2, 2, 2])
      assert.equal(a.member_growth[11].label, new Date(ws).toISOString().slice(0, 10))
      assert.equal(a.member_growth[0].date, new Date(ws - 11 * WEEK).toISOString())
      assert.deepEqual(a.attention_needed.map((x: Json) => [x.event_id, x.rsvps, x.threshold]), [[soon, 0, 5]])
      assert.deepEqual(
        a.events_performance.map((x: Json) => [x.title, x.upcoming, x.needs_care, x.status]),
        [
          ['Soon', true, true, 'published'],
          ['Past', false, false, 'published']
        ]
      )
      assert.deepEqual(
        a.attendance_trend.map((x: Json) => [x.event_id, x.rsvps, x.attended, x.rate]),
        [[past, 0, 0, 0]]
      )
      assert.deepEqual(a.summary, {
        active_members: 2,
        avg_attendance_rate: 0,
        events_published: 2,
        no_shows: 0,
        total_rsvps: 0,
        upcoming_events: 1
      })
    })

    void it('computes RSVPs, attendance and rates from attendees', async (ctx) => {
      const exists = await sql<{ ok: boolean }>`select to_regclass('attendees') is not null as ok`.execute(t.ctx.db)
      if (exists.rows[0]?.ok !== true) {
        ctx.skip('the attendees table (migration 0006, event collaboration) is not there yet')
        return
      }
      const { tenant, alice, s } = await alicePublishedSpace(t)
      const past1 = await createEvent(t, alice, { title: 'Past 1', start_dt: '2020-01-01T10:00:00Z' })
      const past2 = await createEvent(t, alice, { title: 'Past 2', start_dt: '2021-01-01T10:00:00Z' })
      const soon = await createEvent(t, alice, { title: 'Soon', start_dt: '2099-01-01T10:00:00Z' })
      const later = await createEvent(t, alice, { title: 'Later', start_dt: '2099-06-01T10:00:00Z' })
      for (const e of [past1, past2, soon, later]) await link(t, alice, s.id, e)
      // Past 1: confirmed+checked in, checked_in, tentative, confirmed, declined, invited → 4 RSVPs, 2 attended,
      // rate 0.5
      // Past 2: confirmed+checked in, confirmed, confirmed, declined, 2 no-shows → 3 RSVPs, 1 attended, rate 0.3333
      // (a no-show is counted apart, never as an RSVP)
      // Soon: 2 confirmed → needs attention (2 < 5); Later: 6 confirmed → fine
      const plan: Array<[number, string, boolean]> = [
        [past1, 'confirmed', true], [past1, 'checked_in', true], [past1, 'tentative', false],
        [past1, 'confirmed', false], [past1, 'declined', false], [past1, 'invited', false],
        [past2, 'confirmed', true], [past2, 'confirmed', false],
        [past2, 'confirmed', false], [past2, 'declined', false], [past2, 'no_show', false], [past2, 'no_show', false],
        [soon, 'confirmed', false], [soon, 'confirmed', false],
        ...Array.from({ length: 6 }, (): [number, string, boolean] => [later, 'confirmed', false])
      ]
      for (const [i, [eventId, status, checkedIn]] of plan.entries()) {
        const c = await t.as(alice, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `P${i}` } })
        await sql`insert into attendees (tenant_id, event_id, contact_id, status, is_checked_in, checked_in_at)
          values (${tenant.id}, ${eventId}, ${c.json().id as string}, ${status}, ${checkedIn},
            ${checkedIn ? new Date() : null})`.execute(
          t.ctx.db
        )
      }
      const a = (await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/analytics` })).json()
      assert.deepEqual(
        a.attendance_trend.map((x: Json) => [x.label, x.rsvps, x.attended, x.rate]),
        [
          ['Past 1', 4, 2, 0.5],
          ['Past 2', 3, 1, 0.3333]
        ]
      )
      assert.deepEqual(a.attention_needed.map((x: Json) => [x.title, x.rsvps]), [['Soon', 2]])
      assert.deepEqual(
        a.top_by_rsvp.map((x: Json) => [x.title, x.rsvps]),
        [
          ['Later', 6],
          ['Past 1', 4],
          ['Past 2', 3],
          ['Soon', 2]
        ]
      )
      assert.deepEqual(
        a.top_by_rsvp.map((x: Json) => [x.title, x.no_shows]),
        [['Later', 0], ['Past 1', 0], ['Past 2', 2], ['Soon', 0]]
      )
      // avg_attendance_rate = (2 + 1) / (4 + 3) = 0.4286
      assert.deepEqual(a.summary, {
        active_members: 0,
        avg_attendance_rate: 0.4286,
        events_published: 4,
        no_shows: 2,
        total_rsvps: 15,
        upcoming_events: 2
      })
    })

    void it("pages a space's events and activity by cursor as by page, events without a start last; " +
      "another space's cursor is refused", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const other = await createSpace(t, alice)
      const starts = [
        '2026-05-01T10:00:00Z',
        null,
        '2026-05-01T10:00:00Z',
        '2026-03-01T10:00:00Z',
        null,
        '2027-01-01T10:00:00Z',
        '2026-05-01T10:00:00Z'
      ]
      for (const [i, start] of starts.entries()) {
        await link(
          t,
          alice,
          s.id as number,
          await createEvent(t, alice, {
            title: `E${i}`,
            visibility: 40,
            ...(start !== null ? { start_dt: start } : {})
          })
        )
      }
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('space_members')
          .values(
            Array.from({ length: 5 }, (_, i) => ({ tenant_id: tenant.id, space_id: s.id as number, user_id: `m${i}` }))
          )
          .execute()
      })
      for (const list of ['events', 'activity']) {
        const url = `/api/v1/spaces/${s.id as number}/${list}`
        const all = (await getJson(t, alice, `${url}?size=100`)).items as Json[]
        assert.ok(all.length >= 7, `${list}: ${all.length}`)
        assert.deepEqual(await itemsByCursor(t, alice, `${url}?size=3`), all, list)
        const first = await getJson(t, alice, `${url}?size=3`)
        await refusedCursor(t, alice, `/api/v1/spaces/${other.id as number}/${list}?size=3`, first.next_cursor)
      }
    })
  })
}

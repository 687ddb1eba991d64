import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { databases, newTenant, orgCallers, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor, pagesByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { insertRow } from '../../../test/helpers/rows.ts'
import { createEvent, type Json } from '../events/events.fixtures.ts'
import { rule } from '../automation/automation.fixtures.ts'
import { withSeries } from '../series/series.fixtures.ts'

const timeline = (id: string, query = '') => `/api/v1/contacts/${id}/timeline${query}`

/** An instant of a fixed day, `minute` minutes after 09:00 UTC: the order of the items the tests check. */
const at = (minute: number) => new Date(Date.UTC(2026, 2, 2, 9, minute)).toISOString()

async function createContact (t: TestApp, token: string, body: Json = {}): Promise<string> {
  return (await expectStatus(t, token, 'POST', '/api/v1/contacts', 201, { first_name: 'Ann', ...body })).json().id
}

/** An attendee row as the event modules write it, at known times. */
async function attend (t: TestApp, tenantId: string, row: Json): Promise<void> {
  await insertRow(t, tenantId, 'attendees', { invited_at: at(0), ...row } as never)
}

/** A manager row of a user (SQL, as the managers routes write it once accepted). */
async function manage (t: TestApp, tenantId: string, row: Json): Promise<void> {
  await insertRow(t, tenantId, 'event_managers', { permissions: [], status: 'active', ...row } as never)
}

/** An execution of a rule whose trigger payload is `payload`, recorded at `created`. */
async function ran (
  t: TestApp,
  tenantId: string,
  ruleId: string,
  payload: Json,
  created: string,
  status = 'succeeded'
) {
  await insertRow(t, tenantId, 'automation_executions', {
    rule_id: ruleId,
    rule_version: 1,
    trigger_key: `test:${crypto.randomUUID()}`,
    trigger_type: 'attendee.status_changed',
    trigger_payload: JSON.stringify(payload),
    status,
    max_attempts: 3,
    created_at: created
  } as never)
}

/** Items as `[kind, status, rule name, event or series title]`, in the order of the answer. */
const summary = (items: Json[]) =>
  items.map(i => [i.kind, i.status, ...(i.rule !== undefined ? [i.rule.name] : []), i.event?.title ?? i.series?.title])

for (const kind of databases()) {
  describe(`${kind}: contact timeline`, () => {
    const t = useTestApp(kind)

    /**
     * alice's contact Ann (linked to the user ida) at alice's events and series, and at carol's private event (which
     * alice cannot see); ida managing some of them; automation runs that named Ann.
     */
    async function story () {
      const tenant = newTenant(t)
      const callers = await orgCallers(tenant)
      const { alice, carol } = callers
      const ann = await createContact(t, alice, { linked_user_id: 'ida' })
      const other = await createContact(t, alice, { first_name: 'Other' })
      const workshop = (await createEvent(t, alice, { title: 'Workshop', start_dt: at(1), end_dt: at(2) })).id
      const dinner = (await createEvent(t, alice, { title: 'Dinner', start_dt: at(3), end_dt: at(4) })).id
      const talk = (await createEvent(t, alice, { title: 'Talk', start_dt: at(5), end_dt: at(6) })).id
      const hidden = (await createEvent(t, carol, { title: 'Hidden', visibility: 10, start_dt: at(7) })).id
      const series = (await withSeries(t, alice, {
        title: 'Standup',
        start_dt: at(8),
        end_dt: at(9),
        series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
      })).event.series_id as number
      const hiddenSeries = (await withSeries(t, carol, {
        title: 'Secret',
        visibility: 10,
        start_dt: at(8),
        end_dt: at(9),
        series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
      })).event.series_id as number

      await attend(t, tenant.id, {
        event_id: workshop, contact_id: ann, status: 'checked_in', is_checked_in: true, checked_in_at: at(10)
      })
      await attend(t, tenant.id, { event_id: dinner, contact_id: ann, status: 'declined', responded_at: at(11) })
      // a no-show happened when the event ended (at(6))
      await attend(t, tenant.id, { event_id: talk, contact_id: ann, status: 'no_show', responded_at: at(1) })
      await attend(t, tenant.id, { event_id: hidden, contact_id: ann, status: 'confirmed', responded_at: at(12) })
      await attend(t, tenant.id, { series_id: series, contact_id: ann, status: 'confirmed', responded_at: at(13) })
      await attend(t, tenant.id, {
        series_id: hiddenSeries, contact_id: ann, status: 'confirmed', responded_at: at(13)
      })
      await attend(t, tenant.id, { event_id: workshop, contact_id: other, status: 'confirmed', responded_at: at(14) })

      await manage(t, tenant.id, {
        event_id: workshop, user_id: 'ida', role: 'event_manager:attendees', accepted_at: at(15)
      })
      await manage(t, tenant.id, { event_id: dinner, user_id: 'ida', status: 'revoked', created_at: at(16) })
      await manage(t, tenant.id, { event_id: talk, user_id: 'ida', status: 'pending', created_at: at(17) })
      await manage(t, tenant.id, { event_id: hidden, user_id: 'ida', created_at: at(17) })
      await manage(t, tenant.id, { series_id: series, user_id: 'ida', created_at: at(18) })
      await manage(t, tenant.id, { event_id: workshop, user_id: 'someone-else', created_at: at(19) })

      const notify = {
        schedule: { event_type: 'attendee.status_changed' }, actions: [{ type: 'activity', message: 'x' }]
      }
      const welcome = (await rule(t, alice, { name: 'Welcome', ...notify })).id
      const secret = (await rule(t, carol, { name: 'Secret', scope: 'EVENT', scope_id: String(hidden), ...notify })).id
      await ran(t, tenant.id, welcome, { contact_id: ann, event_id: workshop }, at(20))
      await ran(t, tenant.id, welcome, { contact_id: ann }, at(21), 'failed')
      await ran(t, tenant.id, welcome, { contact_id: ann, event_id: workshop }, at(22), 'skipped')
      await ran(t, tenant.id, welcome, { contact_id: ann, event_id: hidden }, at(23))
      await ran(t, tenant.id, welcome, { contact_id: other, event_id: workshop }, at(24))
      await ran(t, tenant.id, secret, { contact_id: ann, event_id: hidden }, at(25))
      return { tenant, ...callers, ann, other, workshop, dinner, talk, hidden, series, welcome, secret }
    }

    it('merges attendance, manager roles and automation runs, newest first, ' +
      'without what the caller cannot see', async () => {
      const s = await story()
      const page = await getJson(t, s.alice, timeline(s.ann, '?limit=100'))
      assert.deepEqual(summary(page.items), [
        ['automation', 'failed', 'Welcome', undefined],
        ['automation', 'succeeded', 'Welcome', 'Workshop'],
        ['manager', 'active', 'Standup'],
        ['manager', 'revoked', 'Dinner'],
        ['manager', 'active', 'Workshop'],
        ['attendance', 'confirmed', 'Standup'],
        ['attendance', 'declined', 'Dinner'],
        ['attendance', 'checked_in', 'Workshop'],
        ['attendance', 'no_show', 'Talk']
      ])
      assert.equal(page.next_cursor, null)
      const byKind = (k: string) => page.items.filter((i: Json) => i.kind === k)
      const [checkedIn] = byKind('attendance').filter((i: Json) => i.status === 'checked_in')
      assert.deepEqual(checkedIn, {
        at: at(10),
        kind: 'attendance',
        id: checkedIn.id,
        status: 'checked_in',
        event: { id: s.workshop, title: 'Workshop', start_dt: at(1) }
      })
      assert.equal(byKind('attendance').find((i: Json) => i.status === 'no_show').at, at(6))
      assert.deepEqual(byKind('attendance')[0].series, { id: s.series, title: 'Standup' })
      assert.equal(byKind('attendance')[0].event, undefined)
      const [, , workshopRole] = byKind('manager')
      assert.deepEqual([workshopRole.at, workshopRole.role], [at(15), 'event_manager:attendees'])
      const run = byKind('automation')[1]
      assert.deepEqual(
        [run.at, run.rule, run.trigger_type, run.event.id],
        [at(20), { id: s.welcome, name: 'Welcome' }, 'attendee.status_changed', s.workshop]
      )
      assert.equal(byKind('automation')[0].event, undefined)

      // a tenant admin sees every event and rule: the hidden event's attendance, role and runs too
      const all = summary((await getJson(t, s.admin, timeline(s.ann, '?limit=100'))).items)
      assert.deepEqual(all.map(i => JSON.stringify(i)).sort(), [
        ...summary(page.items),
        ['automation', 'succeeded', 'Secret', 'Hidden'],
        ['automation', 'succeeded', 'Welcome', 'Hidden'],
        ['manager', 'active', 'Hidden'],
        ['attendance', 'confirmed', 'Hidden'],
        ['attendance', 'confirmed', 'Secret']
      ].map(i => JSON.stringify(i)).sort())
    })

    it('shows an attendance only to whoever may read the event\'s attendees, ' +
      'not to all who see the event', async () => {
      const tenant = newTenant(t)
      const { alice, bob } = await orgCallers(tenant)
      const ann = await createContact(t, alice)
      const open = (await createEvent(t, alice, { title: 'Open day', visibility: 40, start_dt: at(1) })).id
      const seen = (await createEvent(t, alice, { title: 'Seen', visibility: 40, start_dt: at(2) })).id
      await attend(t, tenant.id, { event_id: open, contact_id: ann, status: 'confirmed', responded_at: at(3) })
      await attend(t, tenant.id, { event_id: seen, contact_id: ann, status: 'declined', responded_at: at(4) })
      // bob sees Ann (an organization contact) and both public events, but not who attends them
      assert.deepEqual(summary((await getJson(t, bob, timeline(ann))).items), [])
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/events/${String(open)}/attendees` })).statusCode,
        403)
      // a check-in desk role holds attendees:read on one event; a role without it (a permissions list) shows nothing
      await manage(t, tenant.id, { event_id: open, user_id: 'bob', role: 'event_manager:checkin' })
      await manage(t, tenant.id, { event_id: seen, user_id: 'bob', permissions: ['event:edit'] })
      assert.deepEqual(summary((await getJson(t, bob, timeline(ann))).items), [['attendance', 'confirmed', 'Open day']])
      assert.deepEqual(summary((await getJson(t, alice, timeline(ann))).items),
        [['attendance', 'declined', 'Seen'], ['attendance', 'confirmed', 'Open day']])
    })

    it('filters by kind, and pages by cursor in the order of one page', async () => {
      const s = await story()
      const whole = (await getJson(t, s.admin, timeline(s.ann, '?limit=100'))).items
      for (const limit of [1, 2, 5]) {
        const pages = await pagesByCursor(t, s.admin, timeline(s.ann, `?limit=${limit}`))
        assert.ok(pages.every(p => p.items.length <= limit))
        assert.deepEqual(pages.flatMap(p => p.items), whole, `limit ${limit}`)
      }
      for (const k of ['attendance', 'manager', 'automation']) {
        const items = await itemsByCursor(t, s.admin, timeline(s.ann, `?kind=${k}&limit=2`))
        assert.deepEqual(items, whole.filter((i: Json) => i.kind === k), k)
      }
      const cursor = (await getJson(t, s.admin, timeline(s.ann, '?limit=2'))).next_cursor
      await refusedCursor(t, s.admin, timeline(s.ann, '?kind=manager&limit=2'), cursor)
      await refusedCursor(t, s.admin, timeline(s.other, '?limit=2'), cursor)
      await expectStatus(t, s.admin, 'GET', timeline(s.ann, '?limit=101'), 400)
    })

    it('pages items of one instant by kind and id', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const ann = await createContact(t, alice, { linked_user_id: 'ida' })
      const events: number[] = []
      for (let i = 0; i < 5; i++) events.push((await createEvent(t, alice, { title: `E${i}` })).id)
      for (const id of events) {
        await attend(t, tenant.id, { event_id: id, contact_id: ann, status: 'confirmed', responded_at: at(30) })
        await manage(t, tenant.id, { event_id: id, user_id: 'ida', created_at: at(30) })
      }
      const whole = (await getJson(t, alice, timeline(ann, '?limit=100'))).items
      assert.deepEqual(whole.map((i: Json) => i.kind), [...Array(5).fill('manager'), ...Array(5).fill('attendance')])
      assert.deepEqual(await itemsByCursor(t, alice, timeline(ann, '?limit=3')), whole)
    })

    it('answers 404 for a contact the caller cannot see, and an empty timeline for one without history', async () => {
      const s = await story()
      for (const token of [s.carol, s.erinBefore, await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })]) {
        await expectStatus(t, token, 'GET', timeline(s.ann), 404)
      }
      await expectStatus(t, s.alice, 'GET', timeline(crypto.randomUUID()), 404)
      await expectStatus(t, s.alice, 'GET', timeline('not-a-uuid'), 400)
      // bob sees the contact (his organization's) but none of alice's events (members-only, in no space of his) nor
      // her series: only the run whose trigger named no event
      assert.deepEqual(summary((await getJson(t, s.bob, timeline(s.ann, '?limit=100'))).items), [
        ['automation', 'failed', 'Welcome', undefined]
      ])
      const fresh = await createContact(t, s.alice)
      assert.deepEqual(await getJson(t, s.alice, timeline(fresh)), {
        $schema: 'http://localhost:8080/schemas/TimelineOutputBody.json', items: [], next_cursor: null
      })
    })
  })
}

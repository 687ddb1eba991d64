/**
 * The totals of the contacts list, of a rule's execution history and of a space's activity feed against their
 * own items: the totals come from the counts kept by triggers (migrations/0020_row_counts.sql,
 * 0021_space_activity_counts.sql; row by row on Citus), the items from the rows. Likewise the attendee counts GET
 * /events/{id} carries (migration 0038) against the event's attendees list by status. After every kind of change, for
 * callers who see different items, every total must equal the number of items a walk of the list finds.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, orgCallers, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { pagesByCursor } from '../../../test/helpers/pages.ts'
import { rule } from '../../modules/automation/automation.fixtures.ts'
import { alicePublishedSpace, createSpace, publish } from '../../modules/spaces/spaces.fixtures.ts'
import { publishEvent } from '../../modules/events/events.fixtures.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { compactRowCounts } from './kept-counts.ts'
import { withSystem } from './tenant.ts'

type Json = Record<string, any>

/** An item's identity: its id, or what tells apart the items of an activity feed (which have none). */
const idOf = (x: Json): string =>
  String(x.id ?? `${x.type as string} ${x.resource_id as string} ${x.message as string}`)

/** Every item of a list, walked by cursor (4 a page), and the totals the pages reported. */
async function walk (t: TestApp, token: string, path: string): Promise<{ ids: string[], totals: Set<number> }> {
  const pages = await pagesByCursor(t, token, `${path}${path.includes('?') ? '&' : '?'}size=4`)
  return {
    ids: pages.flatMap(p => (p.items as Json[]).map(idOf)),
    totals: new Set(pages.map(p => p.total as number))
  }
}

async function checkTotals (t: TestApp, step: string, callers: Record<string, string>, paths: string[]): Promise<void> {
  for (const [who, token] of Object.entries(callers)) {
    for (const path of paths) {
      const { ids, totals } = await walk(t, token, path)
      assert.deepEqual(
        [...totals],
        [ids.length],
        `${step}, ${who}, ${path}: totals ${[...totals].join(',')} for ${ids.length} items`
      )
      assert.equal(new Set(ids).size, ids.length, `${step}, ${who}, ${path}: an item twice`)
    }
  }
}

for (const kind of databases()) {
  void describe(`${kind}: kept totals of the contacts list, the execution history and the space activity`, () => {
    const t = useTestApp(kind)

    void it('contacts: the total matches the items after creates, favourites, upserts, deletes and folding, ' +
      'for every caller', async () => {
      const tenant = newTenant(t)
      // erin's first contacts are personal (no organization), then she joins org-a
      const callers = await orgCallers(tenant)
      const { admin, alice, bob, carol, erinBefore, erin } = callers
      const paths = [
        '/api/v1/contacts',
        '/api/v1/contacts?is_favorite=true',
        '/api/v1/contacts?is_favorite=false',
        '/api/v1/contacts?search=lee',
        '/api/v1/contacts?sort_by=last_name&sort_dir=asc'
      ]
      const made: Array<{ token: string; id: string }> = []
      let n = 0
      for (const token of [alice, alice, bob, carol, erinBefore, erinBefore, erin, admin]) {
        n++
        const res = await t.as(token, {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: { first_name: `P${n}`, last_name: n % 2 === 0 ? 'Lee' : 'Kim', email: `p${n}@c.test` }
        })
        assert.equal(res.statusCode, 201, res.body)
        made.push({ token, id: res.json().id })
      }
      await checkTotals(t, 'created', callers, paths)

      for (const m of made.filter((_, i) => i % 3 === 0)) {
        const res = await t.as(m.token, {
          method: 'PATCH',
          url: `/api/v1/contacts/${m.id}/favorite`,
          payload: { is_favorite: true }
        })
        assert.equal(res.statusCode, 200, res.body)
      }
      const upsert = await t.as(bob, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        payload: {
          contacts: [
            { email: 'p3@c.test', first_name: 'Renamed' },
            { email: 'new1@c.test', last_name: 'Lee' },
            { email: 'new2@c.test', last_name: 'Moe' }
          ]
        }
      })
      assert.ok([200, 207].includes(upsert.statusCode), upsert.body)
      await checkTotals(t, 'favourites and upserts', callers, paths)

      for (const m of [made[0], made[4], made[7]]) {
        const res = await t.as(m?.token ?? '', { method: 'DELETE', url: `/api/v1/contacts/${m?.id ?? ''}` })
        assert.equal(res.statusCode, 204, res.body)
      }
      await checkTotals(t, 'deleted', callers, paths)

      // folding the delta rows changes no total, and leaves one row per key
      assert.ok((await compactRowCounts(t.ctx.db)) >= (kind === 'citus' ? 0 : 1))
      await checkTotals(t, 'folded', callers, paths)
      const { rows } = await withSystem(
        t.ctx.db,
        async trx =>
          await sql<{ rows: number; keys: number }>`select count(*)::int as rows,
        count(distinct (list, k1, k2, k3))::int as keys from row_counts where tenant_id = ${tenant.id}`.execute(trx)
      )
      assert.equal(rows[0]?.rows, rows[0]?.keys)
    })

    void it('executions: the total matches the items by status and trigger type as the runs change, ' +
      'and over a time range', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const r = await rule(t, admin, {
        schedule: { event_type: 'contact.created' },
        actions: [{ type: 'activity', message: 'hello' }]
      })
      const other = await rule(t, admin, {
        schedule: { event_type: 'contact.created' },
        actions: [{ type: 'activity', message: 'other' }]
      })
      const insert = async (ruleId: string, i: number, status: string, triggerType: string, at: string) => {
        await withSystem(t.ctx.db, async trx => {
          await sql`insert into automation_executions (tenant_id, rule_id, rule_version, trigger_key, trigger_type,
            status, max_attempts, created_at)
            values (${tenant.id}, ${ruleId}, 1, ${`k:${i}`}, ${triggerType}, ${status}, 3, ${at}::timestamptz)`.execute(
            trx
          )
        })
      }
      const statuses = ['queued', 'running', 'succeeded', 'failed', 'skipped']
      for (let i = 0; i < 15; i++) {
        await insert(
          r.id,
          i,
          statuses[i % 5] ?? 'queued',
          i % 2 === 0 ? 'contact.created' : 'manual',
          `2026-0${1 + (i % 6)}-10T10:00:00Z`
        )
      }
      for (let i = 0; i < 4; i++) await insert(other.id, i, 'failed', 'contact.created', '2026-02-01T00:00:00Z')
      const paths = [
        `/api/v1/automation/rules/${r.id}/executions`,
        `/api/v1/automation/rules/${r.id}/executions?status=failed`,
        `/api/v1/automation/rules/${r.id}/executions?trigger_type=manual`,
        `/api/v1/automation/rules/${r.id}/executions?status=queued&trigger_type=contact.created`,
        `/api/v1/automation/rules/${r.id}/executions?from=2026-03-01T00:00:00Z&to=2026-05-01T00:00:00Z`
      ]
      await checkTotals(t, 'queued', { admin }, paths)

      // the runs move on (one statement moving many rows, as a sweep does), some are removed (retention)
      await withSystem(t.ctx.db, async trx => {
        await sql`update automation_executions set status = 'failed' where tenant_id = ${tenant.id}
          and rule_id = ${r.id} and status in ('queued', 'running')`.execute(
          trx
        )
        await sql`delete from automation_executions where tenant_id = ${tenant.id} and rule_id = ${r.id}
          and status = 'skipped'`.execute(
            trx
          )
      })
      await checkTotals(t, 'ran and pruned', { admin }, paths)
      await compactRowCounts(t.ctx.db)
      await checkTotals(t, 'folded', { admin }, paths)
      const all = (await t.as(admin, { method: 'GET', url: paths[0] ?? '' })).json()
      assert.equal(all.total, 12, 'fifteen executions, three skipped ones removed')
    })

    void it('attendee counts of GET /events/{id}: they match the attendees list by status after adds, the waitlist, ' +
      'check-in, removals, a draft and folding', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['admin'])
      const contacts: string[] = []
      for (let i = 0; i < 6; i++) {
        const made = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: `Guest${i}` })
        contacts.push(made.json().id as string)
      }
      const event = await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Counted', start_dt: '2031-05-01T10:00:00Z', end_dt: '2031-05-01T12:00:00Z'
      })
      const id = event.json().id as number
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { capacity: 2, waitlist_enabled: true })
      await publishEvent(t, alice, id)
      const counted = async (at: number) => {
        const e = (await expectStatus(t, alice, 'GET', `/api/v1/events/${at}`, 200)).json() as Json
        return [e.confirmed_count, e.waitlist_count, e.pending_count, e.no_show_count, e.seats_left]
      }
      /** the counts the attendees list gives, status by status, and the seats left of a capacity of `capacity` */
      const listed = async (capacity: number) => {
        const total = async (status: string) =>
          (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/attendees?status=${status}&size=1`, 200))
            .json().total as number
        const confirmed = (await total('confirmed')) + (await total('checked_in'))
        return [confirmed, await total('waitlisted'), await total('pending'), await total('no_show'),
          Math.max(0, capacity - confirmed)]
      }
      const check = async (step: string, expected: number[], capacity = 2) => {
        assert.deepEqual(await listed(capacity), expected, `${step}: the list`)
        assert.deepEqual(await counted(id), expected, `${step}: GET /events/${id}`)
      }

      await check('none yet', [0, 0, 0, 0, 2])
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees/bulk`, 204,
        { contact_ids: contacts.slice(0, 4), status: 'confirmed' })
      await check('four asked for two seats', [2, 2, 0, 0, 0])
      const seated = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/attendees?status=confirmed`, 200))
        .json().items as Json[]
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees/${seated[0]?.contact_id as string}/check-in`,
        204, {})
      await check('one checked in', [2, 2, 0, 0, 0])
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${id}/attendees/${seated[1]?.contact_id as string}`, 204)
      await check('a seat freed: the first waiting moves up', [2, 1, 0, 0, 0])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { requires_approval: true, capacity: 5 })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201,
        { contact_id: contacts[4], status: 'confirmed' })
      await check('approval asked', [3, 0, 1, 0, 2], 5)

      // a draft clone reports its published row's counts
      const draft = (await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/edit`, 200)).json() as Json
      assert.notEqual(draft.id, id)
      assert.deepEqual(await counted(draft.id as number), [3, 0, 1, 0, 2])

      await compactRowCounts(t.ctx.db)
      await check('folded', [3, 0, 1, 0, 2], 5)
    })

    void it('space activity: the total matches the items as members join and leave, events are linked, ' +
      'items are pruned, moved and folded', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const other = await createSpace(t, alice, { visibility: 40 })
      await publish(t, alice, other.id)
      const bob = await tenant.user('bob')
      const callers = { alice, bob }
      const paths = [`/api/v1/spaces/${s.id as number}/activity`, `/api/v1/spaces/${other.id as number}/activity`]
      for (const user of ['m1', 'm2', 'm3', 'm4', 'm5', 'bob']) {
        await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id as number}/members`, 201, {
          user_id: user, role: 'space_member'
        })
      }
      // alice's private event, linked and published, is in her feed only (both its items): the events' part of the
      // total differs by caller
      let publicEvent = 0
      for (const visibility of [40, 10]) {
        const event = await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
          title: `V${visibility}`, visibility
        })
        await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id as number}/events`, 201, {
          event_id: event.json().id
        })
        await expectStatus(t, alice, 'POST', `/api/v1/events/${event.json().id as number}/publish`, 204)
        if (visibility === 40) publicEvent = event.json().id
      }
      await checkTotals(t, 'joined, linked and published', callers, paths)
      assert.deepEqual(
        [(await walk(t, alice, paths[0] ?? '')).ids.length, (await walk(t, bob, paths[0] ?? '')).ids.length],
        [10, 8]
      )

      // a member leaves (one more item); items are pruned and one moves to the other space, in single statements
      await expectStatus(t, alice, 'DELETE', `/api/v1/spaces/${s.id as number}/members/m5`, 204)
      await withSystem(t.ctx.db, async trx => {
        await sql`delete from space_activity where tenant_id = ${tenant.id} and space_id = ${s.id}
          and resource_id in ('m1', 'm2')`
          .execute(trx)
        await sql`update space_activity set space_id = ${other.id} where tenant_id = ${tenant.id}
          and resource_id = 'm3'`
          .execute(trx)
      })
      await checkTotals(t, 'pruned and moved', callers, paths)
      assert.equal((await walk(t, bob, paths[1] ?? '')).ids.length, 1)

      await compactRowCounts(t.ctx.db)
      await checkTotals(t, 'folded', callers, paths)
      const feed = (await t.as(bob, { method: 'GET', url: paths[0] ?? '' })).json()
      assert.deepEqual(
        [feed.total, (feed.items as Json[]).map(idOf).sort()],
        [5, [`event ${publicEvent} event added to the space`, `event ${publicEvent} event published`,
          'member bob joined the space', 'member m4 joined the space', 'member m5 joined the space']]
      )
    })
  })
}

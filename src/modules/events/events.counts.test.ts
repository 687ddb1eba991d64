/**
 * The events list's total against its own items: the total comes from the counts kept by triggers
 * (migrations/0019_event_list_counts.sql; row by row on Citus), the items from the events. After every kind
 * of change (create, publish, patch of visibility and start, archive, delete, space links, draft
 * clones, series and their cascades, compaction), for callers who see different things, every
 * total must equal the number of items the list walks to, and the cursor walk the page walk.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, orgCallers, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { pagesByCursor } from '../../../test/helpers/pages.ts'
import { sql } from 'kysely'
import { withSystem } from '../../platform/db/tenant.ts'
import { compactListCounts } from './events.list.repository.ts'
import { addMember, createEvent, insertSpace, publishEvent, type Json } from './events.fixtures.ts'

const QUERIES = [
  '',
  '?status=published',
  '?status=draft',
  '?status=archived',
  '?visibility=20',
  '?visibility=40&status=published',
  '?start_dt_after=2026-03-15T00:00:00Z',
  '?start_dt_before=2026-05-01T10:00:00Z',
  '?start_dt_after=2026-03-02T00:00:00Z&start_dt_before=2026-03-20T00:00:00Z',
  '?start_dt_after=2026-02-10T00:00:00Z&start_dt_before=2027-04-20T00:00:00Z&status=published',
  '?search=gig',
  '?sort_by=start_dt&sort_dir=asc&status=published&start_dt_after=2026-01-01T00:00:00Z',
  '?sort_by=start_dt&sort_dir=desc&start_dt_after=2026-01-01T00:00:00Z',
  '?sort_by=start_dt&sort_dir=desc&start_dt_before=2027-01-01T00:00:00Z'
]

/** Every item of a list, walked by page and by cursor (3 a page); the totals each page reported. */
async function walk (
  t: TestApp,
  token: string,
  q: string
): Promise<{ byPage: number[]; byCursor: number[]; totals: Set<number> }> {
  const sep = q === '' ? '?' : '&'
  const byPage: number[] = []
  const byCursor: number[] = []
  const totals = new Set<number>()
  for (let page = 1; page < 100; page++) {
    const res = await t.as(token, { method: 'GET', url: `/api/v1/events${q}${sep}size=3&page=${page}` })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    totals.add(body.total)
    byPage.push(...(body.items as Json[]).map(i => i.id as number))
    if (body.items.length < 3) break
  }
  for (const body of await pagesByCursor(t, token, `/api/v1/events${q}${sep}size=3`)) {
    totals.add(body.total)
    byCursor.push(...(body.items as Json[]).map(i => i.id as number))
  }
  return { byPage, byCursor, totals }
}

for (const kind of databases()) {
  void describe(`${kind}: the events list's totals`, () => {
    const t = useTestApp(kind)

    void it('match the items after every kind of change, for every caller', async () => {
      const tenant = newTenant(t)
      // erin's own organization-wide event has no organization (made before she had one): counted as hers
      const { admin, alice, bob, carol, erinBefore, erin } = await orgCallers(tenant)
      const callers = { admin, alice, bob, carol, erin }
      const space = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      await addMember(t, tenant.id, space, 'bob')

      // the 70 walks of a check at once: each is a reader's own sequence of pages, and none writes
      const check = async (step: string) => {
        await Promise.all(Object.entries(callers).flatMap(([who, token]) => QUERIES.map(async (q) => {
          const { byPage, byCursor, totals } = await walk(t, token, q)
          assert.deepEqual(
            [...totals],
            [byPage.length],
            `${step}, ${who}, ${q}: totals ${[...totals].join(',')} for ${byPage.length} items`
          )
          assert.deepEqual(byCursor, byPage, `${step}, ${who}, ${q}: the cursor walk differs from the page walk`)
          assert.equal(new Set(byPage).size, byPage.length, `${step}, ${who}, ${q}: an item twice`)
        })))
      }

      const made: Json[] = []
      const starts = [
        '2026-02-28T23:30:00Z',
        '2026-03-01T00:00:00Z',
        '2026-03-10T10:00:00Z',
        '2026-03-20T10:00:00Z',
        '2026-04-30T23:59:59Z',
        '2026-05-01T10:00:00Z',
        null
      ]
      for (const [i, start] of starts.entries()) {
        for (const visibility of [10, 20, 30, 40]) {
          made.push(
            await createEvent(t, alice, {
              title: `gig ${i}-${visibility}`,
              visibility,
              ...(start !== null ? { start_dt: start } : {})
            })
          )
        }
      }
      for (const e of made.filter((_, i) => i % 3 !== 0)) await publishEvent(t, alice, e.id)
      const orgless = await createEvent(t, erinBefore, {
        title: 'gig without organization',
        visibility: 30,
        start_dt: '2026-03-25T10:00:00Z'
      })
      await publishEvent(t, erinBefore, orgless.id)
      for (const e of made.filter(e => e.visibility === 20).slice(0, 4)) {
        assert.equal(
          (await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/spaces`, payload: { space_id: space } }))
            .statusCode,
          201
        )
      }
      await check('created, published, linked')

      // visibility, organization and start move an event from one bucket to another
      const [first, second, third, fourth] = made.filter(e => e.visibility === 20)
      const patch = async (id: number, body: Json) => {
        const res = await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${id}`,
          payload: body,
          headers: { 'content-type': 'application/merge-patch+json' }
        })
        assert.equal(res.statusCode, 200, res.body)
      }
      await patch(first?.id, { visibility: 40 })
      await patch(second?.id, { start_dt: '2027-04-02T10:00:00Z' })
      await patch(third?.id, { visibility: 10, start_dt: '2026-03-02T00:00:00Z' })
      assert.equal((await t.as(alice, { method: 'POST', url: `/api/v1/events/${fourth?.id}/archive` })).statusCode, 204)
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${made[1]?.id}` })).statusCode, 204)
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${second?.id}/spaces/${space}` })).statusCode,
        204
      )
      await check('patched, archived, deleted, unlinked')

      // a draft clone is never listed; publishing it moves its published row
      const published = made.find((e, i) => i % 3 !== 0 && e.visibility === 30)
      const edit = await t.as(alice, { method: 'POST', url: `/api/v1/events/${published?.id}/edit` })
      assert.equal(edit.statusCode, 200, edit.body)
      await patch(published?.id, { visibility: 20, start_dt: '2026-05-01T12:00:00Z' })
      await check('draft clone open')
      await publishEvent(t, alice, published?.id)
      await check('draft clone published')

      // a series: its occurrences are inserted in one statement, and its cascades update many rows
      const series = await t.as(bob, {
        method: 'POST',
        url: '/api/v1/events/with-series',
        payload: {
          title: 'gig weekly',
          start_dt: '2026-03-03T09:00:00Z',
          end_dt: '2026-03-03T10:00:00Z',
          timezone: 'UTC',
          visibility: 30,
          series: { freq: 'weekly', interval: 1, repeat_days: [2], ends_on: 'after_n', end_count: 12 }
        }
      })
      assert.equal(series.statusCode, 201, series.body)
      const occurrence = series.json().event.id as number
      await check('series created')
      const cascade = await t.as(bob, {
        method: 'PATCH',
        url: `/api/v1/events/${occurrence}/series?scope=all`,
        payload: { visibility: 40 },
        headers: { 'content-type': 'application/merge-patch+json' }
      })
      assert.ok([200, 204].includes(cascade.statusCode), cascade.body)
      await check('series patched')
      const removed = await t.as(bob, { method: 'DELETE', url: `/api/v1/events/${occurrence}/series?scope=future` })
      assert.ok([200, 204].includes(removed.statusCode), removed.body)
      await check('series deleted')

      // folding the delta rows changes no total
      await compactListCounts(t.ctx.db)
      const { rows } = await withSystem(
        t.ctx.db,
        async trx =>
          await sql<{ rows: number; buckets: number }>`select count(*)::int as rows,
        count(distinct (status, visibility, org_id, month))::int as buckets from event_list_counts
          where tenant_id = ${tenant.id}`.execute(
            trx
          )
      )
      if (kind !== 'citus') {
        assert.ok((rows[0]?.rows ?? 0) > 0, 'the kept counts of the tenant are there')
        assert.equal(rows[0]?.rows, rows[0]?.buckets, 'one row a bucket after folding')
      }
      await check('compacted')
    })
  })
}

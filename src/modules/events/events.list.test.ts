import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { updateRows } from '../../../test/helpers/rows.ts'
import { permissionsOf } from '../../platform/auth/permissions.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { eventVisibilityFilter } from './events.access.repository.ts'
import { addMember, createEvent, insertSpace, publishEvent, withoutDetail, type Json } from './events.fixtures.ts'

const ids = (body: Json): number[] => (body.items as Json[]).map(i => i.id)

/** An event of `token`'s titled `title` that starts at `start` (and ends at `end`). */
const datedEvent = async (t: TestApp, token: string, title: string, start: string, end?: string): Promise<Json> =>
  await createEvent(t, token, { title, start_dt: start, ...(end !== undefined ? { end_dt: end } : {}) })

for (const kind of databases()) {
  void describe(`${kind}: event lists, calendar and spaces`, () => {
    const t = useTestApp(kind)

    void it('lists with every filter, sort and page', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const a = await createEvent(t, alice, {
        title: 'Alpha concert',
        start_dt: '2026-03-01T10:00:00Z',
        keywords: ['music'],
        visibility: 40,
        template: 'announcement'
      })
      const b = await createEvent(t, alice, {
        title: 'Beta meeting',
        description: 'quarterly review',
        start_dt: '2026-04-01T10:00:00Z',
        visibility: 20,
        template: 'meeting'
      })
      const c = await createEvent(t, alice, {
        title: 'Gamma',
        address: '5 Harbor Road',
        start_dt: '2026-05-01T10:00:00Z',
        visibility: 10,
        template: 'delivery'
      })
      const d = await createEvent(t, alice, { title: '100%_sale' })
      await publishEvent(t, alice, a.id)
      await publishEvent(t, alice, b.id)
      const archived = await createEvent(t, alice, { title: 'Old' })
      await publishEvent(t, alice, archived.id)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${archived.id}/archive`, 204)
      const space = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${c.id}/spaces`, 201, { space_id: space })

      const list = async (q: string) => {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/events${q}` })
        assert.equal(res.statusCode, 200, `${q}: ${res.body}`)
        return res.json()
      }
      const all = await list('')
      assert.equal(all.$schema, 'http://localhost:8080/schemas/PagedBodyEvent.json')
      assert.deepEqual(ids(all), [d.id, c.id, b.id, a.id])
      assert.equal(all.total, 4)
      assert.equal(all.page, 1)
      assert.equal(all.size, 20)
      assert.deepEqual((all.items as Json[]).find(i => i.id === c.id)?.spaces, [{ id: space, title: 'Space' }])
      assert.deepEqual(ids(await list('?status=published')), [b.id, a.id])
      assert.deepEqual(ids(await list('?status=draft')), [d.id, c.id])
      assert.deepEqual(ids(await list('?status=archived')), [archived.id])
      assert.deepEqual(ids(await list('?visibility=20')), [d.id, b.id])
      assert.deepEqual(ids(await list('?visibility=0')), [d.id, c.id, b.id, a.id])
      assert.deepEqual(ids(await list('?search=MUSIC')), [a.id])
      assert.deepEqual(ids(await list('?search=quarterly')), [b.id])
      assert.deepEqual(ids(await list('?search=harbor')), [c.id])
      assert.deepEqual(ids(await list('?search=0%25_')), [d.id])
      assert.deepEqual(ids(await list('?search=%25')), [d.id])
      assert.deepEqual(ids(await list('?sort_by=title&sort_dir=asc')), [d.id, a.id, b.id, c.id])
      assert.deepEqual(ids(await list('?sort_by=start_dt&sort_dir=asc')), [a.id, b.id, c.id, d.id])
      assert.deepEqual(ids(await list('?start_dt_after=2026-03-15T00:00:00Z')), [c.id, b.id])
      assert.deepEqual(ids(await list('?start_dt_before=2026-04-01T10:00:00Z&sort_by=start_dt&sort_dir=asc')), [
        a.id,
        b.id
      ])
      assert.deepEqual(ids(await list(`?space_ids=${space}`)), [c.id])
      assert.deepEqual(ids(await list(`?space_ids=${space}&space_ids=999999`)), [c.id])
      assert.deepEqual(ids(await list('?template=meeting')), [b.id])
      assert.deepEqual(ids(await list('?template=meeting&template_in=delivery&template_in=announcement')), [
        c.id,
        b.id,
        a.id
      ])
      assert.deepEqual(ids(await list('?template_in=delivery')), [c.id])
      const page2 = await list('?size=3&page=2')
      assert.deepEqual(ids(page2), [a.id])
      assert.equal(page2.total, 4)

      for (const [q, location] of [
        ['?size=0', 'query.size'],
        ['?size=101', 'query.size'],
        ['?page=0', 'query.page'],
        ['?sort_by=secret', 'query.sort_by'],
        ['?sort_dir=up', 'query.sort_dir'],
        ['?status=gone', 'query.status'],
        ['?visibility=15', 'query.visibility'],
        ['?start_dt_after=yesterday', 'query.start_dt_after'],
        ['?space_ids=x', 'query.space_ids[0]']
      ]) {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/events${q ?? ''}` })
        assert.equal(res.statusCode, 400, `${q}: ${res.body}`)
        assert.ok(
          res.json().errors.some((e: Json) => e.location === location),
          `${location}: ${res.body}`
        )
      }
    })

    void it('lists only what visibility shows: another member\'s private event is never listed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const carol = await tenant.user('carol')
      const priv = await createEvent(t, alice, { visibility: 10 })
      const members = await createEvent(t, alice, { visibility: 20 })
      const pub = await createEvent(t, alice, { visibility: 40 })
      const space = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      await addMember(t, tenant.id, space, 'carol')
      await t.as(alice, { method: 'POST', url: `/api/v1/events/${members.id}/spaces`, payload: { space_id: space } })
      assert.deepEqual(ids((await t.as(bob, { method: 'GET', url: '/api/v1/events' })).json()), [pub.id])
      assert.deepEqual(ids((await t.as(carol, { method: 'GET', url: '/api/v1/events' })).json()), [pub.id, members.id])
      assert.deepEqual(ids((await t.as(alice, { method: 'GET', url: '/api/v1/events' })).json()), [
        pub.id,
        members.id,
        priv.id
      ])
      await expectStatus(t, bob, 'GET', `/api/v1/events/${priv.id}`, 404)
      // the same rule as a filter for queries that join events (other modules)
      const bobAuth = {
        userId: 'bob',
        tenantId: tenant.id,
        email: null,
        orgId: null,
        roles: ['member'],
        effectiveRole: 'member' as const,
        permissions: new Set(permissionsOf(['member'])),
        exp: 0
      }
      const joined = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx =>
        await trx
          .selectFrom('event_activity')
          .innerJoin('events', j =>
            j
              .onRef('events.tenant_id', '=', 'event_activity.tenant_id')
              .onRef('events.id', '=', 'event_activity.event_id')
          )
          .select('events.id')
          .where(eventVisibilityFilter(bobAuth))
          .execute()
      )
      assert.deepEqual(joined.map(r => r.id), [pub.id])
    })

    void it('shows in the calendar an event that started months before the range and is still running', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const season = await datedEvent(t, alice, 'season', '2026-03-01T09:00:00Z', '2026-09-30T18:00:00Z')
      const short = await datedEvent(t, alice, 'short', '2026-07-10T09:00:00Z', '2026-07-10T10:00:00Z')
      await datedEvent(t, alice, 'spring', '2026-04-01T09:00:00Z', '2026-04-02T09:00:00Z')
      const res = await t.as(alice, {
        method: 'GET',
        url: '/api/v1/events/calendar?start_date=2026-07-01&end_date=2026-07-31'
      })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(ids(res.json()), [season.id, short.id])
      // once the long event is gone, the others are still found
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${String(season.id)}`, 204)
      assert.deepEqual(
        ids(
          (
            await t.as(alice, {
              method: 'GET',
              url: '/api/v1/events/calendar?start_date=2026-07-01&end_date=2026-07-31'
            })
          ).json()
        ),
        [short.id]
      )
    })

    void it('answers the calendar with the events as GET /events/{id} answers them', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const day = (h: number) => `2026-07-10T${String(h).padStart(2, '0')}:00:00Z`
      const full = await createEvent(t, alice, {
        title: 'Quotes " and \\ and\nlines, ünïcødé ✓',
        description: 'tab\there\u0001 control',
        address: 'Unter den Linden 1',
        start_dt: '2026-07-10T08:00:00.123Z',
        end_dt: '2026-07-10T09:30:00Z',
        timezone: 'Europe/Berlin',
        keywords: ['one', 'two "quoted"'],
        latitude: 52.520008,
        longitude: 0.00001,
        metadata: { nested: { list: [1, 2.5, 'x', null, true] }, b: 1, a: 'first' },
        visibility: 40,
        priority: 3
      })
      const bare = await createEvent(t, alice, { title: 'bare', start_dt: day(10) })
      const linked = await createEvent(t, alice, { title: 'linked', start_dt: day(11), end_dt: day(12) })
      const one = await insertSpace(t, tenant.id, { title: 'Space "one"', creator_id: 'alice' })
      const two = await insertSpace(t, tenant.id, { title: 'Two', creator_id: 'alice' })
      const gone = await insertSpace(t, tenant.id, { title: 'Gone', creator_id: 'alice' })
      for (const space of [two, gone, one]) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${String(linked.id)}/spaces`, 201, { space_id: space })
      }
      await updateRows(t, tenant.id, 'spaces', { is_deleted: true }, { id: gone })
      // published, with an open draft whose changes the calendar does not show
      await publishEvent(t, alice, linked.id)
      const draft = await expectStatus(t, alice, 'POST', `/api/v1/events/${String(linked.id)}/edit`, 200)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${String(draft.json().id)}`, 200, { title: 'draft title' })
      const series = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/events/with-series',
        payload: {
          title: 'Weekly',
          start_dt: day(13),
          end_dt: day(14),
          series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
        }
      })
      assert.equal(series.statusCode, 201, series.body)

      // each item as GET /events/{id} answers it, also after changes to the events and what they show of other tables
      const calendarAsReads = async (): Promise<Json[]> => {
        const res = await t.as(alice, {
          method: 'GET',
          url: '/api/v1/events/calendar?start_date=2026-07-01&end_date=2026-07-31'
        })
        assert.equal(res.statusCode, 200, res.body)
        assert.match(String(res.headers['content-type']), /^application\/json/)
        assert.equal(res.headers.link, '<http://localhost:8080/schemas/CalendarBody.json>; rel="describedBy"')
        const body = res.json()
        assert.deepEqual(Object.keys(body), ['$schema', 'items', 'next_cursor'])
        for (const item of body.items as Json[]) {
          // GET /events/{id} alone adds the registration figures (counted per request)
          const { $schema: _schema, ...expected } = withoutDetail((
            await t.as(alice, { method: 'GET', url: `/api/v1/events/${String(item.id)}` })
          ).json())
          assert.deepEqual(item, expected)
        }
        return body.items
      }
      // a member's list by start (its page and total in one statement where the links serve): the same events in the
      // same order as the calendar, each as GET /events/{id} answers it
      const listAsReads = async (calendar: Json[]): Promise<void> => {
        const res = await t.as(alice, {
          method: 'GET',
          url: '/api/v1/events?start_dt_after=2026-07-01T00:00:00Z&sort_by=start_dt&sort_dir=asc&size=50'
        })
        assert.equal(res.statusCode, 200, res.body)
        assert.deepEqual(res.json().items, calendar)
      }
      const seriesIds = (series.json().occurrences as Json[]).map(o => o.id as number)
      const item = (items: Json[], id: number): Json | undefined => items.find(i => i.id === id)
      let items = await calendarAsReads()
      await listAsReads(items)
      assert.deepEqual(items.map(i => i.id), [full.id, bare.id, linked.id, ...seriesIds])
      assert.equal(item(items, linked.id)?.title, 'linked', 'the published row, not its open draft')
      assert.deepEqual(
        item(items, linked.id)?.spaces,
        [
          { id: one, title: 'Space "one"' },
          { id: two, title: 'Two' }
        ].sort((a, b) => a.id - b.id)
      )
      assert.equal(item(items, full.id)?.start_dt, '2026-07-10T08:00:00.123Z')
      assert.equal(item(items, seriesIds[0] ?? 0)?.series_title, 'Weekly')
      assert.equal(item(items, bare.id)?.series_title, null)

      await expectStatuses(t, [
        [alice, 'PATCH', `/api/v1/events/${String(full.id)}`, 200, { title: 'renamed', metadata: { b: 2 } }],
        [alice, 'POST', `/api/v1/events/${String(linked.id)}/publish`, 204]
      ])
      await updateRows(t, tenant.id, 'spaces', { title: 'One, renamed' }, { id: one })
      await updateRows(t, tenant.id, 'event_series', { title: 'Weekly, renamed' })
      items = await calendarAsReads()
      await listAsReads(items)
      assert.equal(item(items, full.id)?.title, 'renamed')
      assert.equal(item(items, full.id)?.metadata.b, 2)
      assert.equal(item(items, linked.id)?.title, 'draft title', 'the draft, published')
      assert.ok((item(items, linked.id)?.spaces as Json[]).some(s => s.title === 'One, renamed'))
      assert.equal(item(items, seriesIds[1] ?? 0)?.series_title, 'Weekly, renamed')
    })

    void it('answers the calendar: overlap, inclusive end, time zone, sort, limits', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const before = await datedEvent(t, alice, 'before', '2026-06-30T20:00:00Z', '2026-06-30T21:00:00Z')
      const spans = await datedEvent(t, alice, 'spans', '2026-06-30T22:00:00Z', '2026-07-01T02:00:00Z')
      const inside = await datedEvent(t, alice, 'inside', '2026-07-15T10:00:00Z')
      const lastDay = await datedEvent(t, alice, 'last day', '2026-07-31T23:30:00Z')
      const after = await datedEvent(t, alice, 'after', '2026-08-01T00:00:00Z')
      await createEvent(t, alice, { title: 'undated' })
      const cal = async (q: string) => {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/events/calendar?${q}` })
        assert.equal(res.statusCode, 200, `${q}: ${res.body}`)
        return res.json()
      }
      const july = await cal('start_date=2026-07-01&end_date=2026-07-31')
      assert.equal(july.$schema, 'http://localhost:8080/schemas/CalendarBody.json')
      assert.equal(july.next_cursor, null)
      assert.deepEqual(ids(july), [spans.id, inside.id, lastDay.id])
      assert.deepEqual(ids(await cal('start_date=2026-07-01&end_date=2026-07-31&sort_order=desc')), [
        lastDay.id,
        inside.id,
        spans.id
      ])
      assert.deepEqual(ids(await cal('start_date=2026-07-01&end_date=2026-07-31&sort_by=title')), [
        inside.id,
        lastDay.id,
        spans.id
      ])
      // in Berlin (UTC+2 in summer) July 1st starts at 2026-06-30T22:00Z and ends at 2026-07-31T22:00Z
      assert.deepEqual(ids(await cal('start_date=2026-07-01&end_date=2026-07-31&timezone=Europe/Berlin')), [
        spans.id,
        inside.id
      ])
      assert.deepEqual(ids(await cal('start_date=2026-06-30&end_date=2026-06-30')), [before.id, spans.id])
      assert.deepEqual(ids(await cal('start_date=2026-08-01&end_date=2026-08-01')), [after.id])
      assert.equal((await cal('start_date=2025-01-01&end_date=2026-01-01')).items.length, 0)

      for (const [q, location] of [
        ['end_date=2026-07-31', 'query.start_date'],
        ['start_date=2026-07-01', 'query.end_date'],
        ['start_date=2026-7-1&end_date=2026-07-31', 'query.start_date'],
        ['start_date=2026-02-30&end_date=2026-07-31', 'query.start_date'],
        ['start_date=2026-07-31&end_date=2026-07-01', 'query.end_date'],
        ['start_date=2025-01-01&end_date=2026-01-02', 'query.end_date'],
        ['start_date=2026-07-01&end_date=2026-07-31&timezone=Mars/Base', 'query.timezone'],
        ['start_date=2026-07-01&end_date=2026-07-31&sort_by=id', 'query.sort_by'],
        ['start_date=2026-07-01&end_date=2026-07-31&sort_order=up', 'query.sort_order']
      ]) {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/events/calendar?${q ?? ''}` })
        assert.equal(res.statusCode, 400, `${q}: ${res.body}`)
        assert.ok(res.json().errors.some((e: Json) => e.location === location), `${location}: ${res.body}`)
      }
    })

    void it('adds, lists and removes the spaces of an event', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      const otherTenant = newTenant(t)
      const other = await otherTenant.user('mallory', ['admin'])
      const e = await createEvent(t, alice, { visibility: 40 })
      const s1 = await insertSpace(t, tenant.id, { title: 'One', creator_id: 'alice' })
      const s2 = await insertSpace(t, tenant.id, { title: 'Two', creator_id: 'alice' })
      const gone = await insertSpace(t, tenant.id, { is_deleted: true, creator_id: 'alice' })
      const foreign = await insertSpace(t, otherTenant.id)
      const url = `/api/v1/events/${e.id}/spaces`

      const add = await t.as(alice, { method: 'POST', url, payload: { space_id: s1 } })
      assert.equal(add.statusCode, 201, add.body)
      const row = add.json()
      assert.equal(row.$schema, 'http://localhost:8080/schemas/EventSpace.json')
      assert.deepEqual(
        { ...row, id: 0, created_at: '', updated_at: '' },
        { $schema: row.$schema, id: 0, event_id: e.id, space_id: s1, org_id: 'org-1', created_at: '', updated_at: '' }
      )
      assert.equal((await t.as(alice, { method: 'POST', url, payload: { space_id: s2 } })).statusCode, 201)
      assert.equal((await t.as(alice, { method: 'POST', url, payload: { space_id: s1 } })).statusCode, 409)
      assert.equal((await t.as(alice, { method: 'POST', url, payload: { space_id: gone } })).statusCode, 404)
      assert.equal((await t.as(alice, { method: 'POST', url, payload: { space_id: foreign } })).statusCode, 404)
      const bad = await t.as(alice, { method: 'POST', url, payload: { space_id: 'one' } })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.space_id')
      const missing = await t.as(alice, { method: 'POST', url, payload: {} })
      assert.equal(missing.json().errors[0].location, 'body.space_id')
      assert.equal((await t.as(viewer, { method: 'POST', url, payload: { space_id: s2 } })).statusCode, 403)
      assert.equal((await t.as(bob, { method: 'POST', url, payload: { space_id: s2 } })).statusCode, 403)
      assert.equal((await t.as(other, { method: 'POST', url, payload: { space_id: foreign } })).statusCode, 404)
      assert.equal((await t.as(other, { method: 'GET', url })).statusCode, 404)

      const listed = await t.as(viewer, { method: 'GET', url })
      assert.equal(listed.statusCode, 200)
      assert.deepEqual((listed.json().items as Json[]).map(i => i.space_id), [s1, s2])
      assert.equal(listed.json().total, 2)
      const paged = (await t.as(viewer, { method: 'GET', url: `${url}?size=1&page=2` })).json()
      assert.deepEqual((paged.items as Json[]).map(i => i.space_id), [s2])
      await expectStatus(t, viewer, 'GET', `${url}?size=500`, 400)
      assert.deepEqual((await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}` })).json().spaces, [
        { id: s1, title: 'One' },
        { id: s2, title: 'Two' }
      ])

      await expectStatuses(t, [
        [bob, 'DELETE', `${url}/${s1}`, 403],
        [other, 'DELETE', `${url}/${s1}`, 404],
        [alice, 'DELETE', `${url}/${s1}`, 204],
        [alice, 'DELETE', `${url}/${s1}`, 404]
      ])
      assert.deepEqual(((await t.as(viewer, { method: 'GET', url })).json().items as Json[]).map(i => i.space_id), [s2])
    })

    void it("pages an event's spaces and activity by cursor as by page, " +
      "and refuses another list's cursor", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { title: 'Cursor walk' })
      const other = await createEvent(t, alice, { title: 'Another' })
      const spaces: number[] = []
      for (let i = 0; i < 5; i++) {
        const s = await insertSpace(t, tenant.id, { creator_id: 'alice', title: `S${i}` })
        spaces.push(s)
        await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/spaces`, 201, { space_id: s })
      }
      for (let i = 0; i < 5; i++) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/activity`, 201, {
          kind: 'note',
          payload: { n: i }
        })
      }
      const get = async (url: string) => await getJson(t, alice, url)
      const walk = async (url: string, key: string, sizeParam: string) =>
        (await itemsByCursor(t, alice, `${url}?${sizeParam}=2`)).map(i => i[key])
      const spacesUrl = `/api/v1/events/${e.id}/spaces`
      assert.deepEqual(await walk(spacesUrl, 'space_id', 'size'), spaces)
      const second = await get(`${spacesUrl}?size=2`)
      const page2 = await get(`${spacesUrl}?size=2&cursor=${encodeURIComponent(second.next_cursor)}`)
      assert.equal(page2.page, 2)
      assert.equal(page2.total, 5)
      assert.equal((await get(`${spacesUrl}?size=5`)).next_cursor, null)

      const activityUrl = `/api/v1/events/${e.id}/activity`
      const newestFirst = ((await get(`${activityUrl}?kind=note`)).items as Json[]).map(i => i.id)
      assert.equal(newestFirst.length, 5)
      assert.deepEqual(
        await walk(`${activityUrl}`, 'id', 'limit').then(ids => ids.filter(id => newestFirst.includes(id))),
        newestFirst
      )

      // a cursor that names the longest title (255 characters of four UTF-8 bytes each) is taken back
      for (const mark of ['🎉', '🎈']) await createEvent(t, alice, { title: mark.repeat(255) })
      const byTitle = await get('/api/v1/events?sort_by=title&sort_dir=desc&size=1')
      assert.ok((byTitle.next_cursor as string).length > 1024)
      const nextTitle = await get(
        `/api/v1/events?sort_by=title&sort_dir=desc&size=1&cursor=${encodeURIComponent(byTitle.next_cursor)}`
      )
      assert.notDeepEqual(nextTitle.items[0].id, byTitle.items[0].id)

      // a cursor belongs to its list: another event's, another filter's, or garbage is refused
      for (const [url, cursor] of [
        [`/api/v1/events/${other.id}/spaces?size=2`, second.next_cursor],
        [`${activityUrl}?limit=2&kind=other`, (await get(`${activityUrl}?limit=2&kind=note`)).next_cursor],
        [`${spacesUrl}?size=2`, 'not-a-cursor'],
        // this list's own cursor with a key that is no timestamp: refused before it reaches the database
        [
          `${spacesUrl}?size=2`,
          (() => {
            const body = JSON.parse(Buffer.from(second.next_cursor as string, 'base64url').toString()) as Json
            return Buffer.from(JSON.stringify({ ...body, k: ['yesterday', body.k[1]] })).toString('base64url')
          })()
        ],
        [`${spacesUrl}?size=2`, Buffer.from('{"k":[1],"p":2,"s":"x"}').toString('base64url')]
      ]) {
        const res = await t.as(alice, { method: 'GET', url: `${url}&cursor=${encodeURIComponent(cursor)}` })
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
        assert.ok(
          res.json().errors.some((x: Json) => x.location === 'query.cursor'),
          res.body
        )
      }
    })
  })
}

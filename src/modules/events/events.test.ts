import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import { expectStatus, expectStatuses, TITLED_BODY_REFUSALS, writeIfMatch } from '../../../test/helpers/requests.ts'
import { sql } from 'kysely'
import { withTenant } from '../../platform/db/tenant.ts'
import {
  activityKinds, addManager, addMember, createEvent, getEvent, insertSpace, outboxTopics, publishEvent, withoutDetail,
  type Json
} from './events.fixtures.ts'

for (const kind of databases()) {
  void describe(`${kind}: events`, () => {
    const t = useTestApp(kind)

    void it('creates a draft event pinned to the latest template version', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const res = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/events',
        payload: {
          title: 'Launch',
          description: 'Big day',
          address: '1 Main St',
          start_dt: '2026-12-01T10:00:00Z',
          end_dt: '2026-12-01T12:00:00+00:00',
          timezone: 'Europe/Paris',
          keywords: ['launch', 'party'],
          latitude: 48.85,
          longitude: 2.35,
          metadata: { room: 'A' },
          visibility: 40
        }
      })
      assert.equal(res.statusCode, 201, res.body)
      const e = res.json()
      assert.equal(res.headers.location, `/api/v1/events/${e.id}`)
      assert.equal(res.headers.etag, '"1"')
      assert.equal(e.$schema, 'http://localhost:8080/schemas/Event.json')
      assert.equal(typeof e.id, 'number')
      assert.deepEqual({ ...e, id: 0, created_at: '', updated_at: '', created_dt: '' }, {
        $schema: e.$schema,
        id: 0,
        title: 'Launch',
        status: 'draft',
        visibility: 40,
        timezone: 'Europe/Paris',
        creator_id: 'alice',
        created_at: '',
        created_dt: '',
        updated_at: '',
        version: 0,
        is_deleted: false,
        is_locked: false,
        description: 'Big day',
        address: '1 Main St',
        latitude: 48.85,
        longitude: 2.35,
        start_dt: '2026-12-01T10:00:00.000Z',
        end_dt: '2026-12-01T12:00:00.000Z',
        keywords: ['launch', 'party'],
        metadata: { room: 'A' },
        metadata_override: null,
        title_override: null,
        description_override: null,
        org_id: 'org-1',
        parent_event_id: null,
        published_at: null,
        published_id: null,
        series_id: null,
        series_index: null,
        series_title: null,
        template: 'generic',
        template_version: 1,
        state: null,
        priority: 0,
        cover_image_key: null,
        cancelled_at: null,
        cancellation_reason: null,
        spaces: []
      })
      assert.equal('tenant_id' in e, false)
      const again = await getEvent(t, alice, e.id)
      assert.equal(again.statusCode, 200)
      assert.equal(again.headers.etag, '"1"')
      assert.match(String(again.headers.link), /Event\.json/)
      assert.deepEqual(withoutDetail(again.json()), e)
      assert.deepEqual(await outboxTopics(t, tenant.id), ['event.created'])
      assert.deepEqual(await activityKinds(t, alice, e.id), ['created'])
    })

    void it('pins a template: defaults, explicit version, initial state, unknown ones refused', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const d = await createEvent(t, alice, { template: 'delivery' })
      assert.equal(d.template_version, 2)
      assert.equal(d.state, 'pending')
      const d1 = await createEvent(t, alice, { template: 'delivery', template_version: 1 })
      assert.equal(d1.template_version, 1)
      const m = await createEvent(t, alice, { template: 'meeting' })
      assert.equal(m.state, 'scheduled')
      const bad1 = await expectStatus(t, alice, 'POST', '/api/v1/events', 400, { title: 'x', template: 'party' })
      assert.equal(bad1.json().errors[0].location, 'body.template')
      const bad2 = await expectStatus(t, alice, 'POST', '/api/v1/events', 400, {
        title: 'x',
        template: 'delivery',
        template_version: 9
      })
      assert.equal(bad2.json().errors[0].location, 'body.template_version')
    })

    void it('refuses bad input with 400 naming the field and creates nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const cases: Array<[Json, string]> = [
        ...TITLED_BODY_REFUSALS,
        [{ title: 'a'.repeat(256) }, 'body.title'],
        [{ title: 'a', latitude: 91 }, 'body.latitude'],
        [{ title: 'a', longitude: -181 }, 'body.longitude'],
        [{ title: 'a', start_dt: 'tomorrow' }, 'body.start_dt'],
        [{ title: 'a', start_dt: '2026-01-02T00:00:00Z', end_dt: '2026-01-01T00:00:00Z' }, 'body.end_dt'],
        [{ title: 'a', keywords: Array.from({ length: 51 }, (_, i) => `k${i}`) }, 'body.keywords'],
        [{ title: 'a', keywords: [''] }, 'body.keywords[0]'],
        [{ title: 'a', metadata: { big: 'x'.repeat(17_000) } }, 'body.metadata'],
        [
          { title: 'a', metadata: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) },
          'body.metadata'
        ],
        [{ title: 'a', metadata: [1] }, 'body.metadata'],
        [{ title: 'a', parent_event_id: 999999 }, 'body.parent_event_id']
      ]
      for (const [payload, location] of cases) {
        const res = await t.as(alice, { method: 'POST', url: '/api/v1/events', payload })
        assertBadRequestAt(res, location)
        assert.equal(res.json().title, 'Bad Request')
      }
      const list = await t.as(alice, { method: 'GET', url: '/api/v1/events' })
      assert.equal(list.json().total, 0)
      assert.deepEqual(await outboxTopics(t, tenant.id), [])
    })

    void it('replaces with PUT: omitted fields are cleared, If-Match guards', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, {
        description: 'd',
        address: 'a',
        keywords: ['k'],
        metadata: { a: 1 },
        visibility: 40,
        timezone: 'Asia/Tokyo',
        priority: 3
      })
      const url = `/api/v1/events/${e.id}`
      assert.equal((await writeIfMatch(t, alice, 'PUT', url, '"7"', { title: 'New' })).statusCode, 412)
      const res = await writeIfMatch(t, alice, 'PUT', url, '"1"', { title: 'New', address: 'b' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers.etag, '"2"')
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.title, 'New')
      assert.equal(got.address, 'b')
      assert.equal(got.description, null)
      assert.deepEqual(got.keywords, [])
      assert.deepEqual(got.metadata, {})
      assert.equal(got.visibility, 20)
      assert.equal(got.timezone, 'UTC')
      assert.equal(got.priority, 3)
      assert.equal(got.version, 0)
      const missing = await expectStatus(t, alice, 'PUT', `/api/v1/events/${e.id}`, 400, { description: 'x' })
      assert.equal(missing.json().errors[0].location, 'body.title')
    })

    void it('merge-patches: omitted kept, null clears, metadata merged, template immutable', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, {
        description: 'd',
        address: 'a',
        keywords: ['k'],
        metadata: { a: 1, b: { c: 2, d: 3 } },
        start_dt: '2026-05-01T10:00:00Z',
        end_dt: '2026-05-01T11:00:00Z'
      })
      const res = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${e.id}`,
        headers: { 'content-type': 'application/merge-patch+json' },
        payload: JSON.stringify({ description: null, metadata: { a: null, b: { d: 4 }, e: 5 }, priority: 7 })
      })
      assert.equal(res.statusCode, 200, res.body)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.title, 'Launch party')
      assert.equal(got.description, null)
      assert.equal(got.address, 'a')
      assert.deepEqual(got.keywords, ['k'])
      assert.deepEqual(got.metadata, { b: { c: 2, d: 4 }, e: 5 })
      assert.equal(got.priority, 7)

      await expectStatuses(t, [
        [alice, 'PATCH', `/api/v1/events/${e.id}`, 409, { template: 'delivery', title: 'x' }],
        [alice, 'PATCH', `/api/v1/events/${e.id}`, 409, { template: 'generic' }]
      ])
      const range = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}`, 400, {
        start_dt: '2026-05-02T10:00:00Z'
      })
      assert.equal(range.json().errors[0].location, 'body.start_dt')
      const nullTitle = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}`, 400, { title: null })
      assert.equal(nullTitle.json().errors[0].location, 'body.title')
      const tz = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}`, 400, { timezone: 'Nowhere/City' })
      assert.equal(tz.json().errors[0].location, 'body.timezone')
      const after = (await getEvent(t, alice, e.id)).json()
      assert.deepEqual(after, got)
    })

    void it('soft-deletes: gone from reads and lists, further writes refused', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${e.id}`, 204)
      assert.equal((await getEvent(t, alice, e.id)).statusCode, 404)
      assert.equal((await t.as(alice, { method: 'GET', url: '/api/v1/events' })).json().total, 0)
      // a deleted event answers writes as reads: 404
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}`, 404, { title: 'x' })
      assert.deepEqual(await outboxTopics(t, tenant.id), ['event.created', 'event.deleted'])
    })

    void it('archives: read-only afterwards', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      await publishEvent(t, alice, e.id)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/archive`, 204)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.status, 'archived')
      for (const req of [
        { method: 'PATCH' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'x' } },
        { method: 'PUT' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'x' } },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/publish` },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/archive` },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/edit` }
      ]) {
        const res = await t.as(alice, req)
        assert.equal(res.statusCode, 409, `${req.method} ${req.url}: ${res.body}`)
      }
      assert.equal((await getEvent(t, alice, e.id)).json().title, 'Launch party')
      assert.deepEqual(await activityKinds(t, alice, e.id), ['archived', 'published', 'created'])
    })

    void it('enforces roles and tenancy', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const viewer = await tenant.user('vera', ['viewer'])
      const bob = await tenant.user('bob')
      const admin = await tenant.user('ada', ['admin'])
      const other = await newTenant(t).user('mallory', ['admin'])
      const e = await createEvent(t, alice, { visibility: 40 })

      await expectStatuses(t, [
        [viewer, 'POST', '/api/v1/events', 403, { title: 'x' }],
        [viewer, 'PATCH', `/api/v1/events/${e.id}`, 403, { title: 'x' }],
        [viewer, 'DELETE', `/api/v1/events/${e.id}`, 403],
        [viewer, 'POST', `/api/v1/events/${e.id}/publish`, 403]
      ])
      assert.equal((await getEvent(t, viewer, e.id)).statusCode, 200)
      const noToken = await t.app.inject({ method: 'GET', url: `/api/v1/events/${e.id}` })
      assert.equal(noToken.statusCode, 401)

      // visible but not theirs: 403, nothing changed
      await expectStatuses(t, [
        [bob, 'PATCH', `/api/v1/events/${e.id}`, 403, { title: 'bob' }],
        [bob, 'DELETE', `/api/v1/events/${e.id}`, 403]
      ])
      // another tenant: 404 for every operation, nothing changed
      for (const req of [
        { method: 'GET' as const, url: `/api/v1/events/${e.id}` },
        { method: 'PATCH' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'm' } },
        { method: 'PUT' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'm' } },
        { method: 'DELETE' as const, url: `/api/v1/events/${e.id}` },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/archive` },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/publish` }
      ]) {
        const res = await t.as(other, req)
        assert.equal(res.statusCode, 404, `${req.method} ${req.url}: ${res.body}`)
      }
      assert.equal((await t.as(other, { method: 'GET', url: '/api/v1/events' })).json().total, 0)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.title, 'Launch party')
      assert.equal(got.is_deleted, false)
      // the tenant admin may do everything
      await expectStatus(t, admin, 'PATCH', `/api/v1/events/${e.id}`, 200, { title: 'by admin' })
    })

    void it('applies visibility to reads: private, members-only, organization, public', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-c' })
      const admin = await tenant.user('ada', ['admin'])
      const priv = await createEvent(t, alice, { visibility: 10 })
      const members = await createEvent(t, alice, { visibility: 20 })
      const org = await createEvent(t, alice, { visibility: 30 })
      const pub = await createEvent(t, alice, { visibility: 40 })
      const space = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      await addMember(t, tenant.id, space, 'carol')
      await expectStatus(t, alice, 'POST', `/api/v1/events/${members.id}/spaces`, 201, { space_id: space })

      const sees = async (token: string) => {
        const out: number[] = []
        for (const e of [priv, members, org, pub]) {
          if ((await getEvent(t, token, e.id)).statusCode === 200) out.push(e.visibility)
        }
        const list = (await t.as(token, { method: 'GET', url: '/api/v1/events?sort_by=visibility' })).json()
        const listed = list.items === undefined ? [] : (list.items as Json[]).map(i => i.visibility).sort()
        return { out, listed }
      }
      assert.deepEqual(await sees(alice), { out: [10, 20, 30, 40], listed: [] })
      assert.deepEqual((await sees(bob)).out, [30, 40])
      assert.deepEqual((await sees(carol)).out, [20, 40])
      assert.deepEqual((await sees(admin)).out, [10, 20, 30, 40])
      // the private event's manager sees it, and may edit with event:edit
      await addManager(t, tenant.id, priv.id, 'bob', { permissions: ['event:edit'] })
      assert.equal((await getEvent(t, bob, priv.id)).statusCode, 200)
      await expectStatuses(t, [
        [bob, 'PATCH', `/api/v1/events/${priv.id}`, 200, { title: 'by bob' }],
        [bob, 'DELETE', `/api/v1/events/${priv.id}`, 403],
        [carol, 'PATCH', `/api/v1/events/${priv.id}`, 404, { title: 'by carol' }]
      ])
      assert.equal((await getEvent(t, alice, priv.id)).json().title, 'by bob')
      // a role bundle grants all of its permissions; a revoked manager nothing
      await addManager(t, tenant.id, org.id, 'carol', { role: 'event_manager:full' })
      await expectStatus(t, carol, 'POST', `/api/v1/events/${org.id}/publish`, 204)
      await addManager(t, tenant.id, pub.id, 'carol', { role: 'event_manager:full', status: 'revoked' })
      await expectStatus(t, carol, 'POST', `/api/v1/events/${pub.id}/publish`, 403)
    })

    void it('guards every write with If-Match: 412 and nothing changed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { template: 'delivery' })
      const space = await insertSpace(t, tenant.id)
      const stale = '"99"'
      const writes = [
        { method: 'PUT' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'x' } },
        { method: 'PATCH' as const, url: `/api/v1/events/${e.id}`, payload: { title: 'x' } },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/transition`, payload: { to_state: 'in_transit' } },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/spaces`, payload: { space_id: space } },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/publish` },
        { method: 'POST' as const, url: `/api/v1/events/${e.id}/archive` },
        { method: 'DELETE' as const, url: `/api/v1/events/${e.id}` }
      ]
      for (const w of writes) {
        const res = await writeIfMatch(t, alice, w.method, w.url, stale, w.payload)
        assert.equal(res.statusCode, 412, `${w.method} ${w.url}: ${res.body}`)
      }
      const got = await getEvent(t, alice, e.id)
      assert.equal(got.headers.etag, '"1"')
      assert.deepEqual(withoutDetail(got.json<Json>()), e)
      await publishEvent(t, alice, e.id)
      const etag = String((await getEvent(t, alice, e.id)).headers.etag)
      assert.equal((await writeIfMatch(t, alice, 'POST', `/api/v1/events/${e.id}/edit`, stale)).statusCode, 412)
      assert.equal((await writeIfMatch(t, alice, 'POST', `/api/v1/events/${e.id}/edit`, etag)).statusCode, 200)
      assert.equal((await writeIfMatch(t, alice, 'POST', `/api/v1/events/${e.id}/discard`, stale)).statusCode, 412)
      await expectStatus(t, alice, 'GET', `/api/v1/events/${e.id}/draft`, 200)
      assert.deepEqual(await outboxTopics(t, tenant.id), ['event.created', 'event.published', 'event.draft_started'])
    })

    void it('replays a create sent again with the same Idempotency-Key', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const opts = {
        method: 'POST' as const,
        url: '/api/v1/events',
        headers: { 'idempotency-key': 'create-1' },
        payload: { title: 'Once' }
      }
      const first = await t.as(alice, opts)
      const second = await t.as(alice, opts)
      assert.equal(first.statusCode, 201)
      assert.equal(second.statusCode, 201)
      assert.equal(second.headers['idempotent-replayed'], 'true')
      assert.equal(second.json().id, first.json().id)
      assert.equal((await t.as(alice, { method: 'GET', url: '/api/v1/events' })).json().total, 1)
    })

    void it('lets a series manager see and change every occurrence of the series', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const first = await createEvent(t, alice, { visibility: 10 })
      const second = await createEvent(t, alice, { visibility: 10 })
      const lone = await createEvent(t, alice, { visibility: 10 })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        // a series row when the series module's table exists (it adds the foreign key), else any id
        const hasSeries =
          (await sql<{ t: string | null }>`select to_regclass('event_series')::text as t`.execute(trx)).rows[0]?.t !=
          null
        const seriesId = hasSeries
          ? ((
              await sql<{
                id: number
              }>`insert into event_series (tenant_id, creator_id, title, start_dt, end_dt, freq, duration)
              values (${tenant.id}, 'alice', 'Weekly', now(), now() + interval '1 hour', 'daily', '01:00:00')
                returning id`.execute(
                  trx
                )
            ).rows[0]?.id ?? 0)
          : 77
        await trx
          .updateTable('events')
          .set({ series_id: seriesId })
          .where('tenant_id', '=', tenant.id)
          .where('id', 'in', [first.id, second.id])
          .execute()
        await trx
          .insertInto('event_managers')
          .values({ tenant_id: tenant.id, series_id: seriesId, user_id: 'bob', permissions: ['event:edit'] })
          .execute()
      })
      const listed = (await t.as(bob, { method: 'GET', url: '/api/v1/events?sort_by=id&sort_dir=asc' })).json()
      assert.deepEqual((listed.items as Json[]).map(i => i.id), [first.id, second.id])
      assert.equal((await getEvent(t, bob, lone.id)).statusCode, 404)
      await expectStatuses(t, [
        [bob, 'PATCH', `/api/v1/events/${second.id}`, 200, { title: 'by series manager' }],
        [bob, 'POST', `/api/v1/events/${second.id}/publish`, 403]
      ])
    })

    void it('serves the manager permission catalogue', async () => {
      const alice = await newTenant(t).user('alice', ['viewer'])
      const res = await expectStatus(t, alice, 'GET', '/api/v1/events/manager-permissions', 200)
      const body = res.json()
      assert.ok(body.permissions.includes('event:edit'))
      assert.ok(body.permissions.includes('attendees:checkin'))
      assert.deepEqual(body.roles['event_manager:full'], body.permissions)
    })
  })
}

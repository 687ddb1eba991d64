import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import { addManager, createEvent, outboxTopics, publishEvent, type Json } from '../attendees/attendees.fixtures.ts'
import { derivedStatus } from './event-content.milestones.repository.ts'

for (const kind of databases()) {
  void describe(`${kind}: milestones, documents, attachments, links`, () => {
    const t = useTestApp(kind)

    /** A tenant, alice and her event the milestones, documents, attachments and links hang on. */
    async function setup () {
      const { tenant, alice, event } = await aliceWithEvent(t, { title: 'Project' })
      return { tenant, alice, base: event }
    }
    const milestones = async (token: string, id: number, q = '') =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/milestones${q}` })

    void it('pages milestones (ties on sequence) and managers by cursor as by page; ' +
      "another event's cursor is refused", async () => {
      const { tenant, alice, base } = await setup()
      const other = await createEvent(t, alice, { title: 'Other' })
      for (let i = 0; i < 7; i++) {
        const m = await createEvent(t, alice, { title: `M${i}` })
        await expectStatus(t, alice, 'POST', `/api/v1/events/${base.id}/milestones`, 201, {
          milestone_event_id: m.id,
          sequence: i % 3
        })
      }
      for (let i = 0; i < 6; i++) await addManager(t, tenant.id, base.id, `mgr${i}`, { permissions: ['event:edit'] })
      for (const [list, key] of [
        ['milestones', 'id'],
        ['managers', 'user_id']
      ] as const) {
        const url = `/api/v1/events/${base.id}/${list}`
        const all = ((await getJson(t, alice, `${url}?size=100`)).items as Json[]).map(i => i[key])
        assert.ok(all.length >= 6, list)
        const walked = (await itemsByCursor(t, alice, `${url}?size=2`)).map(i => i[key])
        assert.deepEqual(walked, all, list)
        const first = await getJson(t, alice, `${url}?size=2`)
        await refusedCursor(t, alice, `/api/v1/events/${other.id}/${list}?size=2`, first.next_cursor)
      }
    })

    void it('derives a milestone status from the milestone event', () => {
      const now = new Date('2026-06-01T12:00:00Z')
      const d = (s: string) => new Date(s)
      assert.equal(derivedStatus({ start_dt: null, end_dt: null, status: 'draft' }, now), 'planned')
      assert.equal(derivedStatus({ start_dt: null, end_dt: null, status: 'published' }, now), 'ready')
      assert.equal(
        derivedStatus({ start_dt: d('2026-07-01T00:00:00Z'), end_dt: null, status: 'published' }, now),
        'ready'
      )
      assert.equal(
        derivedStatus({ start_dt: d('2026-05-01T00:00:00Z'), end_dt: d('2026-07-01T00:00:00Z'), status: 'draft' }, now),
        'active'
      )
      assert.equal(
        derivedStatus({ start_dt: d('2026-05-01T00:00:00Z'), end_dt: d('2026-05-02T00:00:00Z'), status: 'draft' }, now),
        'completed'
      )
      assert.equal(
        derivedStatus({ start_dt: d('2026-05-01T00:00:00Z'), end_dt: null, status: 'draft' }, now),
        'completed'
      )
    })

    void it('adds, orders, sets and resets the status of, and removes milestones; refuses self, ' +
      'duplicates and cycles', async () => {
      const { tenant, alice, base } = await setup()
      const past = await createEvent(t, alice, {
        title: 'Kick-off',
        start_dt: '2020-01-01T10:00:00Z',
        end_dt: '2020-01-01T12:00:00Z'
      })
      const future = await createEvent(t, alice, { title: 'Launch', start_dt: '2099-01-01T10:00:00Z' })
      await publishEvent(t, alice, future.id)

      const url = `/api/v1/events/${base.id}/milestones`
      const m = (await expectStatus(t, alice, 'POST', url, 201, { milestone_event_id: future.id, sequence: 2 })).json()
      assert.equal(m.$schema, 'http://localhost:8080/schemas/Milestone.json')
      assert.deepEqual(
        [m.base_event_id, m.milestone_event_id, m.sequence, m.series_id, m.status, m.status_mode],
        [base.id, future.id, 2, null, 'ready', 'derived']
      )
      const add2 = await expectStatus(t, alice, 'POST', url, 201, { milestone_event_id: past.id })
      assert.equal(add2.json().status, 'completed')
      assert.equal(add2.json().sequence, 0)

      const list = await milestones(alice, base.id)
      assert.deepEqual(
        list.json().items.map((i: Json) => i.milestone_event_id),
        [past.id, future.id]
      )
      assert.equal(list.json().total, 2)

      await expectStatus(t, alice, 'POST', url, 409, { milestone_event_id: past.id })
      const self = await expectStatus(t, alice, 'POST', url, 400, { milestone_event_id: base.id })
      assert.equal(self.json().errors[0].location, 'body.milestone_event_id')
      // base → future; future → x; then x → base would close a cycle
      const x = await createEvent(t, alice, { title: 'X' })
      await expectStatuses(t, [
        [alice, 'POST', url, 400, { milestone_event_id: 999_999_999 }],
        [alice, 'POST', `/api/v1/events/${future.id}/milestones`, 201, { milestone_event_id: x.id }],
        [alice, 'POST', `/api/v1/events/${x.id}/milestones`, 409, { milestone_event_id: base.id }]
      ])
      assert.equal((await milestones(alice, x.id)).json().total, 0)

      await expectStatus(t, alice, 'PUT', `${url}/${past.id}`, 200, { sequence: 5 })
      assert.deepEqual(
        (await milestones(alice, base.id)).json().items.map((i: Json) => i.milestone_event_id),
        [future.id, past.id]
      )

      const manual = await expectStatus(t, alice, 'PATCH', `${url}/${future.id}`, 200, { status: 'skipped' })
      assert.deepEqual([manual.json().status, manual.json().status_mode], ['skipped', 'manual'])
      assert.equal((await milestones(alice, base.id)).json().items[0].status, 'skipped')
      const reset = await t.as(alice, {
        method: 'PATCH',
        url: `${url}/${future.id}`,
        payload: { reset_to_derived: true }
      })
      assert.deepEqual([reset.json().status, reset.json().status_mode], ['ready', 'derived'])
      const neither = await expectStatus(t, alice, 'PATCH', `${url}/${future.id}`, 400, {})
      assert.equal(neither.json().errors[0].location, 'body.status')
      await expectStatuses(t, [
        [alice, 'PATCH', `${url}/${future.id}`, 400, { status: 'active', reset_to_derived: true }],
        [alice, 'PATCH', `${url}/${future.id}`, 400, { status: 'done' }],
        [alice, 'PATCH', `${url}/${x.id}`, 404, { status: 'active' }],
        [alice, 'DELETE', `${url}/${past.id}`, 204],
        [alice, 'DELETE', `${url}/${past.id}`, 404]
      ])
      assert.equal((await milestones(alice, base.id)).json().total, 1)
      assert.ok((await outboxTopics(t, tenant.id)).includes('milestone.added'))

      // permissions and tenants
      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['links:manage'] })
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await expectStatuses(t, [
        [bob, 'GET', url, 200],
        [bob, 'PUT', `${url}/${future.id}`, 403, { sequence: 1 }],
        [bob, 'DELETE', `${url}/${future.id}`, 403],
        [mallory, 'GET', url, 404],
        [mallory, 'DELETE', `${url}/${future.id}`, 404]
      ])
      assert.equal((await milestones(alice, base.id)).json().total, 1)
    })

    void it('links, lists and unlinks documents', async () => {
      const { tenant, alice, base } = await setup()
      const url = `/api/v1/events/${base.id}/documents`
      const link = await expectStatus(t, alice, 'POST', `${url}/doc-1`, 201)
      assert.equal(link.body, '')
      await expectStatus(t, alice, 'POST', `${url}/doc-1`, 409)
      await t.as(alice, { method: 'POST', url: `${url}/doc-2` })
      const list = await expectStatus(t, alice, 'GET', url, 200)
      assert.ok(Array.isArray(list.json()))
      assert.deepEqual(
        list.json().map((d: Json) => [d.document_id, d.event_id, d.created_by]),
        [
          ['doc-1', base.id, 'alice'],
          ['doc-2', base.id, 'alice']
        ]
      )
      await expectStatuses(t, [
        [alice, 'DELETE', `${url}/doc-1`, 204],
        [alice, 'DELETE', `${url}/doc-1`, 404]
      ])
      assert.deepEqual((await t.as(alice, { method: 'GET', url })).json().map((d: Json) => d.document_id), ['doc-2'])

      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['attachments:manage'] })
      await expectStatuses(t, [
        [bob, 'POST', `${url}/doc-3`, 403],
        [bob, 'DELETE', `${url}/doc-2`, 403],
        [await newTenant(t).user('mallory', ['admin']), 'DELETE', `${url}/doc-2`, 404]
      ])
      assert.equal((await t.as(alice, { method: 'GET', url })).json().length, 1)
    })

    void it('adds attachments of the template\'s kinds, filters by kind, deletes by id', async () => {
      const { tenant, alice, base } = await setup()
      const url = `/api/v1/events/${base.id}/attachments`
      const a = (await expectStatus(t, alice, 'POST', url, 201, {
        kind: 'image',
        ref: 's3://bucket/a.png',
        metadata: { mime: 'image/png', size: 10 }
      })).json()
      assert.deepEqual(
        [a.event_id, a.kind, a.ref, a.metadata, a.created_by, a.series_id],
        [base.id, 'image', 's3://bucket/a.png', { mime: 'image/png', size: 10 }, 'alice', null]
      )
      const bad = await expectStatus(t, alice, 'POST', url, 400, { kind: 'proof_of_delivery', ref: 'x' })
      assert.equal(bad.json().errors[0].location, 'body.kind')
      const delivery = await createEvent(t, alice, { template: 'delivery' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${delivery.id}/attachments`, 201, {
        kind: 'proof_of_delivery',
        ref: 'x'
      })
      const big = await expectStatus(t, alice, 'POST', url, 400, {
        kind: 'image',
        ref: 'x',
        metadata: { blob: 'x'.repeat(9000) }
      })
      assert.equal(big.json().errors[0].location, 'body.metadata')
      await expectStatus(t, alice, 'POST', url, 400, { kind: 'image' })
      const deep = '{"kind":"image","ref":"x","metadata":' + '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_001)
      const nested = await t.as(alice, {
        method: 'POST',
        url,
        payload: deep,
        headers: { 'content-type': 'application/json' }
      })
      assert.equal(nested.statusCode, 400, nested.body.slice(0, 300))
      const lone = await t.as(alice, {
        method: 'POST',
        url,
        payload: '{"kind":"image","ref":"x","metadata":{"k":"\\ud800"}}',
        headers: { 'content-type': 'application/json' }
      })
      assert.equal(lone.statusCode, 400, lone.body)
      assert.equal(lone.json().errors[0].location, 'body.metadata.k')
      await t.as(alice, { method: 'POST', url, payload: { kind: 'document', ref: 'doc-9' } })

      const all = await expectStatus(t, alice, 'GET', url, 200)
      assert.deepEqual(all.json().items.map((i: Json) => i.kind), ['image', 'document'])
      const images = await t.as(alice, { method: 'GET', url: `${url}?kind=image` })
      assert.deepEqual(images.json().items.map((i: Json) => i.id), [a.id])

      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['documents:manage'] })
      await expectStatuses(t, [
        [bob, 'POST', url, 403, { kind: 'image', ref: 'y' }],
        [bob, 'DELETE', `/api/v1/attachments/${a.id}`, 403],
        [await newTenant(t).user('mallory', ['admin']), 'DELETE', `/api/v1/attachments/${a.id}`, 404],
        [alice, 'DELETE', `/api/v1/attachments/${a.id}`, 204],
        [alice, 'DELETE', `/api/v1/attachments/${a.id}`, 404]
      ])
      assert.deepEqual((await t.as(alice, { method: 'GET', url })).json().items.map((i: Json) => i.kind), ['document'])
    })

    void it('links events, lists and removes links, and removes series-level links', async () => {
      const { tenant, alice, base } = await setup()
      const other = await createEvent(t, alice, { title: 'Other' })
      const url = `/api/v1/events/${base.id}/links`
      const add = await expectStatus(t, alice, 'POST', url, 201, { target_id: other.id })
      assert.deepEqual([add.json().event_id, add.json().target_id, add.json().series_id], [base.id, other.id, null])
      await expectStatus(t, alice, 'POST', url, 409, { target_id: other.id })
      const self = await expectStatus(t, alice, 'POST', url, 400, { target_id: base.id })
      assert.equal(self.json().errors[0].location, 'body.target_id')
      // an event alice cannot see (bob's private one) is unknown
      const bob = await tenant.user('bob')
      const hidden = await createEvent(t, bob, { visibility: 10 })
      await expectStatus(t, alice, 'POST', url, 400, { target_id: hidden.id })

      const list = await t.as(alice, { method: 'GET', url })
      assert.ok(Array.isArray(list.json()))
      assert.deepEqual(list.json().map((l: Json) => l.target_id), [other.id])

      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['milestones:manage'] })
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await expectStatuses(t, [
        [bob, 'DELETE', `${url}/${other.id}`, 403],
        [mallory, 'DELETE', `${url}/${other.id}`, 404],
        [alice, 'DELETE', `${url}/${other.id}`, 204],
        [alice, 'DELETE', `${url}/${other.id}`, 404]
      ])
      assert.deepEqual((await t.as(alice, { method: 'GET', url })).json(), [])

      // a series-level link (as the series module stores it) on a series whose occurrence alice created
      const seriesId = await withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        // the series table (migration 0007) when it exists, else a bare id
        const exists = await sql<{ t: string | null }>`select to_regclass('event_series')::text as t`.execute(trx)
        const sid =
          exists.rows[0]?.t !== null && exists.rows[0]?.t !== undefined
            ? Number(
              (
                await sql<{
                  id: number
                }>`insert into event_series (tenant_id, creator_id, title, start_dt, end_dt, freq, duration)
              values (${tenant.id}, 'alice', 'Weekly', now(), now() + interval '1 hour', 'weekly', 'PT1H')
                returning id`.execute(
                    trx
                  )
              ).rows[0]?.id
            )
            : 424_242
        await trx.updateTable('events').set({ series_id: sid, series_index: 0 }).where('id', '=', base.id).execute()
        await trx
          .insertInto('event_links')
          .values({ tenant_id: tenant.id, series_id: sid, target_id: other.id, created_by: 'alice' })
          .execute()
        return sid
      })
      if (seriesId > 0) {
        assert.deepEqual(
          (await t.as(alice, { method: 'GET', url })).json().map((l: Json) => [l.series_id, l.target_id]),
          [[seriesId, other.id]]
        )
        const seriesLink = `/api/v1/series/${seriesId}/links/${other.id}`
        await expectStatuses(t, [
          [mallory, 'DELETE', seriesLink, 404],
          [bob, 'DELETE', seriesLink, 403],
          [alice, 'DELETE', seriesLink, 204],
          [alice, 'DELETE', seriesLink, 404]
        ])
        assert.deepEqual((await t.as(alice, { method: 'GET', url })).json(), [])
      }
      await expectStatus(t, alice, 'DELETE', `/api/v1/series/987654321/links/${other.id}`, 404)
    })
  })
}

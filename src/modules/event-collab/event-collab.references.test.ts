import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { addManager, createEvent, outboxTopics, publishEvent, type Json } from './event-collab.fixtures.ts'
import { derivedStatus } from './event-collab.milestones.repository.ts'

for (const kind of databases()) {
  void describe(`${kind}: milestones, documents, attachments, links`, () => {
    const t = useTestApp(kind)

    async function setup () {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const base = await createEvent(t, alice, { title: 'Project' })
      return { tenant, alice, base }
    }
    const milestones = async (token: string, id: number, q = '') =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/milestones${q}` })

    void it("pages milestones (ties on sequence) and managers by cursor as by page; another event's cursor is refused", async () => {
      const { tenant, alice, base } = await setup()
      const other = await createEvent(t, alice, { title: 'Other' })
      for (let i = 0; i < 7; i++) {
        const m = await createEvent(t, alice, { title: `M${i}` })
        const add = await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${base.id}/milestones`,
          payload: { milestone_event_id: m.id, sequence: i % 3 }
        })
        assert.equal(add.statusCode, 201, add.body)
      }
      for (let i = 0; i < 6; i++) await addManager(t, tenant.id, base.id, `mgr${i}`, { permissions: ['event:edit'] })
      const get = async (url: string) => {
        const res = await t.as(alice, { method: 'GET', url })
        assert.equal(res.statusCode, 200, res.body)
        return res.json()
      }
      for (const [list, key] of [
        ['milestones', 'id'],
        ['managers', 'user_id']
      ] as const) {
        const url = `/api/v1/events/${base.id}/${list}`
        const all = ((await get(`${url}?size=100`)).items as Json[]).map(i => i[key])
        assert.ok(all.length >= 6, list)
        const walked: unknown[] = []
        let cursor: string | null = null
        do {
          const body: Json = await get(`${url}?size=2${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          walked.push(...(body.items as Json[]).map(i => i[key]))
          cursor = body.next_cursor
        } while (cursor !== null)
        assert.deepEqual(walked, all, list)
        const first = await get(`${url}?size=2`)
        const refused = await t.as(alice, {
          method: 'GET',
          url: `/api/v1/events/${other.id}/${list}?size=2&cursor=${encodeURIComponent(first.next_cursor)}`
        })
        assert.equal(refused.statusCode, 400, refused.body)
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

    void it('adds, orders, sets and resets the status of, and removes milestones; refuses self, duplicates and cycles', async () => {
      const { tenant, alice, base } = await setup()
      const past = await createEvent(t, alice, {
        title: 'Kick-off',
        start_dt: '2020-01-01T10:00:00Z',
        end_dt: '2020-01-01T12:00:00Z'
      })
      const future = await createEvent(t, alice, { title: 'Launch', start_dt: '2099-01-01T10:00:00Z' })
      await publishEvent(t, alice, future.id)

      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/milestones`,
        payload: { milestone_event_id: future.id, sequence: 2 }
      })
      assert.equal(add.statusCode, 201, add.body)
      const m = add.json()
      assert.equal(m.$schema, 'http://localhost:8080/schemas/Milestone.json')
      assert.deepEqual(
        [m.base_event_id, m.milestone_event_id, m.sequence, m.series_id, m.status, m.status_mode],
        [base.id, future.id, 2, null, 'ready', 'derived']
      )
      const add2 = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/milestones`,
        payload: { milestone_event_id: past.id }
      })
      assert.equal(add2.statusCode, 201)
      assert.equal(add2.json().status, 'completed')
      assert.equal(add2.json().sequence, 0)

      const list = await milestones(alice, base.id)
      assert.deepEqual(
        list.json().items.map((i: Json) => i.milestone_event_id),
        [past.id, future.id]
      )
      assert.equal(list.json().total, 2)

      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${base.id}/milestones`,
            payload: { milestone_event_id: past.id }
          })
        ).statusCode,
        409
      )
      const self = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/milestones`,
        payload: { milestone_event_id: base.id }
      })
      assert.equal(self.statusCode, 400)
      assert.equal(self.json().errors[0].location, 'body.milestone_event_id')
      const unknown = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/milestones`,
        payload: { milestone_event_id: 999_999_999 }
      })
      assert.equal(unknown.statusCode, 400)
      // base → future; future → x; then x → base would close a cycle
      const x = await createEvent(t, alice, { title: 'X' })
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${future.id}/milestones`,
            payload: { milestone_event_id: x.id }
          })
        ).statusCode,
        201
      )
      const cycle = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${x.id}/milestones`,
        payload: { milestone_event_id: base.id }
      })
      assert.equal(cycle.statusCode, 409, cycle.body)
      assert.equal((await milestones(alice, x.id)).json().total, 0)

      const seq = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/events/${base.id}/milestones/${past.id}`,
        payload: { sequence: 5 }
      })
      assert.equal(seq.statusCode, 200, seq.body)
      assert.deepEqual(
        (await milestones(alice, base.id)).json().items.map((i: Json) => i.milestone_event_id),
        [future.id, past.id]
      )

      const manual = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${base.id}/milestones/${future.id}`,
        payload: { status: 'skipped' }
      })
      assert.equal(manual.statusCode, 200, manual.body)
      assert.deepEqual([manual.json().status, manual.json().status_mode], ['skipped', 'manual'])
      assert.equal((await milestones(alice, base.id)).json().items[0].status, 'skipped')
      const reset = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${base.id}/milestones/${future.id}`,
        payload: { reset_to_derived: true }
      })
      assert.deepEqual([reset.json().status, reset.json().status_mode], ['ready', 'derived'])
      const neither = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${base.id}/milestones/${future.id}`,
        payload: {}
      })
      assert.equal(neither.statusCode, 400)
      assert.equal(neither.json().errors[0].location, 'body.status')
      const both = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${base.id}/milestones/${future.id}`,
        payload: { status: 'active', reset_to_derived: true }
      })
      assert.equal(both.statusCode, 400)
      const badStatus = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${base.id}/milestones/${future.id}`,
        payload: { status: 'done' }
      })
      assert.equal(badStatus.statusCode, 400)
      assert.equal(
        (
          await t.as(alice, {
            method: 'PATCH',
            url: `/api/v1/events/${base.id}/milestones/${x.id}`,
            payload: { status: 'active' }
          })
        ).statusCode,
        404
      )

      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/milestones/${past.id}` })).statusCode,
        204
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/milestones/${past.id}` })).statusCode,
        404
      )
      assert.equal((await milestones(alice, base.id)).json().total, 1)
      assert.ok((await outboxTopics(t, tenant.id)).includes('milestone.added'))

      // permissions and tenants
      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['links:manage'] })
      assert.equal((await milestones(bob, base.id)).statusCode, 200)
      assert.equal(
        (
          await t.as(bob, {
            method: 'PUT',
            url: `/api/v1/events/${base.id}/milestones/${future.id}`,
            payload: { sequence: 1 }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/events/${base.id}/milestones/${future.id}` })).statusCode,
        403
      )
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal((await milestones(mallory, base.id)).statusCode, 404)
      assert.equal(
        (await t.as(mallory, { method: 'DELETE', url: `/api/v1/events/${base.id}/milestones/${future.id}` }))
          .statusCode,
        404
      )
      assert.equal((await milestones(alice, base.id)).json().total, 1)
    })

    void it('links, lists and unlinks documents', async () => {
      const { tenant, alice, base } = await setup()
      const link = await t.as(alice, { method: 'POST', url: `/api/v1/events/${base.id}/documents/doc-1` })
      assert.equal(link.statusCode, 201, link.body)
      assert.equal(link.body, '')
      assert.equal(
        (await t.as(alice, { method: 'POST', url: `/api/v1/events/${base.id}/documents/doc-1` })).statusCode,
        409
      )
      await t.as(alice, { method: 'POST', url: `/api/v1/events/${base.id}/documents/doc-2` })
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/documents` })
      assert.equal(list.statusCode, 200)
      assert.ok(Array.isArray(list.json()))
      assert.deepEqual(
        list.json().map((d: Json) => [d.document_id, d.event_id, d.created_by]),
        [
          ['doc-1', base.id, 'alice'],
          ['doc-2', base.id, 'alice']
        ]
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/documents/doc-1` })).statusCode,
        204
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/documents/doc-1` })).statusCode,
        404
      )
      assert.deepEqual(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/documents` }))
          .json()
          .map((d: Json) => d.document_id),
        ['doc-2']
      )

      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['attachments:manage'] })
      assert.equal(
        (await t.as(bob, { method: 'POST', url: `/api/v1/events/${base.id}/documents/doc-3` })).statusCode,
        403
      )
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/events/${base.id}/documents/doc-2` })).statusCode,
        403
      )
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal(
        (await t.as(mallory, { method: 'DELETE', url: `/api/v1/events/${base.id}/documents/doc-2` })).statusCode,
        404
      )
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/documents` })).json().length, 1)
    })

    void it('adds attachments of the template\'s kinds, filters by kind, deletes by id', async () => {
      const { tenant, alice, base } = await setup()
      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: { kind: 'image', ref: 's3://bucket/a.png', metadata: { mime: 'image/png', size: 10 } }
      })
      assert.equal(add.statusCode, 201, add.body)
      const a = add.json()
      assert.deepEqual(
        [a.event_id, a.kind, a.ref, a.metadata, a.created_by, a.series_id],
        [base.id, 'image', 's3://bucket/a.png', { mime: 'image/png', size: 10 }, 'alice', null]
      )
      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: { kind: 'proof_of_delivery', ref: 'x' }
      })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.kind')
      const delivery = await createEvent(t, alice, { template: 'delivery' })
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${delivery.id}/attachments`,
            payload: { kind: 'proof_of_delivery', ref: 'x' }
          })
        ).statusCode,
        201
      )
      const big = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: { kind: 'image', ref: 'x', metadata: { blob: 'x'.repeat(9000) } }
      })
      assert.equal(big.statusCode, 400)
      assert.equal(big.json().errors[0].location, 'body.metadata')
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${base.id}/attachments`,
            payload: { kind: 'image' }
          })
        ).statusCode,
        400
      )
      const deep = '{"kind":"image","ref":"x","metadata":' + '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_001)
      const nested = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: deep,
        headers: { 'content-type': 'application/json' }
      })
      assert.equal(nested.statusCode, 400, nested.body.slice(0, 300))
      const lone = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: '{"kind":"image","ref":"x","metadata":{"k":"\\ud800"}}',
        headers: { 'content-type': 'application/json' }
      })
      assert.equal(lone.statusCode, 400, lone.body)
      assert.equal(lone.json().errors[0].location, 'body.metadata.k')
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/attachments`,
        payload: { kind: 'document', ref: 'doc-9' }
      })

      const all = await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/attachments` })
      assert.equal(all.statusCode, 200)
      assert.deepEqual(all.json().items.map((i: Json) => i.kind), ['image', 'document'])
      const images = await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/attachments?kind=image` })
      assert.deepEqual(images.json().items.map((i: Json) => i.id), [a.id])

      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['documents:manage'] })
      assert.equal(
        (
          await t.as(bob, {
            method: 'POST',
            url: `/api/v1/events/${base.id}/attachments`,
            payload: { kind: 'image', ref: 'y' }
          })
        ).statusCode,
        403
      )
      assert.equal((await t.as(bob, { method: 'DELETE', url: `/api/v1/attachments/${a.id}` })).statusCode, 403)
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal((await t.as(mallory, { method: 'DELETE', url: `/api/v1/attachments/${a.id}` })).statusCode, 404)
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/attachments/${a.id}` })).statusCode, 204)
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/attachments/${a.id}` })).statusCode, 404)
      assert.deepEqual(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/attachments` }))
          .json()
          .items.map((i: Json) => i.kind),
        ['document']
      )
    })

    void it('links events, lists and removes links, and removes series-level links', async () => {
      const { tenant, alice, base } = await setup()
      const other = await createEvent(t, alice, { title: 'Other' })
      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/links`,
        payload: { target_id: other.id }
      })
      assert.equal(add.statusCode, 201, add.body)
      assert.deepEqual([add.json().event_id, add.json().target_id, add.json().series_id], [base.id, other.id, null])
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${base.id}/links`,
            payload: { target_id: other.id }
          })
        ).statusCode,
        409
      )
      const self = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${base.id}/links`,
        payload: { target_id: base.id }
      })
      assert.equal(self.statusCode, 400)
      assert.equal(self.json().errors[0].location, 'body.target_id')
      // an event alice cannot see (bob's private one) is unknown
      const bob = await tenant.user('bob')
      const hidden = await createEvent(t, bob, { visibility: 10 })
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/events/${base.id}/links`,
            payload: { target_id: hidden.id }
          })
        ).statusCode,
        400
      )

      const list = await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/links` })
      assert.ok(Array.isArray(list.json()))
      assert.deepEqual(list.json().map((l: Json) => l.target_id), [other.id])

      await addManager(t, tenant.id, base.id, 'bob', { permissions: ['milestones:manage'] })
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/events/${base.id}/links/${other.id}` })).statusCode,
        403
      )
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal(
        (await t.as(mallory, { method: 'DELETE', url: `/api/v1/events/${base.id}/links/${other.id}` })).statusCode,
        404
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/links/${other.id}` })).statusCode,
        204
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${base.id}/links/${other.id}` })).statusCode,
        404
      )
      assert.deepEqual((await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/links` })).json(), [])

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
              values (${tenant.id}, 'alice', 'Weekly', now(), now() + interval '1 hour', 'weekly', 'PT1H') returning id`.execute(
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
          (await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/links` }))
            .json()
            .map((l: Json) => [l.series_id, l.target_id]),
          [[seriesId, other.id]]
        )
        assert.equal(
          (await t.as(mallory, { method: 'DELETE', url: `/api/v1/series/${seriesId}/links/${other.id}` })).statusCode,
          404
        )
        assert.equal(
          (await t.as(bob, { method: 'DELETE', url: `/api/v1/series/${seriesId}/links/${other.id}` })).statusCode,
          403
        )
        assert.equal(
          (await t.as(alice, { method: 'DELETE', url: `/api/v1/series/${seriesId}/links/${other.id}` })).statusCode,
          204
        )
        assert.equal(
          (await t.as(alice, { method: 'DELETE', url: `/api/v1/series/${seriesId}/links/${other.id}` })).statusCode,
          404
        )
        assert.deepEqual((await t.as(alice, { method: 'GET', url: `/api/v1/events/${base.id}/links` })).json(), [])
      }
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/series/987654321/links/${other.id}` })).statusCode,
        404
      )
    })
  })
}

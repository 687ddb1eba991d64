/**
 * The contract of the events lists' fast path (events.bodies.repository.ts): bodies are rendered only in
 * transactions that have written nothing, and a cached body is the same for every caller who may see the event.
 * (That each body equals GET /events/{id} is events.list.test.ts's calendar test.)
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { createEvent, publishEvent } from './events.fixtures.ts'
import { newEventBodyCache, renderEvents } from './events.bodies.repository.ts'

type Json = Record<string, unknown>

for (const kind of databases()) {
  void describe(`${kind}: event bodies of the lists`, () => {
    const t = useTestApp(kind)

    void it('refuses to render bodies in a transaction that has written, and caches nothing from it', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const event = await createEvent(t, alice, { title: 'Before', start_dt: '2032-05-04T10:00:00Z' })
      const id = event.id as number
      const cache = newEventBodyCache()
      const versionOf = async (trx: Tx) =>
        (await sql<{ version: string }>`select xmin::text as version from events
          where tenant_id = ${tenant.id} and id = ${id}`.execute(trx)).rows[0]?.version ?? ''

      // the request's own write, then a render under the version it wrote: refused, the write rolled back
      await assert.rejects(
        withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
          await sql`update events set title = 'Written' where tenant_id = ${tenant.id} and id = ${id}`.execute(trx)
          const version = await versionOf(trx)
          return await renderEvents(trx, cache, tenant.id, [{ id, version, published_id: null, series_id: null }])
        }),
        /transaction that has written/
      )
      assert.equal(cache.size, 0)
      const read = await t.as(alice, { method: 'GET', url: `/api/v1/events/${id}` })
      assert.equal(read.json().title, 'Before')

      // a transaction that only reads renders and keeps the body under the row's version
      const chunks = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        const version = await versionOf(trx)
        return await renderEvents(trx, cache, tenant.id, [{ id, version, published_id: null, series_id: null }])
      })
      assert.equal(cache.size, 1)
      const body = JSON.parse(chunks.map(c => c.toString()).join('')) as Json[]
      assert.equal(body[0]?.title, 'Before')
    })

    void it('answers each listed event with the same body to callers of different rights', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('ada', ['admin'], { orgId: 'org-1' })
      const creator = await tenant.user('carl', ['member'], { orgId: 'org-1' })
      const other = await tenant.user('olga', ['member'], { orgId: 'org-2' })
      const event = await createEvent(t, creator, {
        title: 'Open day',
        start_dt: '2032-06-10T09:00:00Z',
        end_dt: '2032-06-10T12:00:00Z',
        visibility: 40
      })
      await publishEvent(t, creator, event.id as number)
      const seen: Json[] = []
      // the creator renders first (the body is cached), the others are served from the cache, then the list
      for (const token of [creator, admin, other]) {
        for (const url of ['/api/v1/events/calendar?start_date=2032-06-01&end_date=2032-06-30', '/api/v1/events']) {
          const res = await t.as(token, { method: 'GET', url })
          assert.equal(res.statusCode, 200, res.body)
          const item = (res.json().items as Json[]).find(i => i.id === event.id)
          assert.ok(item !== undefined, `${url} lists the public event`)
          seen.push(item)
        }
      }
      for (const item of seen) assert.deepEqual(item, seen[0])
    })
  })
}

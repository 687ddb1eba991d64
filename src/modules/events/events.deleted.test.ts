/**
 * A soft-deleted event answers every write as it answers reads: 404, on the event itself and on
 * each of its sub-resources (attendees, managers, milestones, documents, attachments, links, cover,
 * spaces, series scopes), and nothing changes (issue #17).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createContact } from '../attendees/attendees.fixtures.ts'
import { multipartBody, PNG } from '../event-content/event-content.cover.fixtures.ts'
import { dailyStandup, withSeries } from '../series/series.fixtures.ts'
import { createEvent, insertSpace, type Json } from './events.fixtures.ts'

/** Everything stored about the tenant's events and their sub-resources, to compare before and after. */
async function snapshot (t: TestApp, tenantId: string): Promise<Json> {
  return await withTenant(t.ctx.db, { tenantId }, async trx => ({
    events: await trx.selectFrom('events').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute(),
    series: await trx.selectFrom('event_series').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute(),
    attendees: await trx.selectFrom('attendees').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute(),
    managers: await trx
      .selectFrom('event_managers')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute(),
    milestones: await trx
      .selectFrom('event_milestones')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute(),
    documents: await trx
      .selectFrom('event_documents')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute(),
    attachments: await trx
      .selectFrom('event_attachments')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute(),
    links: await trx.selectFrom('event_links').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute(),
    spaces: await trx.selectFrom('event_spaces').selectAll().where('tenant_id', '=', tenantId).execute(),
    outbox: await trx.selectFrom('outbox').select('topic').where('tenant_id', '=', tenantId).orderBy('id').execute(),
    notifications: await trx.selectFrom('notification_outbox').select('id').where('tenant_id', '=', tenantId).execute()
  }))
}

async function ok (t: TestApp, token: string, opts: InjectOptions, status: number): Promise<Json> {
  const res = await t.as(token, opts)
  assert.equal(res.statusCode, status, `${opts.method ?? ''} ${opts.url as string}: ${res.body}`)
  return res.body === '' ? {} : res.json()
}

for (const kind of databases()) {
  void describe(`${kind}: writes to a deleted event`, () => {
    const t = useTestApp(kind)

    void it('answer 404 on the event and every sub-resource, and change nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['admin'])
      const contact = await createContact(t, alice)
      const other = await createContact(t, alice, { first_name: 'Bob' })
      const event = await createEvent(t, alice)
      const target = await createEvent(t, alice, { title: 'Target' })
      const id = event.id as number
      const spaceId = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      // sub-resources that exist before the delete
      await ok(
        t,
        alice,
        { method: 'POST', url: `/api/v1/events/${id}/attendees`, payload: { contact_id: contact } },
        201
      )
      await ok(
        t,
        alice,
        {
          method: 'POST',
          url: `/api/v1/events/${id}/managers`,
          payload: { user_id: 'mia', role: 'event_manager:editor' }
        },
        201
      )
      await ok(
        t,
        alice,
        { method: 'POST', url: `/api/v1/events/${id}/milestones`, payload: { milestone_event_id: target.id } },
        201
      )
      await ok(t, alice, { method: 'POST', url: `/api/v1/events/${id}/documents/doc-1` }, 201)
      const attachment = await ok(
        t,
        alice,
        { method: 'POST', url: `/api/v1/events/${id}/attachments`, payload: { kind: 'image', ref: 's3://b/a.png' } },
        201
      )
      await ok(t, alice, { method: 'POST', url: `/api/v1/events/${id}/links`, payload: { target_id: target.id } }, 201)
      await ok(t, alice, { method: 'POST', url: `/api/v1/events/${id}/spaces`, payload: { space_id: spaceId } }, 201)

      await ok(t, alice, { method: 'DELETE', url: `/api/v1/events/${id}` }, 204)
      const before = await snapshot(t, tenant.id)

      const cover = multipartBody([{ name: 'file', filename: 'c.png', type: 'image/png', data: PNG }])
      const writes: InjectOptions[] = [
        { method: 'PUT', url: `/api/v1/events/${id}`, payload: { title: 'x' } },
        { method: 'PATCH', url: `/api/v1/events/${id}`, payload: { title: 'x' } },
        { method: 'PATCH', url: `/api/v1/events/${id}?scope=all`, payload: { title: 'x' } },
        { method: 'DELETE', url: `/api/v1/events/${id}` },
        { method: 'POST', url: `/api/v1/events/${id}/archive` },
        { method: 'POST', url: `/api/v1/events/${id}/publish` },
        { method: 'POST', url: `/api/v1/events/${id}/edit` },
        { method: 'POST', url: `/api/v1/events/${id}/discard` },
        { method: 'POST', url: `/api/v1/events/${id}/transition`, payload: { to_state: 'in_progress' } },
        { method: 'POST', url: `/api/v1/events/${id}/activity`, payload: { kind: 'note' } },
        { method: 'POST', url: `/api/v1/events/${id}/spaces`, payload: { space_id: spaceId } },
        { method: 'DELETE', url: `/api/v1/events/${id}/spaces/${spaceId}` },
        { method: 'POST', url: `/api/v1/events/${id}/attendees`, payload: { contact_id: other } },
        { method: 'POST', url: `/api/v1/events/${id}/attendees/bulk`, payload: { contact_ids: [other] } },
        { method: 'DELETE', url: `/api/v1/events/${id}/attendees/bulk`, payload: { contact_ids: [contact] } },
        {
          method: 'PATCH',
          url: `/api/v1/events/${id}/attendees/bulk/status`,
          payload: { contact_ids: [contact], status: 'confirmed' }
        },
        { method: 'PATCH', url: `/api/v1/events/${id}/attendees/${contact}`, payload: { status: 'confirmed' } },
        { method: 'DELETE', url: `/api/v1/events/${id}/attendees/${contact}` },
        { method: 'POST', url: `/api/v1/events/${id}/attendees/${contact}/check-in`, payload: {} },
        {
          method: 'POST',
          url: `/api/v1/events/${id}/managers`,
          payload: { user_id: 'max', permissions: ['event:edit'] }
        },
        {
          method: 'POST',
          url: `/api/v1/events/${id}/managers/invite`,
          payload: { email: 'new@example.test', permissions: ['event:edit'] }
        },
        { method: 'PUT', url: `/api/v1/events/${id}/managers/mia`, payload: { permissions: ['event:edit'] } },
        { method: 'DELETE', url: `/api/v1/events/${id}/managers/mia` },
        {
          method: 'POST',
          url: `/api/v1/events/${id}/milestones`,
          payload: { milestone_event_id: target.id, sequence: 2 }
        },
        { method: 'PUT', url: `/api/v1/events/${id}/milestones/${target.id as number}`, payload: { sequence: 3 } },
        {
          method: 'PATCH',
          url: `/api/v1/events/${id}/milestones/${target.id as number}`,
          payload: { status: 'ready' }
        },
        { method: 'DELETE', url: `/api/v1/events/${id}/milestones/${target.id as number}` },
        { method: 'POST', url: `/api/v1/events/${id}/documents/doc-2` },
        { method: 'DELETE', url: `/api/v1/events/${id}/documents/doc-1` },
        { method: 'POST', url: `/api/v1/events/${id}/attachments`, payload: { kind: 'image', ref: 's3://b/b.png' } },
        { method: 'DELETE', url: `/api/v1/attachments/${attachment.id as number}` },
        { method: 'POST', url: `/api/v1/events/${id}/links`, payload: { target_id: target.id } },
        { method: 'DELETE', url: `/api/v1/events/${id}/links/${target.id as number}` },
        { method: 'PUT', url: `/api/v1/events/${id}/cover`, payload: cover.payload, headers: cover.headers },
        {
          method: 'POST',
          url: `/api/v1/events/${id}/series`,
          payload: { freq: 'daily', ends_on: 'after_n', end_count: 3 }
        }
      ]
      for (const w of writes) {
        const res = await t.as(alice, w)
        assert.equal(res.statusCode, 404, `${w.method ?? ''} ${w.url as string}: ${res.body}`)
        assert.equal(res.json().detail, 'event not found', `${w.method ?? ''} ${w.url as string}`)
      }
      assert.deepEqual(await snapshot(t, tenant.id), before)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${id}` })).statusCode, 404)
      // the other event is untouched and still writable
      await ok(
        t,
        alice,
        { method: 'PATCH', url: `/api/v1/events/${target.id as number}`, payload: { title: 'Still here' } },
        200
      )
    })

    void it('answer 404 on a deleted occurrence of a series, for every scope', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const created = await withSeries(t, alice, dailyStandup(4))
      const occurrences = created.occurrences as Json[]
      const second = occurrences[1]?.id as number
      await ok(t, alice, { method: 'DELETE', url: `/api/v1/events/${second}/series?scope=this` }, 204)
      const before = await snapshot(t, tenant.id)
      for (const w of [
        { method: 'PATCH', url: `/api/v1/events/${second}?scope=this`, payload: { title: 'x' } },
        { method: 'PATCH', url: `/api/v1/events/${second}?scope=future`, payload: { title: 'x' } },
        { method: 'PATCH', url: `/api/v1/events/${second}?scope=all`, payload: { title: 'x' } },
        { method: 'PATCH', url: `/api/v1/events/${second}/series`, payload: { title: 'x' } },
        { method: 'DELETE', url: `/api/v1/events/${second}/series?scope=all` },
        { method: 'POST', url: `/api/v1/events/${second}/series/publish` },
        { method: 'POST', url: `/api/v1/events/${second}/series/manager`, payload: { email: 'sam@example.test' } }
      ] satisfies InjectOptions[]) {
        const res = await t.as(alice, w)
        assert.equal(res.statusCode, 404, `${w.method} ${w.url}: ${res.body}`)
      }
      assert.deepEqual(await snapshot(t, tenant.id), before)
      // the series itself is alive: its other occurrences still take writes
      await ok(
        t,
        alice,
        {
          method: 'PATCH',
          url: `/api/v1/events/${occurrences[0]?.id as number}?scope=all`,
          payload: { title: 'Daily' }
        },
        200
      )
    })
  })
}

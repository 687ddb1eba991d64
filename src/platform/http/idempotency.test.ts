/**
 * Idempotency-Key claimed in the write's transaction (issue #17), on the routes that opt in
 * (attendee add, bulk add, check-in; manager add, invite, accept): the claim, the effect and an
 * answer commit together, a failed write leaves no claim (a retry runs again), and concurrent
 * duplicates apply once.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxTopics } from '../../../test/helpers/outbox.ts'
import { withTenant } from '../db/tenant.ts'
import { createContact, type Json } from '../../modules/attendees/attendees.fixtures.ts'
import { aliceWithEvent } from '../../modules/events/events.fixtures.ts'

async function stored (t: TestApp, tenantId: string, key: string) {
  return await withTenant(t.ctx.db, { tenantId }, trx =>
    trx
      .selectFrom('idempotency_keys')
      .select(['status_code', 'response_headers', 'response_body'])
      .where('tenant_id', '=', tenantId)
      .where('key', '=', key)
      .executeTakeFirst()
  )
}

async function topics (t: TestApp, tenantId: string, topic: string): Promise<number> {
  return (await outboxTopics(t, tenantId)).filter(x => x === topic).length
}

async function attendees (t: TestApp, token: string, eventId: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/attendees` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().items as Json[]).map(i => i.contact_id as string).sort()
}

for (const kind of databases()) {
  void describe(`${kind}: Idempotency-Key claimed in the write's transaction`, () => {
    const t = useTestApp(kind)

    void it('a write that fails leaves no claim: a retry with the same key runs again', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const id = event.id as number
      const contact = await createContact(t, alice)
      const add = (key: string) =>
        t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${id}/attendees`,
          headers: { 'idempotency-key': key },
          payload: { contact_id: contact }
        })
      assert.equal(
        (await t.as(alice, { method: 'POST', url: `/api/v1/events/${id}/attendees`, payload: { contact_id: contact } }))
          .statusCode,
        201
      )

      // 409 (already attending), thrown inside the transaction after the claim: nothing kept
      const key = `k-${crypto.randomUUID()}`
      const dup = await add(key)
      assert.equal(dup.statusCode, 409, dup.body)
      assert.equal(await stored(t, tenant.id, key), undefined)
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${id}/attendees/${contact}` })).statusCode,
        204
      )
      assert.deepEqual(await attendees(t, alice, id), [])

      // the same request with the same key now runs (it is not a replay of the 409)
      const retry = await add(key)
      assert.equal(retry.statusCode, 201, retry.body)
      assert.equal(retry.headers['idempotent-replayed'], undefined)
      assert.deepEqual(await attendees(t, alice, id), [contact])
      const row = await stored(t, tenant.id, key)
      assert.equal(row?.status_code, 201)

      // and from now on it replays, the write applied once
      const again = await add(key)
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), retry.json())
      assert.equal(again.headers.etag, retry.headers.etag)
      assert.equal(await topics(t, tenant.id, 'attendee.added'), 2)

      // an error thrown later in the transaction (bulk add: an unknown contact) keeps nothing either
      const bulkKey = `k-${crypto.randomUUID()}`
      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${id}/attendees/bulk`,
        headers: { 'idempotency-key': bulkKey },
        payload: { contact_ids: [crypto.randomUUID()] }
      })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(await stored(t, tenant.id, bulkKey), undefined)
      // a manager write refused after its claim (409: the creator) keeps nothing
      const mgrKey = `k-${crypto.randomUUID()}`
      const self = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${id}/managers`,
        headers: { 'idempotency-key': mgrKey },
        payload: { user_id: 'alice', permissions: ['event:edit'] }
      })
      assert.equal(self.statusCode, 409, self.body)
      assert.equal(await stored(t, tenant.id, mgrKey), undefined)
    })

    void it('the answer is stored with the write: a repeat is answered even without the exact answer', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const key = `k-${crypto.randomUUID()}`
      const req = {
        method: 'POST' as const,
        url: `/api/v1/events/${event.id as number}/managers`,
        headers: { 'idempotency-key': key },
        payload: { user_id: 'mia', role: 'event_manager:editor' }
      }
      const first = await t.as(alice, req)
      assert.equal(first.statusCode, 201, first.body)
      // as if the process had died after the commit, before the exact answer was written over the
      // result stored in the transaction: keep the result only
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        await trx
          .updateTable('idempotency_keys')
          .set({ response_headers: null, response_body: JSON.stringify({ ...first.json(), $schema: undefined }) })
          .where('tenant_id', '=', tenant.id)
          .where('key', '=', key)
          .execute()
      })
      const repeat = await t.as(alice, req)
      assert.equal(repeat.statusCode, 201, repeat.body)
      assert.equal(repeat.headers['idempotent-replayed'], 'true')
      assert.deepEqual(repeat.json(), first.json())
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id as number}/managers` })
      assert.equal(list.json().total, 1)
      // another body under the key: 409, as before
      const other = await t.as(alice, { ...req, payload: { user_id: 'max', role: 'event_manager:editor' } })
      assert.equal(other.statusCode, 409, other.body)
      assert.equal(other.json().errors[0].location, 'header.idempotency-key')
    })

    void it('concurrent duplicates apply once: one runs, the others replay its answer (or 409)', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const id = event.id as number
      const contacts = await Promise.all([1, 2, 3].map(async () => await createContact(t, alice)))
      const key = `k-${crypto.randomUUID()}`
      const answers = await Promise.all(
        [1, 2, 3, 4].map(
          async () =>
            await t.as(alice, {
              method: 'POST',
              url: `/api/v1/events/${id}/attendees/bulk`,
              headers: { 'idempotency-key': key },
              payload: { contact_ids: contacts }
            })
        )
      )
      const statuses = answers.map(a => a.statusCode)
      assert.ok(statuses.every(s => s === 204 || s === 409), statuses.join(','))
      assert.equal(
        answers.filter(a => a.statusCode === 204 && a.headers['idempotent-replayed'] === undefined).length,
        1,
        statuses.join(',')
      )
      assert.deepEqual(await attendees(t, alice, id), [...contacts].sort())
      assert.equal(await topics(t, tenant.id, 'attendee.added'), 3)
      assert.equal((await stored(t, tenant.id, key))?.status_code, 204)
    })
  })
}

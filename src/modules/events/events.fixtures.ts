/**
 * Test fixtures of the events tests: events through the API, and (through SQL) the states the
 * events API cannot build by itself: spaces and their members, event managers.
 */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'

export type Json = Record<string, any>

export async function createEvent (t: TestApp, token: string, body: Json = {}): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/events', payload: { title: 'Launch party', ...body } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

export async function publishEvent (t: TestApp, token: string, id: number, body?: Json): Promise<void> {
  const res = await t.as(token, {
    method: 'POST',
    url: `/api/v1/events/${id}/publish`,
    ...(body !== undefined ? { payload: body } : {})
  })
  assert.equal(res.statusCode, 204, res.body)
}

export const getEvent = async (t: TestApp, token: string, id: number) =>
  await t.as(token, { method: 'GET', url: `/api/v1/events/${id}` })

export async function insertSpace (
  t: TestApp,
  tenantId: string,
  values: { title?: string; creator_id?: string; is_deleted?: boolean } = {}
): Promise<number> {
  return await withTenant(t.ctx.db, { tenantId }, async trx => {
    const row = await trx
      .insertInto('spaces')
      .values({
        tenant_id: tenantId,
        creator_id: values.creator_id ?? 'owner',
        title: values.title ?? 'Space',
        ...(values.is_deleted !== undefined ? { is_deleted: values.is_deleted } : {})
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  })
}

export async function addMember (t: TestApp, tenantId: string, spaceId: number, userId: string): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async (trx) => {
    await trx.insertInto('space_members').values({ tenant_id: tenantId, space_id: spaceId, user_id: userId }).execute()
  })
}

export async function addManager (
  t: TestApp,
  tenantId: string,
  eventId: number,
  userId: string,
  grant: { permissions?: string[]; role?: string; status?: 'pending' | 'active' | 'revoked' }
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx
      .insertInto('event_managers')
      .values({
        tenant_id: tenantId,
        event_id: eventId,
        user_id: userId,
        permissions: grant.permissions ?? [],
        role: grant.role ?? null,
        status: grant.status ?? 'active'
      })
      .execute()
  })
}

export async function outboxTopics (t: TestApp, tenantId: string): Promise<string[]> {
  const rows = await withTenant(t.ctx.db, { tenantId }, async (trx) =>
    await trx.selectFrom('outbox').select('topic').where('tenant_id', '=', tenantId).orderBy('id').execute())
  return rows.map(r => r.topic)
}

export async function activityKinds (t: TestApp, token: string, id: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/activity` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().items as Json[]).map(i => i.kind)
}

/** Test fixtures of the collaboration tests (events, contacts and managers through the API or SQL). */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'

export { addManager, createEvent, getEvent, outboxTopics, publishEvent, type Json } from '../events/events.fixtures.ts'

export async function createContact (t: TestApp, token: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await t.as(token, {
    method: 'POST',
    url: '/api/v1/contacts',
    payload: { is_favorite: false, first_name: 'Ann', ...body }
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

/** n contacts owned by a user, inserted through SQL (bulk tests need hundreds). */
export async function insertContacts (
  t: TestApp,
  tenantId: string,
  ownerId: string,
  n: number,
  orgId: string | null = null
): Promise<string[]> {
  return await withTenant(t.ctx.db, { tenantId }, async trx => {
    const rows = await trx
      .insertInto('contacts')
      .values(
        Array.from({ length: n }, (_, i) => ({
          tenant_id: tenantId,
          owner_id: ownerId,
          org_id: orgId,
          first_name: `C${i}`
        }))
      )
      .returning('id')
      .execute()
    return rows.map(r => r.id)
  })
}

export async function topicsWithPayload (
  t: TestApp,
  tenantId: string,
  prefix: string
): Promise<Array<{ topic: string; payload: Record<string, unknown> }>> {
  return await withTenant(
    t.ctx.db,
    { tenantId },
    async trx =>
      await trx
        .selectFrom('outbox')
        .select(['topic', 'payload'])
        .where('tenant_id', '=', tenantId)
        .where('topic', 'like', `${prefix}%`)
        .orderBy('id')
        .execute()
  )
}

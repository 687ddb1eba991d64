/** Test fixtures of the collaboration tests (events, contacts and managers through the API or SQL). */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { insertRow, insertRowId } from '../../../test/helpers/rows.ts'
import { hashInviteToken } from '../../platform/invite-tokens.ts'
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

/** Creates a contact named by its e-mail address as `token`; its id. */
export async function addContact (t: TestApp, token: string, email: string): Promise<string> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: email, email } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

/** Puts a contact on an event, or on every occurrence of a series, with a status, through SQL (no domain event). */
export async function insertAttendee (
  t: TestApp,
  tenantId: string,
  row: {
    event_id?: number
    series_id?: number
    contact_id: string
    status: 'invited' | 'confirmed' | 'declined' | 'tentative' | 'checked_in'
  }
): Promise<void> {
  await insertRow(t, tenantId, 'attendees', {
    event_id: row.event_id ?? null,
    series_id: row.series_id ?? null,
    contact_id: row.contact_id,
    status: row.status
  })
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

/**
 * A pending series-level invitation to manage, as the series module writes it (a row with series_id),
 * sent by alice and valid for a day; accepted with `token`. Its id.
 */
export async function insertSeriesInvite (
  t: TestApp,
  tenantId: string,
  invite: { series_id: number; event_id?: number; invited_email: string; permissions?: string[]; role?: string },
  token: string
): Promise<number> {
  return await insertRowId(t, tenantId, 'event_managers', {
    ...invite,
    status: 'pending',
    invited_by: 'alice',
    invited_at: new Date(),
    invite_token_hash: hashInviteToken(token),
    expires_at: new Date(Date.now() + 86_400_000)
  })
}

/**
 * Test fixtures of the events tests: events through the API, and (through SQL) the states the
 * events API cannot build by itself: spaces and their members, event managers.
 */
import assert from 'node:assert/strict'
import { newTenant, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { insertRow, insertRowId } from '../../../test/helpers/rows.ts'
import { EVENT_DETAIL_FIELDS } from './events.bodies.repository.ts'

export { outboxTopics } from '../../../test/helpers/outbox.ts'

export type Json = Record<string, any>

export async function createEvent (t: TestApp, token: string, body: Json = {}): Promise<Json> {
  return (await expectStatus(t, token, 'POST', '/api/v1/events', 201, { title: 'Launch party', ...body })).json()
}

export async function publishEvent (t: TestApp, token: string, id: number, body?: Json): Promise<void> {
  await expectStatus(t, token, 'POST', `/api/v1/events/${id}/publish`, 204, body)
}

/** A fresh tenant, its member alice, and an event of hers (created with `body`). */
export async function aliceWithEvent (t: TestApp, body: Json = {}) {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice')
  const event = await createEvent(t, alice, body)
  return { tenant, alice, event }
}

/** An Event body of GET /events/{id} without the fields only that route shows (registration: EVENT_DETAIL_FIELDS). */
export function withoutDetail (event: Json): Json {
  const detail: readonly string[] = EVENT_DETAIL_FIELDS
  return Object.fromEntries(Object.entries(event).filter(([k]) => !detail.includes(k)))
}

export const getEvent = async (t: TestApp, token: string, id: number) =>
  await t.as(token, { method: 'GET', url: `/api/v1/events/${id}` })

export async function insertSpace (
  t: TestApp,
  tenantId: string,
  values: { title?: string; creator_id?: string; is_deleted?: boolean } = {}
): Promise<number> {
  return await insertRowId(t, tenantId, 'spaces', {
    creator_id: values.creator_id ?? 'owner',
    title: values.title ?? 'Space',
    ...(values.is_deleted !== undefined ? { is_deleted: values.is_deleted } : {})
  })
}

export async function addMember (t: TestApp, tenantId: string, spaceId: number, userId: string): Promise<void> {
  await insertRow(t, tenantId, 'space_members', { space_id: spaceId, user_id: userId })
}

/** A manager of an event (of its whole series too, with `series_id`), through SQL. */
export async function addManager (
  t: TestApp,
  tenantId: string,
  eventId: number,
  userId: string,
  grant: { permissions?: string[]; role?: string; status?: 'pending' | 'active' | 'revoked'; series_id?: number }
): Promise<void> {
  await insertRow(t, tenantId, 'event_managers', {
    event_id: eventId,
    user_id: userId,
    permissions: grant.permissions ?? [],
    role: grant.role ?? null,
    status: grant.status ?? 'active',
    ...(grant.series_id !== undefined ? { series_id: grant.series_id } : {})
  })
}

export async function activityKinds (t: TestApp, token: string, id: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/activity` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().items as Json[]).map(i => i.kind)
}

/**
 * All SQL of event managers and their invites (table `event_managers`, of the events module).
 * Invite tokens: 32 random bytes, base64url, shown once; only their SHA-256 (hex) is stored.
 */
import { sql, type InsertObject } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { selectRows, updateRows } from '../../platform/db/match.ts'
import { liveGrants } from '../../platform/db/grants.ts'
import { creationOrder, listScope, pageWindow, type PageParams } from '../../platform/http/cursor.ts'
import { digestEtag } from '../../platform/http/conditional.ts'
import { displayProfiles } from '../identity/index.ts'
import { MANAGER_GRANT_COLUMNS } from '../events/index.ts'
import { type EventManagerRow } from './event-managers.table.ts'
import { INVITE_TTL_DAYS } from './event-managers.schemas.ts'

export const MANAGER_COLUMNS = ['id', 'event_id', 'series_id', ...MANAGER_GRANT_COLUMNS] as const
export type ManagerView = Omit<EventManagerRow, 'tenant_id' | 'invite_token_hash'>

/**
 * The ETag of a manager row (no revision column): a digest of its stored values, not of the display name
 * (conditional.ts).
 */
export const managerEtag = (row: { [K in (typeof MANAGER_COLUMNS)[number]]: unknown }): string =>
  digestEtag(MANAGER_COLUMNS.map(c => row[c]))

export { hashInviteToken, newInviteToken } from '../../platform/invite-tokens.ts'

/** Rows with the managers' display names (null for pending invites without a user). */
export async function withDisplayNames<T extends { user_id: string | null }> (
  trx: Tx,
  tenantId: string,
  rows: T[]
): Promise<Array<T & { display_name: string | null }>> {
  const profiles = await displayProfiles(
    trx,
    tenantId,
    rows.flatMap(r => (r.user_id === null ? [] : [r.user_id]))
  )
  return rows.map(r => ({
    ...r,
    display_name: r.user_id === null ? null : (profiles.get(r.user_id)?.display_name ?? r.user_id)
  }))
}

export async function withDisplayName<T extends { user_id: string | null }> (
  trx: Tx,
  tenantId: string,
  row: T
): Promise<T & { display_name: string | null }> {
  const [one] = await withDisplayNames(trx, tenantId, [row])
  return one ?? { ...row, display_name: null }
}

const CREATED_KEYS = creationOrder('asc')

/** Active and pending managers of an event (revoked rows are history), oldest first; the next page's cursor. */
export async function listManagers (trx: Tx, tenantId: string, eventId: number, q: PageParams) {
  const window = pageWindow(q, listScope('event-managers', { eventId }), CREATED_KEYS)
  const base = liveGrants(trx, 'event_managers', { tenant_id: tenantId, event_id: eventId })
  return await listPage(trx, base, qb => qb.select(MANAGER_COLUMNS), CREATED_KEYS, window)
}

/** The active or pending manager row of a user on an event. */
export async function findManager (trx: Tx, tenantId: string, eventId: number, userId: string, lock = false) {
  return await liveGrants(trx, 'event_managers', { tenant_id: tenantId, event_id: eventId, user_id: userId })
    .select(MANAGER_COLUMNS)
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

/** What a manager is granted on an event, and by whom: given at once or as an invite. */
interface GrantValues {
  tenantId: string
  eventId: number
  orgId: string | null
  permissions: string[]
  role: string | null
  invitedBy: string
}

/** Inserts a manager row of an event, granted now: the grant, and how it is held (`held`: active or invited). */
async function insertGrant (trx: Tx, v: GrantValues, held: Partial<InsertObject<Database, 'event_managers'>>) {
  return await trx
    .insertInto('event_managers')
    .values({
      tenant_id: v.tenantId,
      event_id: v.eventId,
      org_id: v.orgId,
      permissions: v.permissions,
      role: v.role,
      invited_by: v.invitedBy,
      invited_at: sql`now()`,
      ...held
    })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function insertManager (trx: Tx, v: GrantValues & { userId: string }) {
  return await insertGrant(trx, v, { user_id: v.userId, status: 'active', accepted_at: sql`now()` })
}

/** The active managers of an event (its own rows, not its series'), oldest first: the grants a clone copies. */
export async function activeManagersOf (trx: Tx, tenantId: string, eventId: number) {
  return await selectRows(trx, 'event_managers', { tenant_id: tenantId, event_id: eventId, status: 'active' })
    .select(['user_id', 'permissions', 'role'])
    .where('user_id', 'is not', null)
    .orderBy('created_at').orderBy('id')
    .execute()
}

/** Active grants on an event for several users, given now (multi-row VALUES, in chunks: chunks.ts). */
export async function insertManagers (
  trx: Tx,
  v: Omit<GrantValues, 'permissions' | 'role'>,
  grants: ReadonlyArray<{ userId: string, permissions: string[], role: string | null }>
): Promise<void> {
  const rows = grants.map(g => ({
    tenant_id: v.tenantId,
    event_id: v.eventId,
    org_id: v.orgId,
    user_id: g.userId,
    permissions: g.permissions,
    role: g.role,
    status: 'active' as const,
    invited_by: v.invitedBy,
    invited_at: sql<Date>`now()`,
    accepted_at: sql<Date>`now()`
  }))
  for (const chunk of rowChunks(rows, 8)) await trx.insertInto('event_managers').values(chunk).execute()
}

export async function updatePermissions (
  trx: Tx,
  tenantId: string,
  id: number,
  permissions: string[],
  role: string | null
) {
  return await updateRows(trx, 'event_managers', { tenant_id: tenantId, id })
    .set({ permissions, role, updated_at: sql`now()` })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function revokeManager (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.updateTable('event_managers')
    .set({ status: 'revoked', invite_token_hash: null, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/** The pending invite of an e-mail on an event (case-insensitive). */
export async function lockPendingInvite (trx: Tx, tenantId: string, eventId: number, email: string) {
  return await trx.selectFrom('event_managers').select(MANAGER_COLUMNS)
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('status', '=', 'pending')
    .where(sql<string>`lower(invited_email)`, '=', email.toLowerCase())
    .forUpdate().executeTakeFirst()
}

/** Whether a user of the tenant with this e-mail already actively manages the event. */
export async function emailIsActiveManager (
  trx: Tx,
  tenantId: string,
  eventId: number,
  email: string
): Promise<boolean> {
  const row = await trx
    .selectFrom('event_managers as em')
    .innerJoin('users as u', join => join.onRef('u.tenant_id', '=', 'em.tenant_id').onRef('u.id', '=', 'em.user_id'))
    .select('em.id')
    .where('em.tenant_id', '=', tenantId)
    .where('em.event_id', '=', eventId)
    .where('em.status', '=', 'active')
    .where(sql<string>`lower(u.email)`, '=', email.toLowerCase())
    .executeTakeFirst()
  return row !== undefined
}

const expiry = sql<Date>`now() + make_interval(days => ${INVITE_TTL_DAYS})`

export async function insertInvite (trx: Tx, v: GrantValues & { email: string; tokenHash: string }) {
  return await insertGrant(trx, v, {
    user_id: null,
    status: 'pending',
    invited_email: v.email,
    invite_token_hash: v.tokenHash,
    expires_at: expiry
  })
}

/** Re-invite: a new token and expiry, the new grant. */
export async function refreshInvite (
  trx: Tx,
  tenantId: string,
  id: number,
  v: { permissions: string[]; role: string | null; invitedBy: string; tokenHash: string }
) {
  return await updateRows(trx, 'event_managers', { tenant_id: tenantId, id })
    .set({
      permissions: v.permissions,
      role: v.role,
      invited_by: v.invitedBy,
      invited_at: sql`now()`,
      invite_token_hash: v.tokenHash,
      expires_at: expiry,
      updated_at: sql`now()`
    })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** An invite (event or series) by token hash, locked, with whether it expired. */
export async function lockInviteByHash (trx: Tx, tenantId: string, hash: string) {
  return await trx.selectFrom('event_managers')
    .select([...MANAGER_COLUMNS, sql<boolean>`expires_at is not null and expires_at <= now()`.as('expired')])
    .where('tenant_id', '=', tenantId).where('invite_token_hash', '=', hash)
    .forUpdate().executeTakeFirst()
}

/** Whether the user already holds an active or pending grant on the same event or series. */
export async function hasGrant (
  trx: Tx,
  tenantId: string,
  scope: { eventId: number | null; seriesId: number | null },
  userId: string,
  exceptId: number
): Promise<boolean> {
  const row = await selectRows(trx, 'event_managers', { tenant_id: tenantId, user_id: userId, status: 'active' })
    .select('id')
    .where('id', '<>', exceptId)
    .where(eb =>
      scope.eventId !== null
        ? eb('event_id', '=', scope.eventId)
        : eb.and([eb('event_id', 'is', null), eb('series_id', '=', scope.seriesId)])
    )
    .executeTakeFirst()
  return row !== undefined
}

export async function activateInvite (trx: Tx, tenantId: string, id: number, userId: string) {
  return await updateRows(trx, 'event_managers', { tenant_id: tenantId, id })
    .set({ status: 'active', user_id: userId, accepted_at: sql`now()`, updated_at: sql`now()` })
    .returning(MANAGER_COLUMNS).executeTakeFirstOrThrow()
}

/** Unexpired pending invites (events and series) addressed to an e-mail. */
export async function pendingInvitesFor (trx: Tx, tenantId: string, email: string) {
  return await trx.selectFrom('event_managers').select(MANAGER_COLUMNS)
    .where('tenant_id', '=', tenantId).where('status', '=', 'pending')
    .where(sql<string>`lower(invited_email)`, '=', email.toLowerCase())
    .where(eb => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .orderBy('invited_at', 'desc').orderBy('id', 'desc')
    .limit(1000)
    .execute()
}

export async function userEmail (trx: Tx, tenantId: string, userId: string): Promise<string | null> {
  const row = await trx
    .selectFrom('users')
    .select('email')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst()
  return row?.email ?? null
}

/**
 * The people of a space: its members, its managers (granted at once or invited by e-mail, the invites' lookups and
 * acceptance) and the contacts linked to it; the routes are spaces.people.routes.ts. Every function takes the
 * request's transaction first and names the tenant. The space itself, its hierarchy and its public handle are
 * spaces.repository.ts.
 */
import { sql, type InsertObject } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { deleteRows, selectRows, updateRows } from '../../platform/db/match.ts'
import { liveGrants } from '../../platform/db/grants.ts'
import { creationOrder, listScope, pageWindow, type KeyColumn, type PageParams } from '../../platform/http/cursor.ts'
import type { SpaceRole } from './spaces.table.ts'
import { MANAGER_GRANT_COLUMNS } from '../events/index.ts'

/* Members */

const MEMBER_COLUMNS = [
  'space_members.space_id',
  'space_members.user_id',
  'spaces.org_id',
  'space_members.role',
  'space_members.is_active',
  'space_members.created_at',
  'space_members.updated_at'
] as const

/** Members oldest first (when they joined), then by user; `table` names space_members (or its alias). */
export const memberOrder = (table: string): KeyColumn[] => [
  { ref: `${table}.created_at`, dir: 'asc', type: 'time' },
  { ref: `${table}.user_id`, dir: 'asc', type: 'text' }
]

const MEMBER_KEYS = memberOrder('space_members')

/** A page of a space's active members, oldest first; the total and the next page's cursor (docs/pagination.md). */
export async function listMembers (trx: Tx, tenantId: string, spaceId: number, q: PageParams) {
  const window = pageWindow(q, listScope('space-members', { spaceId }), MEMBER_KEYS)
  const base = trx
    .selectFrom('space_members')
    .innerJoin('spaces', j =>
      j.onRef('spaces.tenant_id', '=', 'space_members.tenant_id').onRef('spaces.id', '=', 'space_members.space_id')
    )
    .where('space_members.tenant_id', '=', tenantId)
    .where('space_members.space_id', '=', spaceId)
    .where('space_members.is_active', '=', true)
  return await listPage(trx, base, qb => qb.select(MEMBER_COLUMNS), MEMBER_KEYS, window)
}

export async function findMember (trx: Tx, tenantId: string, spaceId: number, userId: string) {
  return await trx
    .selectFrom('space_members')
    .innerJoin('spaces', j =>
      j.onRef('spaces.tenant_id', '=', 'space_members.tenant_id').onRef('spaces.id', '=', 'space_members.space_id')
    )
    .select(MEMBER_COLUMNS)
    .where('space_members.tenant_id', '=', tenantId)
    .where('space_members.space_id', '=', spaceId)
    .where('space_members.user_id', '=', userId)
    .executeTakeFirst()
}

/**
 * Adds a member or re-activates a former one (joined again now); an active member gets the new
 * role. The update takes its times from the inserted row (`excluded`, which carries now()): Citus
 * refuses a function such as now() in `ON CONFLICT DO UPDATE SET` on a distributed table.
 */
export async function upsertMember (
  trx: Tx,
  tenantId: string,
  spaceId: number,
  userId: string,
  role: SpaceRole
): Promise<void> {
  await trx
    .insertInto('space_members')
    .values({
      tenant_id: tenantId,
      space_id: spaceId,
      user_id: userId,
      role,
      created_at: sql`now()`,
      updated_at: sql`now()`
    })
    .onConflict(oc =>
      oc.columns(['tenant_id', 'space_id', 'user_id']).doUpdateSet(eb => ({
        role,
        is_active: true,
        removed_at: null,
        created_at: sql`case when space_members.is_active then space_members.created_at else excluded.created_at end`,
        updated_at: eb.ref('excluded.updated_at')
      }))
    )
    .execute()
}

export async function deactivateMember (trx: Tx, tenantId: string, spaceId: number, userId: string): Promise<boolean> {
  const res = await trx
    .updateTable('space_members')
    .set({ is_active: false, removed_at: sql`now()`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId)
    .where('space_id', '=', spaceId)
    .where('user_id', '=', userId)
    .where('is_active', '=', true)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) > 0
}

/* Managers */

const MANAGER_COLUMNS = ['id', 'space_id', ...MANAGER_GRANT_COLUMNS] as const

const MANAGER_KEYS = creationOrder('asc')

/** A page of a space's active and pending managers, oldest first; the total and the next page's cursor. */
export async function listManagers (trx: Tx, tenantId: string, spaceId: number, q: PageParams) {
  const window = pageWindow(q, listScope('space-managers', { spaceId }), MANAGER_KEYS)
  const base = liveGrants(trx, 'space_managers', { tenant_id: tenantId, space_id: spaceId })
  return await listPage(trx, base, qb => qb.select(MANAGER_COLUMNS), MANAGER_KEYS, window)
}

export async function findManager (trx: Tx, tenantId: string, spaceId: number, userId: string) {
  return await liveGrants(trx, 'space_managers', { tenant_id: tenantId, space_id: spaceId, user_id: userId })
    .select(MANAGER_COLUMNS)
    .executeTakeFirst()
}

/** What a manager is granted on a space, and by whom: given at once or as an invite. */
interface GrantValues {
  tenantId: string
  spaceId: number
  orgId: string | null
  permissions: string[]
  role: string | null
  invitedBy: string
}

/** Inserts a manager row of a space: the grant, whose it is (`userId`: none for an invite), and how it is held. */
async function insertGrant (
  trx: Tx,
  v: GrantValues & { userId: string | null },
  held: Partial<InsertObject<Database, 'space_managers'>>
) {
  return await trx
    .insertInto('space_managers')
    .values({
      tenant_id: v.tenantId,
      space_id: v.spaceId,
      org_id: v.orgId,
      user_id: v.userId,
      permissions: v.permissions,
      role: v.role,
      ...held
    })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function insertManager (trx: Tx, v: GrantValues & { userId: string }) {
  return await insertGrant(trx, v, { status: 'active', invited_by: v.invitedBy, accepted_at: sql<Date>`now()` })
}

export async function updateManager (
  trx: Tx,
  tenantId: string,
  id: number,
  values: { permissions: string[]; role: string | null }
) {
  return await updateRows(trx, 'space_managers', { tenant_id: tenantId, id })
    .set({ ...values, updated_at: sql`now()` })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function revokeManager (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.updateTable('space_managers').set({ status: 'revoked', updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/** Locks the space's active manager rows and counts them (the last one may not leave). */
export async function lockActiveManagers (trx: Tx, tenantId: string, spaceId: number) {
  return await trx.selectFrom('space_managers').select(['id', 'user_id'])
    .where('tenant_id', '=', tenantId).where('space_id', '=', spaceId).where('status', '=', 'active')
    .orderBy('id').forUpdate().execute()
}

/* Contacts */

const CONTACT_LINK_COLUMNS = ['id', 'space_id', 'contact_id', 'created_at', 'updated_at'] as const

const CONTACT_LINK_KEYS = creationOrder('desc')

/** A page of the contacts linked to a space, newest first; the total and the next page's cursor. */
export async function listContacts (trx: Tx, tenantId: string, spaceId: number, q: PageParams) {
  const window = pageWindow(q, listScope('space-contacts', { spaceId }), CONTACT_LINK_KEYS)
  const base = trx.selectFrom('space_contacts').where('tenant_id', '=', tenantId).where('space_id', '=', spaceId)
  return await listPage(trx, base, qb => qb.select(CONTACT_LINK_COLUMNS), CONTACT_LINK_KEYS, window)
}

export async function insertContactLink (trx: Tx, tenantId: string, spaceId: number, contactId: string, by: string) {
  return await trx
    .insertInto('space_contacts')
    .values({ tenant_id: tenantId, space_id: spaceId, contact_id: contactId, created_by: by })
    .onConflict(oc => oc.columns(['tenant_id', 'space_id', 'contact_id']).doNothing())
    .returning(CONTACT_LINK_COLUMNS)
    .executeTakeFirst()
}

export async function findContactLink (trx: Tx, tenantId: string, spaceId: number, contactId: string) {
  return await selectRows(trx, 'space_contacts', { tenant_id: tenantId, space_id: spaceId, contact_id: contactId })
    .select(CONTACT_LINK_COLUMNS)
    .executeTakeFirst()
}

export async function deleteContactLink (
  trx: Tx,
  tenantId: string,
  spaceId: number,
  contactId: string
): Promise<boolean> {
  return await deleteRows(trx, 'space_contacts', { tenant_id: tenantId, space_id: spaceId, contact_id: contactId }) > 0
}

/* Manager invites */

export async function findLiveInviteByEmail (trx: Tx, tenantId: string, spaceId: number, email: string) {
  return await trx.selectFrom('space_managers').select('id')
    .where('tenant_id', '=', tenantId).where('space_id', '=', spaceId).where('status', '=', 'pending')
    .where(sql<string>`lower(invited_email)`, '=', email).where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
}

export async function insertInvite (trx: Tx, v: GrantValues & { email: string; tokenHash: string; days: number }) {
  return await insertGrant(trx, { ...v, userId: null }, {
    status: 'pending',
    invited_email: v.email,
    invited_by: v.invitedBy,
    invited_at: sql<Date>`now()`,
    invite_token_hash: v.tokenHash,
    expires_at: sql<Date>`now() + make_interval(days => ${v.days})`
  })
}

export async function lockInviteByHash (trx: Tx, tenantId: string, tokenHash: string) {
  return await trx
    .selectFrom('space_managers')
    .select([...MANAGER_COLUMNS, sql<boolean>`expires_at <= now()`.as('expired')])
    .where('tenant_id', '=', tenantId)
    .where('invite_token_hash', '=', tokenHash)
    .where('status', '=', 'pending')
    .forUpdate()
    .executeTakeFirst()
}

export async function acceptInvite (trx: Tx, tenantId: string, id: number, userId: string) {
  return await updateRows(trx, 'space_managers', { tenant_id: tenantId, id })
    .set({
      user_id: userId, status: 'active', accepted_at: sql`now()`, invite_token_hash: null, updated_at: sql`now()`
    })
    .returning(MANAGER_COLUMNS)
    .executeTakeFirstOrThrow()
}

const QUALIFIED_MANAGER_COLUMNS = [
  'space_managers.id',
  'space_managers.space_id',
  'space_managers.org_id',
  'space_managers.user_id',
  'space_managers.permissions',
  'space_managers.role',
  'space_managers.status',
  'space_managers.invited_email',
  'space_managers.invited_by',
  'space_managers.invited_at',
  'space_managers.expires_at',
  'space_managers.accepted_at',
  'space_managers.created_at',
  'space_managers.updated_at'
] as const

export async function pendingInvitesFor (trx: Tx, tenantId: string, email: string) {
  return await trx
    .selectFrom('space_managers')
    .select(QUALIFIED_MANAGER_COLUMNS)
    .innerJoin('spaces', j =>
      j.onRef('spaces.tenant_id', '=', 'space_managers.tenant_id').onRef('spaces.id', '=', 'space_managers.space_id')
    )
    .where('space_managers.tenant_id', '=', tenantId)
    .where('space_managers.status', '=', 'pending')
    .where(sql<string>`lower(space_managers.invited_email)`, '=', email)
    .where('space_managers.expires_at', '>', sql<Date>`now()`)
    .where('spaces.is_deleted', '=', false)
    .orderBy('space_managers.invited_at', 'desc')
    .orderBy('space_managers.id', 'desc')
    .limit(100)
    .execute()
}

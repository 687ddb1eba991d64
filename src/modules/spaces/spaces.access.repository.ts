/**
 * Who may see and manage a space (docs/spaces.md). Exported for other modules: events use
 * `isSpaceMember` / `isSpaceManager` for members-only visibility and manager rights.
 *
 * Seeing a space: its creator, its active managers and tenant admins always; otherwise the space
 * must have been published (status published or archived) and the caller be in its audience:
 * visibility 40 every caller of the tenant, 30 callers of the space's organization and active
 * members, 20 active members, 10 nobody else.
 *
 * Managing a space: its creator, tenant admins, and active managers holding the permission the
 * action needs (the role `space_manager:full` holds every permission).
 *
 * Granting: a grant (permissions, or the full role) never exceeds what the granter holds
 * (`heldOnSpace`); `assertGrantWithin` answers 403 otherwise.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { rowExists, selectRows } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { ApiError, fieldError } from '../../platform/http/errors.ts'
import { FULL_ROLE, SPACE_MANAGER_PERMISSIONS, type SpaceManagerPermission } from './spaces.schemas.ts'

type Eb = ExpressionBuilder<Database, 'spaces'>

const isAdmin = (auth: AuthContext): boolean => auth.permissions.has('tenant:admin')

// The subqueries name the tenant themselves, not only through the outer row, so that a statement
// that locks the space (spaces.repository.ts, lockVisible) is routed to one shard on Citus.
function managerExists (eb: Eb, auth: AuthContext) {
  return eb.exists(eb.selectFrom('space_managers as m').select(sql`1`.as('one'))
    .where('m.tenant_id', '=', auth.tenantId)
    .whereRef('m.tenant_id', '=', 'spaces.tenant_id').whereRef('m.space_id', '=', 'spaces.id')
    .where('m.user_id', '=', auth.userId).where('m.status', '=', 'active'))
}

function memberExists (eb: Eb, auth: AuthContext) {
  return eb.exists(eb.selectFrom('space_members as sm').select(sql`1`.as('one'))
    .where('sm.tenant_id', '=', auth.tenantId)
    .whereRef('sm.tenant_id', '=', 'spaces.tenant_id').whereRef('sm.space_id', '=', 'spaces.id')
    .where('sm.user_id', '=', auth.userId).where('sm.is_active', '=', true))
}

/** The spaces (of table `spaces`) a caller may read; deleted spaces are never visible. */
export function spaceVisibleTo (eb: Eb, auth: AuthContext): Expression<SqlBool> {
  const base = [eb('spaces.tenant_id', '=', auth.tenantId), eb('spaces.is_deleted', '=', false)]
  if (isAdmin(auth)) return eb.and(base)
  const audience = eb.or([
    eb('spaces.visibility', '=', 40),
    auth.orgId !== null
      ? eb.and([eb('spaces.visibility', '=', 30), eb('spaces.org_id', '=', auth.orgId)])
      : eb.val(false),
    eb.and([eb('spaces.visibility', 'in', [20, 30]), memberExists(eb, auth)])
  ])
  return eb.and([...base, eb.or([
    eb('spaces.creator_id', '=', auth.userId),
    managerExists(eb, auth),
    eb.and([eb('spaces.status', '<>', 'draft'), audience])
  ])])
}

/** The id and creator of a space the caller may see, or undefined. */
export async function findVisibleSpace (
  trx: Tx,
  auth: AuthContext,
  id: number
): Promise<{ id: number, creator_id: string } | undefined> {
  return await trx
    .selectFrom('spaces')
    .select(['id', 'creator_id'])
    .where(eb => spaceVisibleTo(eb, auth))
    .where('spaces.id', '=', id)
    .executeTakeFirst()
}

/** Whether the user is an active member of the space. */
export async function isSpaceMember (trx: Tx, tenantId: string, spaceId: number, userId: string): Promise<boolean> {
  return await rowExists(trx, 'space_members', {
    tenant_id: tenantId, space_id: spaceId, user_id: userId, is_active: true
  })
}

/** The active manager row of the user, if any. */
export async function activeManager (trx: Tx, tenantId: string, spaceId: number, userId: string) {
  return await selectRows(trx, 'space_managers', {
    tenant_id: tenantId, space_id: spaceId, user_id: userId, status: 'active'
  }).select(['id', 'role', 'permissions']).executeTakeFirst()
}

/** Whether the user is an active manager of the space (optionally holding `permission`). */
export async function isSpaceManager (
  trx: Tx,
  tenantId: string,
  spaceId: number,
  userId: string,
  permission?: SpaceManagerPermission
): Promise<boolean> {
  const m = await activeManager(trx, tenantId, spaceId, userId)
  if (m === undefined) return false
  return permission === undefined || m.role === FULL_ROLE || m.permissions.includes(permission)
}

/** Whether the caller may perform a management action needing `permission` on the space. */
export async function canManageSpace (
  trx: Tx,
  auth: AuthContext,
  space: { id: number; creator_id: string },
  permission: SpaceManagerPermission
): Promise<boolean> {
  if (isAdmin(auth) || space.creator_id === auth.userId) return true
  return await isSpaceManager(trx, auth.tenantId, space.id, auth.userId, permission)
}

const isSpacePermission = (p: string): p is SpaceManagerPermission =>
  (SPACE_MANAGER_PERMISSIONS as readonly string[]).includes(p)

/** The permissions a manager row (or a requested grant) gives: every one for the full role, else its list. */
export function spaceGrantOf (m: { role: string | null, permissions: readonly string[] }): Set<SpaceManagerPermission> {
  if (m.role === FULL_ROLE) return new Set(SPACE_MANAGER_PERMISSIONS)
  return new Set(m.permissions.filter(isSpacePermission))
}

/** What the caller holds on the space: everything as tenant admin or creator, else their active manager row's grant. */
export async function heldOnSpace (
  trx: Tx,
  auth: AuthContext,
  space: { id: number; creator_id: string }
): Promise<ReadonlySet<SpaceManagerPermission>> {
  if (isAdmin(auth) || space.creator_id === auth.userId) return new Set(SPACE_MANAGER_PERMISSIONS)
  const m = await activeManager(trx, auth.tenantId, space.id, auth.userId)
  return m === undefined ? new Set() : spaceGrantOf(m)
}

/**
 * 403 unless `held` covers every permission of `grant`; the detail starts with `what` and lists
 * the missing ones, `location` names the field carrying the grant or the row concerned.
 */
export function assertGrantWithin (
  grant: Iterable<string>,
  held: ReadonlySet<string>,
  location: string,
  what: string
): void {
  const wanted = new Set(grant)
  const missing = SPACE_MANAGER_PERMISSIONS.filter(p => wanted.has(p) && !held.has(p))
  if (missing.length > 0) {
    throw new ApiError(403, `${what}; not held by you: ${missing.join(', ')}`, [
      fieldError(location, 'permissions the caller does not hold', missing)
    ], {}, 'grant_exceeds_own')
  }
}

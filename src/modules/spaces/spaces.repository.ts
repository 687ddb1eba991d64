/**
 * All SQL of spaces, their hierarchy and their people. Every function takes the request's
 * transaction first and names the tenant.
 */
import { sql, type ExpressionBuilder, type InsertObject, type SelectQueryBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { deleteRows, rowExists, selectRows, updateRows } from '../../platform/db/match.ts'
import { liveGrants } from '../../platform/db/grants.ts'
import { creationOrder, listScope, pageWindow, type KeyColumn, type PageParams } from '../../platform/http/cursor.ts'
import { spaceVisibleTo } from './spaces.access.repository.ts'
import type { SPACE_SORT_FIELDS } from './spaces.schemas.ts'
import type { SpaceActivityType, SpaceDraft, SpaceRole } from './spaces.table.ts'
import { MANAGER_GRANT_COLUMNS } from '../events/index.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import { likePattern } from '../../platform/db/like.ts'

const BASE_COLUMNS = [
  'spaces.id',
  'spaces.title',
  'spaces.description',
  'spaces.timezone',
  'spaces.visibility',
  'spaces.status',
  'spaces.org_id',
  'spaces.creator_id',
  'spaces.position',
  'spaces.published_at',
  'spaces.version',
  'spaces.is_deleted',
  'spaces.public_handle',
  'spaces.revision',
  'spaces.draft',
  'spaces.created_at',
  'spaces.updated_at'
] as const

/**
 * The ids of a space's live parents. The subquery names the tenant itself, not only through the
 * outer row, so that a statement locking the space (lockVisible) is routed to one shard on Citus.
 */
const parentIds = (eb: ExpressionBuilder<Database, 'spaces'>, tenantId: string) =>
  sql<
    number[]
  >`coalesce((select json_agg(p.parent_id order by p.parent_id) from space_parents p join spaces ps on ps.tenant_id = p.tenant_id and ps.id = p.parent_id and not ps.is_deleted where p.tenant_id = ${tenantId} and ps.tenant_id = ${tenantId} and p.tenant_id = ${eb.ref('spaces.tenant_id')} and p.space_id = ${eb.ref('spaces.id')}), '[]'::json)`.as(
    'parent_ids'
  )

/** The columns of a space as the API shows it: its own, its parents' ids, whether a draft is pending. */
const spaceColumns = <O>(qb: SelectQueryBuilder<Database, 'spaces', O>, tenantId: string) =>
  qb.select(BASE_COLUMNS).select(eb => [
    parentIds(eb, tenantId),
    sql<boolean>`${eb.ref('spaces.draft')} is not null`.as('has_draft')
  ])

/** A space row of the tenant as the API shows it (the published form; `draft` holds pending changes). */
export function spaceSelect (trx: Tx, tenantId: string) {
  return spaceColumns(trx.selectFrom('spaces'), tenantId)
}
export type SpaceView = Awaited<ReturnType<ReturnType<typeof spaceSelect>['executeTakeFirstOrThrow']>>

/** The wire form: `published_id` is set only on a draft view. */
export const toSpace = (row: SpaceView) => ({ ...row, published_id: null as number | null })

/** The draft view of a space: the published form with its pending changes applied. */
export function toDraftView (row: SpaceView) {
  if (row.status === 'draft') return toSpace(row)
  return { ...row, ...(row.draft ?? {}), status: 'draft' as const, published_id: row.id, has_draft: row.draft !== null }
}

export async function findVisible (trx: Tx, auth: AuthContext, id: number) {
  return await spaceSelect(trx, auth.tenantId)
    .where('spaces.id', '=', id)
    .where(eb => spaceVisibleTo(eb, auth))
    .executeTakeFirst()
}

/**
 * Locks a space the caller may see. Every table of the statement names the tenant (`spaces` and
 * the subqueries of spaceSelect and spaceVisibleTo), so that on Citus the lock is routed to one shard.
 */
export async function lockVisible (trx: Tx, auth: AuthContext, id: number) {
  return await spaceSelect(trx, auth.tenantId)
    .where('spaces.tenant_id', '=', auth.tenantId)
    .where('spaces.id', '=', id)
    .where(eb => spaceVisibleTo(eb, auth))
    .forUpdate('spaces')
    .executeTakeFirst()
}

/** A non-deleted space of the tenant regardless of the caller (for rules that check parents). */
/** Locks a space that is not deleted (for an invitee, who may not see it yet); false when there is none. */
export async function lockLive (trx: Tx, tenantId: string, id: number): Promise<boolean> {
  return await rowExists(trx, 'spaces', { tenant_id: tenantId, id, is_deleted: false }, { lock: true })
}

/** Gives a space its handle in the public directory (kept once given). */
export async function setPublicHandle (trx: Tx, tenantId: string, id: number, handle: string): Promise<void> {
  await trx.updateTable('spaces').set({ public_handle: handle }).where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

export async function findSpace (trx: Tx, tenantId: string, id: number) {
  return await spaceSelect(trx, tenantId)
    .where('spaces.tenant_id', '=', tenantId)
    .where('spaces.id', '=', id)
    .where('spaces.is_deleted', '=', false)
    .executeTakeFirst()
}

export interface SpaceValues {
  title?: string
  description?: string
  timezone?: string
  visibility?: number
  position?: number
}

export async function insertSpace (
  trx: Tx,
  auth: AuthContext,
  values: SpaceValues & { title: string }
): Promise<number> {
  const row = await trx
    .insertInto('spaces')
    .values({ ...values, tenant_id: auth.tenantId, creator_id: auth.userId, org_id: auth.orgId })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

export async function updateSpace (trx: Tx, tenantId: string, id: number, values: SpaceValues & {
  status?: 'draft' | 'published' | 'archived'
  draft?: SpaceDraft | null
  published_at?: Date
  version?: number
  public_handle?: string
  is_deleted?: boolean
}): Promise<void> {
  const { draft, ...rest } = values
  await trx
    .updateTable('spaces')
    .set({
      ...rest,
      ...(draft !== undefined ? { draft: draft === null ? null : JSON.stringify(draft) } : {}),
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()
}

export interface ListOptions {
  page: number
  size: number
  cursor?: string | undefined
  search?: string | undefined
  sortBy: typeof SPACE_SORT_FIELDS[number]
  sortDir: 'asc' | 'desc'
  status?: 'draft' | 'published' | 'archived' | undefined
  visibility?: number | undefined
  parentId?: number | undefined
}

const SPACE_SORT_TYPES: Record<typeof SPACE_SORT_FIELDS[number], KeyColumn['type']> = {
  created_at: 'time', updated_at: 'time', published_at: 'time', title: 'text', position: 'int'
}

/** A page of the spaces the caller sees (of one parent, when given); the total and the next page's cursor. */
export async function listVisible (trx: Tx, auth: AuthContext, o: ListOptions) {
  const keys: KeyColumn[] = [
    {
      ref: `spaces.${o.sortBy}`,
      dir: o.sortDir,
      type: SPACE_SORT_TYPES[o.sortBy],
      nullable: o.sortBy === 'published_at'
    },
    { ref: 'spaces.id', dir: o.sortDir, type: 'int' }
  ]
  const window = pageWindow(
    o,
    listScope('spaces', {
      sortBy: o.sortBy,
      sortDir: o.sortDir,
      search: o.search,
      status: o.status,
      visibility: o.visibility,
      parentId: o.parentId
    }),
    keys
  )
  const base = trx
    .selectFrom('spaces')
    .where(eb => spaceVisibleTo(eb, auth))
    .$if(o.search !== undefined && o.search !== '', qb =>
      qb.where(sql<string>`lower(spaces.title)`, 'like', likePattern(o.search ?? ''))
    )
    .$if(o.status !== undefined, qb => qb.where('spaces.status', '=', o.status ?? 'draft'))
    .$if(o.visibility !== undefined && o.visibility !== 0, qb => qb.where('spaces.visibility', '=', o.visibility ?? 0))
    .$if(o.parentId !== undefined, qb => qb.where(eb => eb.exists(
      eb.selectFrom('space_parents as sp').select(sql`1`.as('one'))
        .where('sp.tenant_id', '=', auth.tenantId) // as a value too: one shard on Citus
        .whereRef('sp.tenant_id', '=', 'spaces.tenant_id').whereRef('sp.space_id', '=', 'spaces.id')
        .where('sp.parent_id', '=', o.parentId ?? 0)
    )))
  const page = await listPage(base, qb => spaceColumns(qb, auth.tenantId), keys, window)
  return { ...page, items: page.items.map(toSpace) }
}

/** Every visible space and the parent links among them, for the tree. */
export async function visibleForest (trx: Tx, auth: AuthContext) {
  const spaces = await spaceSelect(trx, auth.tenantId)
    .where(eb => spaceVisibleTo(eb, auth))
    .orderBy('spaces.position')
    .orderBy('spaces.id')
    .execute()
  const links = await trx
    .selectFrom('space_parents')
    .select(['space_id', 'parent_id'])
    .where('tenant_id', '=', auth.tenantId)
    .execute()
  return { spaces, links }
}

/* Hierarchy */

export async function addParent (trx: Tx, tenantId: string, spaceId: number, parentId: number): Promise<boolean> {
  const res = await trx
    .insertInto('space_parents')
    .values({ tenant_id: tenantId, space_id: spaceId, parent_id: parentId })
    .onConflict(oc => oc.doNothing())
    .executeTakeFirst()
  return Number(res.numInsertedOrUpdatedRows ?? 0) > 0
}

export async function removeParent (trx: Tx, tenantId: string, spaceId: number, parentId: number): Promise<boolean> {
  return await deleteRows(trx, 'space_parents', { tenant_id: tenantId, space_id: spaceId, parent_id: parentId }) > 0
}

/** Whether `ancestor` is `spaceId` itself or one of its ancestors (walking parent links up). */
export async function isSelfOrAncestor (
  trx: Tx, tenantId: string, spaceId: number, ancestor: number
): Promise<boolean> {
  if (spaceId === ancestor) return true
  const row = await sql<{ found: boolean }>`
    with recursive up(id) as (
      select parent_id from space_parents where tenant_id = ${tenantId} and space_id = ${spaceId}
      union
      select p.parent_id from space_parents p join up on p.space_id = up.id where p.tenant_id = ${tenantId}
    )
    select exists (select 1 from up where id = ${ancestor}) as found`.execute(trx)
  return row.rows[0]?.found === true
}

/** Serializes hierarchy changes of a tenant, so two concurrent links cannot close a cycle together. */
export async function lockHierarchy (trx: Tx, tenantId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`space-tree:${tenantId}`}, 0))`.execute(trx)
}

export async function detachChildren (trx: Tx, tenantId: string, parentId: number): Promise<void> {
  await trx.deleteFrom('space_parents').where('tenant_id', '=', tenantId).where('parent_id', '=', parentId).execute()
}

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
  return await listPage(base, qb => qb.select(MEMBER_COLUMNS), MEMBER_KEYS, window)
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
  return await listPage(base, qb => qb.select(MANAGER_COLUMNS), MANAGER_KEYS, window)
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
  return await listPage(base, qb => qb.select(CONTACT_LINK_COLUMNS), CONTACT_LINK_KEYS, window)
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

/* Activity */

export interface ActivityInput {
  tenantId: string
  spaceId: number
  type: SpaceActivityType
  resourceId: string | number
  title: string
  message: string
  actorId: string | null
}

/**
 * Appends one item to a space's activity, in the caller's transaction. Other modules may call it
 * (for example when an event linked to the space is published).
 *
 * @example
 *   await recordSpaceActivity(trx, { tenantId, spaceId, type: 'event', resourceId: event.id, title: event.title,
 * message: 'Event published', actorId })
 */
export async function recordSpaceActivity (trx: Tx, a: ActivityInput): Promise<void> {
  await trx.insertInto('space_activity').values({
    tenant_id: a.tenantId,
    space_id: a.spaceId,
    type: a.type,
    resource_id: String(a.resourceId),
    title: a.title.slice(0, 500),
    message: a.message.slice(0, 2000),
    actor_id: a.actorId
  }).execute()
}

/* Public directory (not tenant-owned) */

export async function registerPublic (trx: Tx, tenantId: string, spaceId: number, handle: string): Promise<void> {
  await trx.insertInto('public_spaces').values({ handle, space_id: spaceId, tenant_id: tenantId })
    .onConflict(oc => oc.column('space_id').doUpdateSet({ handle, tenant_id: tenantId }))
    .execute()
}

export async function unregisterPublic (trx: Tx, tenantId: string, spaceId: number): Promise<void> {
  await trx.deleteFrom('public_spaces').where('tenant_id', '=', tenantId).where('space_id', '=', spaceId).execute()
}

export async function resolvePublic (trx: Tx, ref: { id: number } | { handle: string }) {
  return await trx.selectFrom('public_spaces').select(['tenant_id', 'space_id'])
    .$if('id' in ref, qb => qb.where('space_id', '=', 'id' in ref ? ref.id : 0))
    .$if('handle' in ref, qb => qb.where('handle', '=', 'handle' in ref ? ref.handle : ''))
    .executeTakeFirst()
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
    .set({ user_id: userId, status: 'active', accepted_at: sql`now()`, invite_token_hash: null, updated_at: sql`now()` })
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

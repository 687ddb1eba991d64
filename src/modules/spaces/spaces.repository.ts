/**
 * SQL of spaces themselves: a space's row and its draft, the list and the tree of the visible spaces, the hierarchy
 * (parent links), the activity a space records and the public directory of handles. The people of a space
 * (members, managers and their invites, linked contacts) are spaces.people.repository.ts. Every function takes the
 * request's transaction first and names the tenant.
 */
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { deleteRows, rowExists } from '../../platform/db/match.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { spaceVisibleTo } from './spaces.access.repository.ts'
import type { SPACE_SORT_FIELDS } from './spaces.schemas.ts'
import type { SpaceActivityType, SpaceDraft } from './spaces.table.ts'
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
const parentIds = (eb: ExpressionBuilder<Database, 'spaces'>, tenantId: string) => {
  const parents = sql`select json_agg(p.parent_id order by p.parent_id) from space_parents p`
  const live = sql`join spaces ps on ps.tenant_id = p.tenant_id and ps.id = p.parent_id and not ps.is_deleted`
  const ofTenant = sql`p.tenant_id = ${tenantId} and ps.tenant_id = ${tenantId}`
  const ofRow = sql`p.tenant_id = ${eb.ref('spaces.tenant_id')} and p.space_id = ${eb.ref('spaces.id')}`
  return sql<number[]>`coalesce((${parents} ${live} where ${ofTenant} and ${ofRow}), '[]'::json)`.as('parent_ids')
}

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

/** Locks a space that is not deleted (for an invitee, who may not see it yet); false when there is none. */
export async function lockLive (trx: Tx, tenantId: string, id: number): Promise<boolean> {
  return await rowExists(trx, 'spaces', { tenant_id: tenantId, id, is_deleted: false }, { lock: true })
}

/** Gives a space its handle in the public directory (kept once given). */
export async function setPublicHandle (trx: Tx, tenantId: string, id: number, handle: string): Promise<void> {
  await trx.updateTable('spaces').set({ public_handle: handle }).where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

/** A non-deleted space of the tenant regardless of the caller (for rules that check parents). */
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
  cancel_in_feeds?: boolean
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
  const page = await listPage(trx, base, qb => spaceColumns(qb, auth.tenantId), keys, window)
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

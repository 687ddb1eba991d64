/**
 * Every statement of the SCIM module. Users are the identity module's `users` rows (read here, written only through
 * identity's `applyUserChange`) with SCIM's own `scim_users` beside them; groups and members are SCIM's own. Removed
 * users are not SCIM resources: every read leaves them out.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { Condition, GroupAttribute, UserAttribute } from './scim.filter.ts'
import { groupRole, type GroupSource, type MemberSource, type UserSource } from './scim.resources.ts'
import type { ScimRole } from './scim.table.ts'

type UsersEb = ExpressionBuilder<Database & { u: Database['users'], s: Database['scim_users'] }, 'u' | 's'>

const USER_COLUMNS = [
  'u.id', 'u.username', 'u.email', 'u.display_name', 'u.first_name', 'u.last_name', 'u.state', 'u.created_at',
  's.external_id'
] as const

function usersBase (trx: Tx, tenantId: string) {
  return trx.selectFrom('users as u')
    .leftJoin('scim_users as s', join => join.onRef('s.tenant_id', '=', 'u.tenant_id').onRef('s.user_id', '=', 'u.id'))
    .where('u.tenant_id', '=', tenantId)
    .where('u.state', '<>', 'removed')
}

/** The userName of a row is its username, else its e-mail address, else its id (compared case-insensitively). */
function userNameIs (eb: UsersEb, value: string): Expression<SqlBool> {
  const lowered = value.toLowerCase()
  return eb.or([
    eb(eb.fn('lower', ['u.username']), '=', lowered),
    eb.and([eb('u.username', 'is', null), eb(eb.fn('lower', ['u.email']), '=', lowered)]),
    eb.and([eb('u.username', 'is', null), eb('u.email', 'is', null), eb('u.id', '=', value)])
  ])
}

function userCondition (eb: UsersEb, c: Condition<UserAttribute>): Expression<SqlBool> {
  const v = c.value
  switch (c.attribute) {
    case 'id': return eb('u.id', '=', String(v))
    case 'userName': return userNameIs(eb, String(v))
    case 'externalId': return eb('s.external_id', '=', String(v))
    case 'displayName': return eb(eb.fn('lower', ['u.display_name']), '=', String(v).toLowerCase())
    case 'emails': return eb(eb.fn('lower', ['u.email']), '=', String(v).toLowerCase())
    case 'active': return v === true ? eb('u.state', '=', 'active') : eb('u.state', '<>', 'active')
  }
}

const userSource = (row: Omit<UserSource, 'updated_at'> & { updated_at: Date }): UserSource => row

/** A page of the tenant's users matching every condition, in creation order, and how many match. */
export async function listUsers (
  trx: Tx, tenantId: string, conditions: Array<Condition<UserAttribute>>, offset: number, limit: number
): Promise<{ rows: UserSource[], total: number }> {
  const base = usersBase(trx, tenantId).where(eb => eb.and(conditions.map(c => userCondition(eb, c))))
  const total = await base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  const rows = limit === 0
    ? []
    : await base.select([...USER_COLUMNS, sql<Date>`greatest(u.updated_at, s.updated_at)`.as('updated_at')])
      .orderBy('u.created_at').orderBy('u.id').offset(offset).limit(limit).execute()
  return { rows: rows.map(userSource), total: Number(total.n) }
}

/** One user of the tenant (not removed). */
export async function findUser (trx: Tx, tenantId: string, userId: string): Promise<UserSource | undefined> {
  const row = await usersBase(trx, tenantId).where('u.id', '=', userId)
    .select([...USER_COLUMNS, sql<Date>`greatest(u.updated_at, s.updated_at)`.as('updated_at')])
    .executeTakeFirst()
  return row === undefined ? undefined : userSource(row)
}

/**
 * Serializes the SCIM writes of one tenant that check a unique value (a userName, a group's displayName) until the
 * transaction ends: the check and the write of two requests naming the same value cannot interleave.
 */
export async function lockNames (trx: Tx, tenantId: string, kind: 'user' | 'group', name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`scim:${kind}:${tenantId}`}), hashtext(${name.toLowerCase()}))`
    .execute(trx)
}

/** Whether another user of the tenant (not removed) has this userName. */
export async function userNameTaken (trx: Tx, tenantId: string, userName: string, except: string | null) {
  let q = usersBase(trx, tenantId).where(eb => userNameIs(eb, userName))
  if (except !== null) q = q.where('u.id', '<>', except)
  return (await q.select('u.id').limit(1).executeTakeFirst()) !== undefined
}

/** Sets a user's externalId (one row per user SCIM wrote). */
export async function saveExternalId (trx: Tx, tenantId: string, userId: string, externalId: string | null) {
  await trx.insertInto('scim_users')
    .values({ tenant_id: tenantId, user_id: userId, external_id: externalId, updated_at: sql<Date>`now()` })
    .onConflict(oc => oc.columns(['tenant_id', 'user_id']).doUpdateSet(eb => ({
      external_id: eb.ref('excluded.external_id'),
      updated_at: eb.ref('excluded.updated_at')
    })))
    .execute()
}

/** Ends a user's group memberships (a removed user); the groups they were in. */
export async function leaveAllGroups (trx: Tx, tenantId: string, userId: string): Promise<number[]> {
  const rows = await trx.deleteFrom('scim_group_members')
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId)
    .returning('group_id').execute()
  const groups = rows.map(r => r.group_id)
  if (groups.length > 0) await bumpGroups(trx, tenantId, groups)
  return groups
}

/** Of these ids, the tenant's users that exist and are not removed. */
export async function existingUsers (trx: Tx, tenantId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await trx.selectFrom('users').select('id')
    .where('tenant_id', '=', tenantId).where('state', '<>', 'removed')
    .where(sql<SqlBool>`id = any(${[...ids]}::text[])`)
    .execute()
  return new Set(rows.map(r => r.id))
}

// ---- groups ----

const GROUP_COLUMNS = [
  'g.id', 'g.display_name', 'g.external_id', 'g.role', 'g.revision', 'g.created_at', 'g.updated_at'
] as const

type GroupsEb = ExpressionBuilder<Database & { g: Database['scim_groups'] }, 'g'>

function groupCondition (eb: GroupsEb, c: Condition<GroupAttribute>): Expression<SqlBool> {
  const v = String(c.value)
  switch (c.attribute) {
    case 'id': return /^\d{1,15}$/.test(v) ? eb('g.id', '=', Number(v)) : sql<SqlBool>`false`
    case 'displayName': return eb(eb.fn('lower', ['g.display_name']), '=', v.toLowerCase())
    case 'externalId': return eb('g.external_id', '=', v)
    case 'members': return eb.exists(eb.selectFrom('scim_group_members as m').select('m.user_id')
      .whereRef('m.tenant_id', '=', 'g.tenant_id').whereRef('m.group_id', '=', 'g.id').where('m.user_id', '=', v))
  }
}

export async function listGroups (
  trx: Tx, tenantId: string, conditions: Array<Condition<GroupAttribute>>, offset: number, limit: number
): Promise<{ rows: GroupSource[], total: number }> {
  const base = trx.selectFrom('scim_groups as g').where('g.tenant_id', '=', tenantId)
    .where(eb => eb.and(conditions.map(c => groupCondition(eb, c))))
  const total = await base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  const rows = limit === 0
    ? []
    : await base.select(GROUP_COLUMNS).orderBy('g.created_at').orderBy('g.id').offset(offset).limit(limit).execute()
  return { rows, total: Number(total.n) }
}

/** One group. */
export async function findGroup (trx: Tx, tenantId: string, id: number): Promise<GroupSource | undefined> {
  return await trx.selectFrom('scim_groups as g').select(GROUP_COLUMNS)
    .where('g.tenant_id', '=', tenantId).where('g.id', '=', id)
    .executeTakeFirst()
}

/** One group locked for a write (its values, members and revision change under the lock). */
export async function lockGroup (trx: Tx, tenantId: string, id: number): Promise<GroupSource | undefined> {
  return await trx.selectFrom('scim_groups as g').select(GROUP_COLUMNS)
    .where('g.tenant_id', '=', tenantId).where('g.id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

/** The members of groups (not removed users), each with a name to show, by group id. */
export async function membersOf (
  trx: Tx, tenantId: string, groupIds: readonly number[]
): Promise<Map<number, MemberSource[]>> {
  const out = new Map<number, MemberSource[]>(groupIds.map(id => [id, []]))
  if (groupIds.length === 0) return out
  const rows = await trx.selectFrom('scim_group_members as m')
    .innerJoin('users as u', join => join.onRef('u.tenant_id', '=', 'm.tenant_id').onRef('u.id', '=', 'm.user_id'))
    .select(['m.group_id', 'm.user_id',
      sql<string | null>`coalesce(u.display_name, nullif(concat_ws(' ', u.first_name, u.last_name), ''), u.username,
        u.email)`.as('display')])
    .where('m.tenant_id', '=', tenantId)
    .where(sql<SqlBool>`m.group_id = any(${[...groupIds]}::bigint[])`)
    .where('u.state', '<>', 'removed')
    .orderBy('m.group_id').orderBy('m.created_at').orderBy('m.user_id')
    .execute()
  for (const r of rows) out.get(r.group_id)?.push({ user_id: r.user_id, display: r.display })
  return out
}

export async function groupNameTaken (trx: Tx, tenantId: string, name: string, except: number | null) {
  let q = trx.selectFrom('scim_groups').select('id').where('tenant_id', '=', tenantId)
    .where(eb => eb(eb.fn('lower', ['display_name']), '=', name.toLowerCase()))
  if (except !== null) q = q.where('id', '<>', except)
  return (await q.limit(1).executeTakeFirst()) !== undefined
}

export interface GroupWrite { display_name: string, external_id: string | null, role: ScimRole | null }

export async function insertGroup (trx: Tx, tenantId: string, values: GroupWrite): Promise<GroupSource> {
  return await trx.insertInto('scim_groups')
    .values({ tenant_id: tenantId, ...values, updated_at: sql<Date>`now()` })
    .returning(['id', 'display_name', 'external_id', 'role', 'revision', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow()
}

export async function updateGroup (trx: Tx, tenantId: string, id: number, values: GroupWrite): Promise<GroupSource> {
  return await trx.updateTable('scim_groups')
    .set({ ...values, revision: sql<number>`revision + 1`, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returning(['id', 'display_name', 'external_id', 'role', 'revision', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow()
}

async function bumpGroups (trx: Tx, tenantId: string, ids: readonly number[]): Promise<void> {
  await trx.updateTable('scim_groups')
    .set({ revision: sql<number>`revision + 1`, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId).where(sql<SqlBool>`id = any(${[...ids]}::bigint[])`)
    .execute()
}

/** Adds and removes members of a group (the ids given exist). */
export async function changeMembers (
  trx: Tx, tenantId: string, groupId: number, add: readonly string[], remove: readonly string[]
): Promise<void> {
  if (remove.length > 0) {
    await trx.deleteFrom('scim_group_members')
      .where('tenant_id', '=', tenantId).where('group_id', '=', groupId)
      .where(sql<SqlBool>`user_id = any(${[...remove]}::text[])`)
      .execute()
  }
  if (add.length > 0) {
    await trx.insertInto('scim_group_members')
      .values(add.map(userId => ({ tenant_id: tenantId, group_id: groupId, user_id: userId })))
      .onConflict(oc => oc.doNothing())
      .execute()
  }
}

/** The ids of a group's members, removed users included (what a delete or a role change affects). */
export async function memberIds (trx: Tx, tenantId: string, groupId: number): Promise<string[]> {
  const rows = await trx.selectFrom('scim_group_members').select('user_id')
    .where('tenant_id', '=', tenantId).where('group_id', '=', groupId).execute()
  return rows.map(r => r.user_id)
}

export async function deleteGroup (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.deleteFrom('scim_groups').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/**
 * The roles a user holds through their groups (docs/scim.md, "Groups and roles"): each group's own role, else the
 * role its display name names. Read by the user gate of the identity module.
 */
export async function directoryRoles (trx: Tx, tenantId: string, userId: string): Promise<ScimRole[]> {
  const rows = await trx.selectFrom('scim_group_members as m')
    .innerJoin('scim_groups as g', join => join
      .onRef('g.tenant_id', '=', 'm.tenant_id').onRef('g.id', '=', 'm.group_id'))
    .select(['g.role', 'g.display_name'])
    .where('m.tenant_id', '=', tenantId).where('m.user_id', '=', userId)
    .execute()
  return rows.map(groupRole).filter((r): r is ScimRole => r !== null)
}

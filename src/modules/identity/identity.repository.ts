/**
 * All SQL of identity: user profiles, webhook deliveries, and the two functions other modules use,
 * `displayProfiles` (names of users for manager lists and previews) and `revokeUserAccess` (what a
 * removed user loses). Every function takes the transaction first and names the tenant.
 */
import { sql, type SqlBool } from 'kysely'
import { rowExists } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { DeliveryOutcome, UserRow, UserState } from './identity.table.ts'

const USER_COLUMNS = [
  'tenant_id', 'id', 'email', 'display_name', 'first_name', 'last_name', 'username', 'avatar_url', 'state',
  'idp_sequence', 'created_at', 'updated_at', 'removed_at'
] as const

/** The profile columns the provider describes. */
export interface ProfileValues {
  email?: string | null
  display_name?: string | null
  first_name?: string | null
  last_name?: string | null
  username?: string | null
  avatar_url?: string | null
}
export const PROFILE_FIELDS = ['email', 'display_name', 'first_name', 'last_name', 'username', 'avatar_url'] as const

export async function findUser (trx: Tx, tenantId: string, userId: string): Promise<UserRow | undefined> {
  return await trx.selectFrom('users').select(USER_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', userId)
    .executeTakeFirst()
}

/** The state of a user, or undefined for a user the table does not know. */
export async function userState (trx: Tx, tenantId: string, userId: string): Promise<UserState | undefined> {
  const row = await trx.selectFrom('users').select('state')
    .where('tenant_id', '=', tenantId).where('id', '=', userId)
    .executeTakeFirst()
  return row?.state
}

/**
 * Records the organization and roles a user's token carries, when they differ from the ones recorded and the token
 * was issued no earlier than the one recorded (`tokenTime`: its `iat`, else its `exp`, unix seconds): an older token
 * still within its lifetime does not bring back claims a newer one replaced. One upsert; nothing written otherwise.
 */
export async function recordClaims (
  trx: Tx,
  c: {
    tenantId: string,
    userId: string,
    orgId: string | null,
    roles: readonly string[],
    tokenTime: number,
    verifiedEmail: string | null
  }
): Promise<void> {
  await trx.insertInto('user_claims')
    .values({
      tenant_id: c.tenantId,
      user_id: c.userId,
      org_id: c.orgId,
      roles: sql`${[...c.roles]}::text[]` as never,
      token_time: new Date(c.tokenTime * 1000),
      verified_email: c.verifiedEmail
    })
    .onConflict(oc => oc.columns(['tenant_id', 'user_id']).doUpdateSet(eb => ({
      org_id: eb.ref('excluded.org_id'),
      roles: eb.ref('excluded.roles'),
      seen_at: eb.ref('excluded.seen_at'),
      token_time: eb.ref('excluded.token_time'),
      verified_email: eb.ref('excluded.verified_email')
    })).where(sql<boolean>`(user_claims.org_id, user_claims.roles, user_claims.verified_email)
      is distinct from (excluded.org_id, excluded.roles, excluded.verified_email)
      and (user_claims.token_time is null or excluded.token_time >= user_claims.token_time)`))
    .execute()
}

/** The organization and roles a user's token last carried, if any was seen. */
export async function latestClaims (trx: Tx, tenantId: string, userId: string) {
  return await trx.selectFrom('user_claims').select(['org_id', 'roles'])
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId)
    .executeTakeFirst()
}

/**
 * Serializes every change of one user (webhook deliveries, resync) until the transaction ends,
 * including the first one, when there is no row to lock yet.
 */
export async function lockUser (trx: Tx, tenantId: string, userId: string): Promise<void> {
  // two 32-bit keys (tenant, user); text may not contain NUL, so no joined key
  await sql`select pg_advisory_xact_lock(hashtext(${`users:${tenantId}`}), hashtext(${userId}))`.execute(trx)
}

export interface UserWrite extends ProfileValues {
  state: UserState
  idp_sequence: number | null
}

/**
 * Inserts the user or overwrites the given columns; `removed_at` follows the state. The update
 * takes its times from the inserted row (`excluded`, which carries now()): Citus refuses a
 * function such as now() in `ON CONFLICT DO UPDATE SET` on a distributed table.
 */
export async function saveUser (trx: Tx, tenantId: string, userId: string, values: UserWrite): Promise<UserRow> {
  const removed = values.state === 'removed'
  return await trx
    .insertInto('users')
    .values({
      ...values,
      tenant_id: tenantId,
      id: userId,
      removed_at: removed ? sql<Date>`now()` : null,
      updated_at: sql<Date>`now()`
    })
    .onConflict(oc =>
      oc.columns(['tenant_id', 'id']).doUpdateSet(eb => ({
        ...values,
        removed_at: removed ? sql<Date>`coalesce(users.removed_at, excluded.removed_at)` : null,
        updated_at: eb.ref('excluded.updated_at')
      }))
    )
    .returning(USER_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function deliverySeen (
  trx: Tx,
  tenantId: string,
  instanceId: string,
  aggregateId: string,
  sequence: number
): Promise<boolean> {
  return await rowExists(trx, 'idp_deliveries', {
    tenant_id: tenantId,
    instance_id: instanceId,
    aggregate_id: aggregateId,
    sequence
  })
}

/** Records a delivery; false when it was recorded before (a concurrent duplicate). */
export async function recordDelivery (
  trx: Tx,
  d: {
    tenantId: string
    instanceId: string
    aggregateId: string
    sequence: number
    eventType: string
    outcome: DeliveryOutcome
  }
): Promise<boolean> {
  const row = await trx
    .insertInto('idp_deliveries')
    .values({
      tenant_id: d.tenantId,
      instance_id: d.instanceId,
      aggregate_id: d.aggregateId,
      sequence: d.sequence,
      event_type: d.eventType,
      outcome: d.outcome
    })
    .onConflict(oc => oc.doNothing())
    .returning('sequence')
    .executeTakeFirst()
  return row !== undefined
}

/** Users of a tenant that are not removed, for the resync's `--remove-missing`. */
export async function listLiveUserIds (trx: Tx, tenantId: string): Promise<string[]> {
  const rows = await trx.selectFrom('users').select('id')
    .where('tenant_id', '=', tenantId).where('state', '<>', 'removed')
    .orderBy('id')
    .execute()
  return rows.map(r => r.id)
}

export interface RevokedAccess {
  space_managers: number
  event_managers: number
  /** space memberships ended (`space_members.is_active` false, `removed_at` set) */
  space_members: number
}

/**
 * Revokes everything a removed user held as a manager: active roles (by user id) and pending
 * invites (by e-mail, case-insensitive), in `space_managers` and `event_managers` (events and
 * series managers); and ends their active space memberships (`space_members`, by user id) as the
 * spaces module ends one (`is_active` false, `removed_at` now: member history keeps the row). A
 * module that adds another manager or membership table adds its statement here, so the removal
 * stays one place and one transaction.
 *
 * @example
 *   const revoked = await revokeUserAccess(trx, tenantId, userId, user.email)
 */
export async function revokeUserAccess (
  trx: Tx,
  tenantId: string,
  userId: string,
  email: string | null
): Promise<RevokedAccess> {
  const lowered = email !== null && email.trim() !== '' ? email.trim().toLowerCase() : undefined
  // the manager tables share these columns
  const held =
    lowered !== undefined
      ? sql<SqlBool>`(user_id = ${userId} or lower(invited_email) = ${lowered})`
      : sql<SqlBool>`user_id = ${userId}`
  const revoke = async (table: 'space_managers' | 'event_managers') => await trx
    .updateTable(table)
    .set({ status: 'revoked', updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('status', '<>', 'revoked')
    .where(held)
    .executeTakeFirst()
  const spaces = await revoke('space_managers')
  const events = await revoke('event_managers')
  const members = await trx
    .updateTable('space_members')
    .set({ is_active: false, removed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('is_active', '=', true)
    .executeTakeFirst()
  return {
    space_managers: Number(spaces.numUpdatedRows),
    event_managers: Number(events.numUpdatedRows),
    space_members: Number(members.numUpdatedRows)
  }
}

/** The name fields and avatar of a user of the tenant (no e-mail), or undefined for a token-only user. */
export async function findProfile (trx: Tx, tenantId: string, userId: string) {
  return await trx.selectFrom('users').select(['display_name', 'first_name', 'last_name', 'username', 'avatar_url'])
    .where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst()
}

export interface DisplayProfile {
  user_id: string
  /**
   * never empty: display name, else first and last name, else the e-mail's local part, else the username, else the id
   */
  display_name: string
  /** one or two upper-case letters */
  initials: string
  avatar_url: string | null
  /** whether the users table knows this user (false: a token-only user, shown by id) */
  known: boolean
  state: UserState | null
}

const first = (s: string): string => Array.from(s.trim())[0] ?? ''

function initialsOf (row: Pick<UserRow, 'first_name' | 'last_name'>, name: string): string {
  const f = first(row.first_name ?? '')
  const l = first(row.last_name ?? '')
  if (f !== '' || l !== '') return (f + l).toUpperCase()
  const words = name.split(/[\s._\-@]+/).filter(w => /\p{L}|\p{N}/u.test(w))
  const letters = words.length >= 2 ? first(words[0] ?? '') + first(words[1] ?? '') : first(words[0] ?? name)
  return letters.toUpperCase()
}

/** The name of a user as shown to others, with the fallbacks of `DisplayProfile.display_name`. */
export function displayNameOf (
  row: Pick<UserRow, 'id' | 'display_name' | 'first_name' | 'last_name' | 'email' | 'username'>
): string {
  const nonEmpty = (s: string | null | undefined): string | undefined =>
    (s ?? '').trim() === '' ? undefined : (s ?? '').trim()
  return (
    nonEmpty(row.display_name) ??
    nonEmpty(
      [row.first_name, row.last_name]
        .map(s => (s ?? '').trim())
        .filter(Boolean)
        .join(' ')
    ) ??
    nonEmpty(row.email?.split('@')[0]) ??
    nonEmpty(row.username) ??
    row.id
  )
}

/**
 * Display names, initials and avatars of users, for manager lists and public-page previews: one
 * entry per requested id (unknown ids too, named by their id), in a map keyed by user id. No
 * e-mail is returned, so the result may be shown to anyone who may see the list.
 *
 * @example
 *   const profiles = await displayProfiles(trx, auth.tenantId, managers.map(m => m.user_id))
 *   profiles.get(userId)?.display_name
 */
export async function displayProfiles (
  trx: Tx,
  tenantId: string,
  userIds: readonly string[]
): Promise<Map<string, DisplayProfile>> {
  const ids = [...new Set(userIds)]
  const out = new Map<string, DisplayProfile>()
  if (ids.length === 0) return out
  const rows = await trx
    .selectFrom('users')
    .select(['id', 'email', 'display_name', 'first_name', 'last_name', 'username', 'avatar_url', 'state'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute()
  const byId = new Map(rows.map(r => [r.id, r]))
  for (const id of ids) {
    const row = byId.get(id)
    if (row === undefined) {
      out.set(id, {
        user_id: id,
        display_name: id,
        initials: initialsOf({ first_name: null, last_name: null }, id),
        avatar_url: null,
        known: false,
        state: null
      })
      continue
    }
    const name = displayNameOf(row)
    out.set(id, {
      user_id: id,
      display_name: name,
      initials: initialsOf(row, name),
      avatar_url: row.avatar_url,
      known: true,
      state: row.state
    })
  }
  return out
}

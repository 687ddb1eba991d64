/**
 * SQL of the api-keys module: service accounts and their keys in the caller's tenant, and the bearer lookup of a key
 * by its lookup id in every tenant (`findKeysByPrefix`, run on the system login). Tables: migrations/0044_api_keys.sql.
 * Times are parameters computed once per request (`at`), so each statement reads the same instant.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { creationOrder, listScope, pageWindow } from '../../platform/http/cursor.ts'
import type { KeysetPageQuery } from '../../platform/http/schema.ts'
import type { ApiKeyRow, ServiceAccountRole, ServiceAccountRow } from './api-keys.table.ts'

const KEYS = creationOrder('desc')

export const ACCOUNT_COLUMNS = [
  'id', 'name', 'role', 'scopes', 'created_by', 'created_at', 'updated_at', 'disabled_at'
] as const
export type AccountView = Pick<ServiceAccountRow, typeof ACCOUNT_COLUMNS[number]>

/** Every column of a key but its tenant and its hash. */
export const KEY_COLUMNS = [
  'id', 'service_account_id', 'prefix', 'created_by', 'created_at', 'expires_at', 'revoked_at', 'last_used_at',
  'last_used_address', 'rotated_from', 'replaced_by'
] as const
export type KeyView = Pick<ApiKeyRow, typeof KEY_COLUMNS[number]>

const textArray = (values: readonly string[] | null) => values === null ? null : sql<string[]>`${values}::text[]`

export interface NewAccount {
  name: string
  role: ServiceAccountRole
  scopes: readonly string[] | null
  created_by: string
}

export async function insertAccount (trx: Tx, tenantId: string, a: NewAccount, at: Date): Promise<AccountView> {
  return await trx.insertInto('service_accounts')
    .values({
      tenant_id: tenantId,
      name: a.name,
      role: a.role,
      scopes: textArray(a.scopes),
      created_by: a.created_by,
      created_at: at,
      updated_at: at
    })
    .returning(ACCOUNT_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** The tenant's service accounts (not deleted), newest first. */
export async function listAccounts (trx: Tx, tenantId: string, q: KeysetPageQuery) {
  const window = pageWindow(q, listScope('service-accounts', {}), KEYS)
  const base = trx.selectFrom('service_accounts').where('tenant_id', '=', tenantId).where('deleted_at', 'is', null)
  return await listPage(trx, base, qb => qb.select(ACCOUNT_COLUMNS), KEYS, window)
}

export async function findAccount (trx: Tx, tenantId: string, id: number): Promise<AccountView | undefined> {
  return await trx.selectFrom('service_accounts').select(ACCOUNT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('deleted_at', 'is', null)
    .executeTakeFirst()
}

/** A service account's role, scopes and state, deleted or not (`accountNow`). */
export async function accountState (trx: Tx, tenantId: string, id: number) {
  return await trx.selectFrom('service_accounts').select(['role', 'scopes', 'disabled_at', 'deleted_at'])
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .executeTakeFirst()
}

/** A service account (not deleted) locked for a change of it or of its keys. */
export async function lockAccount (trx: Tx, tenantId: string, id: number): Promise<AccountView | undefined> {
  return await trx.selectFrom('service_accounts').select(ACCOUNT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('deleted_at', 'is', null)
    .forUpdate()
    .executeTakeFirst()
}

export interface AccountChange {
  name?: string
  role?: ServiceAccountRole
  scopes?: readonly string[] | null
  disabled_at?: Date | null
}

export async function updateAccount (
  trx: Tx, tenantId: string, id: number, change: AccountChange, at: Date
): Promise<AccountView> {
  const { scopes, ...rest } = change
  return await trx.updateTable('service_accounts')
    .set({ ...rest, ...(scopes !== undefined ? { scopes: textArray(scopes) } : {}), updated_at: at })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returning(ACCOUNT_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** Marks a service account deleted (gone from the API; the row stays for the audit trail). */
export async function deleteAccount (trx: Tx, tenantId: string, id: number, at: Date): Promise<void> {
  await trx.updateTable('service_accounts').set({ deleted_at: at, updated_at: at })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

/** Revokes every key of an account not revoked yet; their ids and lookup ids. */
export async function revokeAccountKeys (trx: Tx, tenantId: string, accountId: number, at: Date) {
  return await trx.updateTable('api_keys').set({ revoked_at: at })
    .where('tenant_id', '=', tenantId).where('service_account_id', '=', accountId).where('revoked_at', 'is', null)
    .returning(['id', 'prefix'])
    .execute()
}

export interface NewKey {
  service_account_id: number
  prefix: string
  secret_hash: string
  created_by: string
  expires_at: Date
  rotated_from: number | null
}

export async function insertKey (trx: Tx, tenantId: string, k: NewKey, at: Date): Promise<KeyView> {
  return await trx.insertInto('api_keys')
    .values({ tenant_id: tenantId, ...k, created_at: at })
    .returning(KEY_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** The keys of an account that are accepted at `at` (neither revoked nor expired). */
export async function countLiveKeys (trx: Tx, tenantId: string, accountId: number, at: Date): Promise<number> {
  const row = await trx.selectFrom('api_keys')
    .select(eb => eb.fn.countAll<string>().as('n'))
    .where('tenant_id', '=', tenantId).where('service_account_id', '=', accountId)
    .where('revoked_at', 'is', null).where('expires_at', '>', at)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The keys of an account, newest first (never their hashes). */
export async function listKeys (trx: Tx, tenantId: string, accountId: number, q: KeysetPageQuery) {
  const window = pageWindow(q, listScope('api-keys', { accountId }), KEYS)
  const base = trx.selectFrom('api_keys').where('tenant_id', '=', tenantId).where('service_account_id', '=', accountId)
  return await listPage(trx, base, qb => qb.select(KEY_COLUMNS), KEYS, window)
}

/** A key of an account, locked for its rotation or revocation. */
export async function lockKey (
  trx: Tx, tenantId: string, accountId: number, id: number
): Promise<KeyView | undefined> {
  return await trx.selectFrom('api_keys').select(KEY_COLUMNS)
    .where('tenant_id', '=', tenantId).where('service_account_id', '=', accountId).where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

export async function revokeKey (trx: Tx, tenantId: string, id: number, at: Date): Promise<void> {
  await trx.updateTable('api_keys').set({ revoked_at: at })
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('revoked_at', 'is', null)
    .execute()
}

/** The old key of a rotation: replaced by `newId`, accepted until `expiresAt`. */
export async function markRotated (
  trx: Tx, tenantId: string, id: number, newId: number, expiresAt: Date
): Promise<void> {
  await trx.updateTable('api_keys').set({ replaced_by: newId, expires_at: expiresAt })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

/** What the bearer check needs of a key and its account. */
export interface KeyForAuth {
  tenant_id: string
  id: number
  service_account_id: number
  prefix: string
  secret_hash: string
  expires_at: Date
  revoked_at: Date | null
  replaced_by: number | null
  last_used_at: Date | null
  role: ServiceAccountRole
  scopes: string[] | null
  disabled_at: Date | null
  deleted_at: Date | null
}

/**
 * The keys with this lookup id, in any tenant, with their accounts: run on the system login (withSystem). Almost
 * always one row; the caller compares each hash.
 */
export async function findKeysByPrefix (trx: Tx, prefix: string): Promise<KeyForAuth[]> {
  return await trx.selectFrom('api_keys as k')
    .innerJoin('service_accounts as a', join => join
      .onRef('a.tenant_id', '=', 'k.tenant_id').onRef('a.id', '=', 'k.service_account_id'))
    .select([
      'k.tenant_id', 'k.id', 'k.service_account_id', 'k.prefix', 'k.secret_hash', 'k.expires_at', 'k.revoked_at',
      'k.replaced_by', 'k.last_used_at', 'a.role', 'a.scopes', 'a.disabled_at', 'a.deleted_at'
    ])
    .where('k.prefix', '=', prefix)
    .limit(10)
    .execute()
}

/**
 * Records a use of a key: at most once a minute per key, whichever process writes (a key used all the time costs one
 * write a minute, not one per request); false when a recent use was already recorded.
 */
export async function touchKey (trx: Tx, tenantId: string, id: number, address: string, at: Date): Promise<boolean> {
  const minuteAgo = new Date(at.getTime() - 60_000)
  const rows = await trx.updateTable('api_keys').set({ last_used_at: at, last_used_address: address })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .where(eb => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', minuteAgo)]))
    .returning('id')
    .execute()
  return rows.length > 0
}

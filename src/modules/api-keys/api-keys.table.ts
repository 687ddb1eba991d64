/**
 * The tables of the api-keys module (migrations/0044_api_keys.sql): service accounts and their keys. Only the
 * SHA-256 of a key is stored.
 */
import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export type ServiceAccountRole = 'admin' | 'member' | 'viewer'

export interface ServiceAccountsTable {
  tenant_id: string
  id: Generated<number>
  name: string
  role: ServiceAccountRole
  /** the permissions (and `scim`) the keys may use, within the role's; null: every permission of the role */
  scopes: string[] | null
  created_by: string
  created_at: Timestamp
  updated_at: Timestamp
  disabled_at: Timestamp | null
  deleted_at: Timestamp | null
}

export interface ApiKeysTable {
  tenant_id: string
  id: Generated<number>
  service_account_id: number
  /** the lookup id: `cbk_` and the first 12 random characters of the key */
  prefix: string
  /** SHA-256 (hex) of the whole key */
  secret_hash: string
  created_by: string
  created_at: Timestamp
  expires_at: Timestamp
  revoked_at: Timestamp | null
  last_used_at: Timestamp | null
  last_used_address: string | null
  rotated_from: number | null
  replaced_by: number | null
}

export type ServiceAccountRow = Selectable<ServiceAccountsTable>
export type ApiKeyRow = Selectable<ApiKeysTable>

export interface ApiKeysTables {
  service_accounts: ServiceAccountsTable
  api_keys: ApiKeysTable
}
